"""Each service's NATS permissions, derived from what the services and features declare.

A service connects as a user of its own (``watcher``, ``planner``, ``actuator``, ``webhook``,
``audit``), and an outside subscriber as ``reader``. The server allows each only what it does:

- every service may read and update the configuration of the core streams (each ensures them at
  start-up, :mod:`spreadbus.runtime.stream_setup`) and reads replies on an inbox of its own
  (``_INBOX_<user>.>``, :func:`inbox_prefix`), so no user can read another's replies;
- the watcher publishes observations, sync markers, pod lifecycle points and status changes
  (``history.>``) and reads ``KUBE`` (what it published before); the planner publishes plans,
  reads ``KUBE``, ``PLANS`` and ``OUTCOMES`` and keeps its lease and snapshots in buckets of its
  own; the actuator reads ``PLANS`` through its durable consumer and publishes outcomes; the
  webhook reads ``KUBE``; ``audit`` (``spreadbus audit follow``) reads ``HISTORY`` and
  publishes nothing;
- each feature adds, per service, its own subjects and buckets (:class:`BusAccess`);
- the reader subscribes to every message subject and reads every stream and bucket, but
  publishes nothing except the JetStream API requests that reading needs.

Reading a stream needs JetStream API requests (consumer create, info, delete and next, direct
and message gets) and the acknowledgement and flow-control subjects of that stream; writing a
bucket needs its stream's configuration and its ``$KV``/``$O`` subjects. :func:`permissions`
spells these out; :func:`server_users` renders them as nats-server ``authorization`` users.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from events import streams, subjects
from spreadbus.engine.bus_access import BusAccess

SERVICES: Final = ("watcher", "planner", "actuator", "webhook", "audit")
READER: Final = "reader"
USERS: Final = (*SERVICES, READER)
LEASE_BUCKET: Final = "spreadbus-leases"
SNAPSHOT_BUCKET: Final = "spreadbus-snapshots"
CORE_STREAMS: Final = tuple(s.name for s in streams.ALL)

_OWN: Final[Mapping[str, BusAccess]] = {
    "watcher": BusAccess(publish=(f"{subjects.OBSERVATIONS}.>", f"{subjects.SYNC}.>",
                                  f"{subjects.HISTORY}.>"),
                         reads=(streams.KUBE.name,)),
    "planner": BusAccess(publish=(f"{subjects.PLANS}.>",),
                         reads=(streams.KUBE.name, streams.PLANS.name, streams.OUTCOMES.name),
                         buckets=(LEASE_BUCKET,)),
    "actuator": BusAccess(publish=(f"{subjects.OUTCOMES}.>",), reads=(streams.PLANS.name,)),
    "webhook": BusAccess(reads=(streams.KUBE.name,)),
    "audit": BusAccess(reads=(streams.HISTORY.name,)),
}


def inbox_prefix(user: str) -> str:
    """The inbox a user's replies arrive on; no other user may subscribe to it."""
    return f"_INBOX_{user}"


def stream_reading(stream: str) -> list[str]:
    """The subjects a client publishes to read a stream (JetStream API, acks, flow control)."""
    api = "$JS.API"
    return [
        f"{api}.STREAM.INFO.{stream}",
        f"{api}.CONSUMER.CREATE.{stream}",
        f"{api}.CONSUMER.CREATE.{stream}.>",
        f"{api}.CONSUMER.DURABLE.CREATE.{stream}.>",
        f"{api}.CONSUMER.INFO.{stream}.>",
        f"{api}.CONSUMER.DELETE.{stream}.>",
        f"{api}.CONSUMER.MSG.NEXT.{stream}.>",
        f"{api}.DIRECT.GET.{stream}",
        f"{api}.DIRECT.GET.{stream}.>",
        f"{api}.STREAM.MSG.GET.{stream}",
        f"$JS.ACK.{stream}.>",
        f"$JS.FC.{stream}.>",
    ]


def stream_configuring(stream: str) -> list[str]:
    api = "$JS.API"
    return [f"{api}.STREAM.CREATE.{stream}", f"{api}.STREAM.UPDATE.{stream}",
            f"{api}.STREAM.PURGE.{stream}"]


def kv_stream(bucket: str) -> str:
    return f"KV_{bucket}"


def permissions(user: str, features: Sequence[Mapping[str, BusAccess]], *,
                snapshot_bucket: str = SNAPSHOT_BUCKET) -> dict[str, Any]:
    """nats-server permissions of one user: ``{"publish": {"allow"}, "subscribe": {"allow"}}``."""
    if user == READER:
        return _reader(features)
    if user not in SERVICES:
        raise ValueError(f"no bus user {user!r}; the users are {', '.join(USERS)}")
    accesses = [_OWN[user], *(f[user] for f in features if user in f)]
    publish: list[str] = ["$JS.API.INFO", "$JS.API.STREAM.NAMES"]
    for stream in CORE_STREAMS:
        publish += [f"$JS.API.STREAM.INFO.{stream}", *stream_configuring(stream)[:2]]
    subscribe = [f"{inbox_prefix(user)}.>"]
    for access in accesses:
        publish += access.publish
        subscribe += access.subscribe
        for stream in access.reads:
            publish += stream_reading(stream)
        for bucket in access.buckets:
            publish += [f"$KV.{bucket}.>", *stream_reading(kv_stream(bucket)),
                        *stream_configuring(kv_stream(bucket))]
    if user == "planner":
        objects = f"OBJ_{snapshot_bucket}"
        publish += [f"$O.{snapshot_bucket}.>", *stream_reading(objects),
                    *stream_configuring(objects)]
    return {"publish": {"allow": _unique(publish)}, "subscribe": {"allow": _unique(subscribe)}}


def _reader(features: Sequence[Mapping[str, BusAccess]]) -> dict[str, Any]:
    read = [*CORE_STREAMS,
            *(s for f in features for a in f.values() for s in a.reads),
            *(kv_stream(b) for f in features for a in f.values() for b in a.buckets)]
    publish = ["$JS.API.INFO", "$JS.API.STREAM.NAMES"]
    for stream in _unique(read):
        publish += stream_reading(stream)
    subscribe = [f"{inbox_prefix(READER)}.>",
                 *(subject for spec in streams.ALL for subject in spec.subjects),
                 *(f"$KV.{b}.>" for f in features for a in f.values() for b in a.buckets)]
    return {"publish": {"allow": _unique(publish)}, "subscribe": {"allow": _unique(subscribe)}}


def server_users(public_keys: Mapping[str, str], features: Sequence[Mapping[str, BusAccess]],
                 *, snapshot_bucket: str = SNAPSHOT_BUCKET) -> str:
    """The nats-server ``authorization`` block for these users (user -> nkey public key)."""
    users = [{"nkey": key, "permissions": permissions(user, features,
                                                      snapshot_bucket=snapshot_bucket)}
             for user, key in public_keys.items()]
    return "authorization: " + json.dumps({"users": users}, indent=2) + "\n"


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
