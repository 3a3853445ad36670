"""The bus users of a member cluster's agent, each allowed only that member's part of the bus.

A member runs its own watcher, actuator and webhook (``--cluster <member>``); each connects as
a user of its own, ``<member>-watcher``, ``<member>-actuator`` and ``<member>-webhook``
(:func:`member_users`), with the permissions of the hub's service of that name
(:mod:`spreadbus.runtime.bus_permissions`) narrowed to the member:

- every subject it publishes whose root carries the cluster as its next token is allowed for the
  member's token only: ``kube.obs.<member>.>``, ``kube.sync.<member>.>``,
  ``outcome.<member>.>``, ``admission.<member>.>``, ``history.pod.<member>.>``,
  ``history.status.<member>.>`` and ``budget.spend.<member>.>`` (its webhook's spends on the
  host's budgets); a stolen member credential cannot forge another cluster's observations,
  outcomes, admissions, history or spends;
- its writes to a feature's key-value bucket are allowed under the member's keys only
  (``$KV.<bucket>.<member>.>``: every bucket a member's services write is keyed by cluster
  first); so its watcher puts the member's heartbeat for the cluster registry
  (:mod:`spreadbus.clusterregistry.heartbeat`) and no other cluster's;
- the actuator reads ``PLANS`` only through its own durable consumer (``actuator-<member>``),
  created only by the JetStream API subject that names its filter, ``plan.<member>.>``: the
  server refuses a creation whose configuration filters on anything else, and no other way to
  create, update or read that stream is allowed (no unfiltered or legacy durable creation, no
  direct get, no consumer of its own). So a member reads no other cluster's plans;
- every other cluster's actuator consumer (the hub's and the other members') is denied to it by
  name, as the hub's users are denied each other's.

Subjects the services publish that carry no cluster (a feature's hints between webhook replicas)
and the streams they read (``KUBE``, a bucket's stream) are allowed as to the hub's service: a
member's webhook reads the host's policies, as karmada-agent reads karmada-apiserver.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from events import streams, subjects
from events.buckets import kv_token
from spreadbus.engine.bus_access import BusAccess
from spreadbus.runtime.bus_layout import CORE_STREAMS, kv_stream
from spreadbus.runtime.bus_permissions import (
    actuator_consumer,
    consumer_use,
    durable_consumers,
    inbox_prefix,
    own_access,
    stream_reading,
)

MEMBER_SERVICES: Final = ("watcher", "actuator", "webhook")
_API: Final = "$JS.API"
_CLUSTER_ROOTS: Final = (subjects.OBSERVATIONS, subjects.SYNC, subjects.PLANS,
                         subjects.OUTCOMES, subjects.ADMISSIONS, f"{subjects.HISTORY}.pod",
                         f"{subjects.HISTORY}.status", subjects.BUDGET_SPEND)
"""Subject roots whose next token is the cluster (events.subjects' layout)."""


def member_user(member: str, service: str) -> str:
    return f"{member}-{service}"


def member_users(member: str) -> dict[str, str]:
    """User name -> the service it runs, for one member."""
    return {member_user(member, s): s for s in MEMBER_SERVICES}


def scoped(subject: str, member: str) -> list[str]:
    """``subject`` (as a hub service publishes it) narrowed to the member's own subjects."""
    token = subjects.escape(member)
    if subject == f"{subjects.HISTORY}.>":
        return [f"{subjects.HISTORY}.pod.{token}.>", f"{subjects.HISTORY}.status.{token}.>"]
    for root in _CLUSTER_ROOTS:
        if subject == f"{root}.>":
            return [f"{root}.{token}.>"]
    return [subject]


def plan_filter(member: str) -> str:
    """The filter of the member's actuator consumer: its own plans."""
    return f"{subjects.PLANS}.{subjects.escape(member)}.>"


def _own_plans(member: str) -> list[str]:
    """What the member's actuator does with its consumer, and nothing else on ``PLANS``."""
    stream, name = streams.PLANS.name, actuator_consumer(member)
    return [f"{_API}.STREAM.INFO.{stream}",
            f"{_API}.CONSUMER.CREATE.{stream}.{name}.{plan_filter(member)}",
            f"{_API}.CONSUMER.INFO.{stream}.{name}",
            f"{_API}.CONSUMER.MSG.NEXT.{stream}.{name}",
            f"$JS.ACK.{stream}.{name}.>",
            f"$JS.FC.{stream}.{name}.>"]


def member_permissions(member: str, service: str, features: Sequence[Mapping[str, BusAccess]],
                       *, clusters: Sequence[str]) -> dict[str, Any]:
    """nats-server permissions of the member's user for ``service``; ``clusters`` are every
    cluster whose actuator consumer must be denied to it (the hub's and the other members')."""
    if service not in MEMBER_SERVICES:
        raise ValueError(f"a member runs no {service!r}; it runs {', '.join(MEMBER_SERVICES)}")
    user = member_user(member, service)
    accesses = [own_access(service), *(f[service] for f in features if service in f)]
    publish = [f"{_API}.INFO", f"{_API}.STREAM.NAMES",
               *(f"{_API}.STREAM.INFO.{stream}" for stream in CORE_STREAMS)]
    subscribe = [f"{inbox_prefix(user)}.>"]
    for access in accesses:
        publish += [s for subject in access.publish for s in scoped(subject, member)]
        subscribe += access.subscribe
        for stream in access.reads:
            publish += stream_reading(stream)
        for bucket in access.buckets:
            publish += [f"$KV.{bucket}.{kv_token(member)}.>", *stream_reading(kv_stream(bucket))]
    if service == "actuator":
        publish += _own_plans(member)
    everyone = _unique([*clusters, member])
    deny = [subject for held in durable_consumers(everyone).values() for stream, name in held
            if name != actuator_consumer(member) or service != "actuator"
            for subject in consumer_use(stream, name)]
    return {"publish": {"allow": _unique(publish), "deny": _unique(deny)},
            "subscribe": {"allow": _unique(subscribe)}}


def member_server_users(public_keys: Mapping[str, str], member: str,
                        features: Sequence[Mapping[str, BusAccess]], *,
                        clusters: Sequence[str]) -> list[dict[str, Any]]:
    """The member's users as entries of a nats-server ``authorization.users`` list."""
    services = member_users(member)
    return [{"nkey": key, "permissions": member_permissions(member, services[user], features,
                                                           clusters=clusters)}
            for user, key in public_keys.items()]


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
