"""Each bus user's NATS permissions, derived from what the services and features declare.

A service connects as a user of its own (``watcher``, ``planner``, ``actuator``, ``webhook``,
``audit``), an outside subscriber as ``reader``, and the setup step (``spreadbus bus-setup``) as
``setup``. The server allows each only what it does:

- only ``setup`` configures the bus: it creates, updates, purges, seals and deletes streams and
  buckets, lists consumers and may remove any (all of ``$JS.API``), and publishes no event. No
  other user may create, update, purge or delete a stream or a bucket, or delete a message;
  services check at start-up that what they need exists (:mod:`spreadbus.runtime.bus_presence`).
  The one exception is the planner's filtered purge of its own snapshot object store, which is
  how the object store drops the chunks of a snapshot it replaced;
- every user reads replies on an inbox of its own (``_INBOX_<user>.>``, :func:`inbox_prefix`);
- the watcher publishes observations, sync markers, pod lifecycle points and status changes
  (``history.>``) and reads ``KUBE``; the planner publishes plans, reads ``KUBE``, ``PLANS`` and
  ``OUTCOMES`` and writes its lease bucket and snapshots (planner shards, ``shards`` > 1, read
  ``KUBE_SHARDS_<N>`` instead of ``KUBE``: :mod:`events.shards`); the actuator pulls ``PLANS``
  through its durable consumer only and publishes outcomes; the webhook reads ``KUBE``; ``audit``
  (``spreadbus audit follow``) reads ``HISTORY``; each feature adds, per service, its own
  subjects and buckets (:class:`BusAccess`);
- the reader subscribes to every message subject under the first token of each subject anyone
  publishes on (``kube.>``, ``plan.>``, ``webhook.>``, ...; :func:`message_roots`) and reads every
  stream and bucket, through consumers of its own, and publishes nothing else. It never
  subscribes to ``>``, the JetStream API (``$JS.>``, whose subjects name every consumer) or
  another user's inbox.

Consumers. A user reading a stream creates consumers of its own: the JetStream API names the
consumer in the request subject (``$JS.API.CONSUMER.CREATE.<stream>.<name>[.<filter>]``,
``MSG.NEXT.<stream>.<name>``, ``DELETE.<stream>.<name>``, ``$JS.ACK.<stream>.<name>.>``), so the
server's subject permissions decide per consumer name. NATS matches permissions by whole subject
tokens (``*`` stands for one whole token, never a prefix such as ``reader-*``), and a consumer
name is one token, so a name prefix per user cannot be enforced. Instead:

- a service's durable consumer has a fixed name (the actuator's is :func:`actuator_consumer` of
  each cluster the installation runs, ``clusters``), which its user alone is allowed, and which
  is denied by name to every other user, for every verb (create or update, info, delete, pull,
  ack, flow control);
- every other consumer is created under a name its creator draws with 128 random bits
  (:mod:`spreadbus.runtime.consumer_names`); no user but ``setup`` may list consumers, so no one
  else can learn the name, and a consumer that cannot be named cannot be read, acknowledged,
  changed or deleted;
- the unnamed creation subject (``$JS.API.CONSUMER.CREATE.<stream>``) is allowed to no one: the
  server treats a request on it whose body names an existing consumer as an update of that
  consumer, whatever the subject permissions say about the name.

Why not an account per user with the streams exported to it: the JetStream API of an exporting
account is again addressed by subject tokens, so a consumer created through an import is still
one token away from everyone else's; mirroring the streams into each reader's account instead
would store every stream again per account. Fixed, denied names for the one consumer others
know of, and unguessable names for the rest, close the same holes on one account.

``PLANS``, ``OUTCOMES`` and ``HISTORY`` are protected from deletes and purges by these
permissions alone: their stream configuration does not set ``deny_delete``/``deny_purge``,
which the server never lets anyone lift again, so the setup user could no longer empty a stream
an operator must reset; the setup credential can delete a whole stream anyway, so the flags
would not stop its thief.

:func:`permissions` spells one user out; :func:`server_users` renders them all as the nats-server
``authorization`` block.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from events import shards as shard_streams
from events import streams, subjects
from spreadbus.engine.bus_access import BusAccess
from spreadbus.runtime.bus_layout import (
    CORE_STREAMS,
    LEASE_BUCKET,
    SNAPSHOT_BUCKET,
    kv_stream,
    object_stream,
)

SERVICES: Final = ("watcher", "planner", "actuator", "webhook", "audit")
READER: Final = "reader"
SETUP: Final = "setup"
USERS: Final = (*SERVICES, READER, SETUP)
DEFAULT_CLUSTERS: Final = ("default",)
"""The cluster deploy/ names (``SPREADBUS_CLUSTER``), so its actuator's consumer is protected."""

_API: Final = "$JS.API"

_OWN: Final[Mapping[str, BusAccess]] = {
    "watcher": BusAccess(publish=(f"{subjects.OBSERVATIONS}.>", f"{subjects.SYNC}.>",
                                  f"{subjects.HISTORY}.>"),
                         reads=(streams.KUBE.name,)),
    "planner": BusAccess(publish=(f"{subjects.PLANS}.>",),
                         reads=(streams.KUBE.name, streams.PLANS.name, streams.OUTCOMES.name),
                         buckets=(LEASE_BUCKET,)),
    "actuator": BusAccess(publish=(f"{subjects.OUTCOMES}.>",)),
    "webhook": BusAccess(reads=(streams.KUBE.name,)),
    "audit": BusAccess(reads=(streams.HISTORY.name,)),
}


def own_access(service: str) -> BusAccess:
    """What a service does on the bus itself, before its features add theirs."""
    return _OWN[service]


def inbox_prefix(user: str) -> str:
    """The inbox a user's replies arrive on; no other user may subscribe to it."""
    return f"_INBOX_{user}"


def actuator_consumer(cluster: str) -> str:
    """The name of the actuator's durable consumer of ``cluster``'s plans on ``PLANS``."""
    return f"actuator-{subjects.escape(cluster)}"


def durable_consumers(clusters: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
    """User -> the (stream, name) of each durable consumer it owns."""
    return {"actuator": [(streams.PLANS.name, actuator_consumer(c)) for c in clusters]}


def consumer_use(stream: str, consumer: str) -> list[str]:
    """Every subject that reads, acknowledges on, creates or changes, or deletes one consumer."""
    return [
        f"{_API}.CONSUMER.CREATE.{stream}.{consumer}",
        f"{_API}.CONSUMER.CREATE.{stream}.{consumer}.>",
        f"{_API}.CONSUMER.DURABLE.CREATE.{stream}.{consumer}",
        f"{_API}.CONSUMER.INFO.{stream}.{consumer}",
        f"{_API}.CONSUMER.DELETE.{stream}.{consumer}",
        f"{_API}.CONSUMER.MSG.NEXT.{stream}.{consumer}",
        f"$JS.ACK.{stream}.{consumer}.>",
        f"$JS.FC.{stream}.{consumer}.>",
    ]


def stream_reading(stream: str) -> list[str]:
    """The subjects a client publishes to read a stream through named consumers of its own
    (created, pulled, acknowledged on and deleted by name) and direct gets."""
    return [
        f"{_API}.STREAM.INFO.{stream}",
        f"{_API}.CONSUMER.CREATE.{stream}.*",
        f"{_API}.CONSUMER.CREATE.{stream}.*.>",
        f"{_API}.CONSUMER.INFO.{stream}.*",
        f"{_API}.CONSUMER.DELETE.{stream}.*",
        f"{_API}.CONSUMER.MSG.NEXT.{stream}.*",
        f"{_API}.DIRECT.GET.{stream}",
        f"{_API}.DIRECT.GET.{stream}.>",
        f"{_API}.STREAM.MSG.GET.{stream}",
        f"$JS.ACK.{stream}.*.>",
        f"$JS.FC.{stream}.*.>",
    ]


def _owned_use(stream: str, consumer: str) -> list[str]:
    """What the owner of a durable consumer does with it: everything but deleting it."""
    return [f"{_API}.STREAM.INFO.{stream}",
            *(s for s in consumer_use(stream, consumer) if ".DELETE." not in s)]


def permissions(user: str, features: Sequence[Mapping[str, BusAccess]], *,
                snapshot_bucket: str = SNAPSHOT_BUCKET,
                clusters: Sequence[str] = DEFAULT_CLUSTERS, shards: int = 1,
                members: Sequence[str] = ()) -> dict[str, Any]:
    """nats-server permissions of one user:
    ``{"publish": {"allow", "deny"}, "subscribe": {"allow"}}``. The actuator consumers of
    ``members`` (clusters whose agents have users of their own,
    :mod:`spreadbus.runtime.member_permissions`) are denied to every hub user."""
    if user == SETUP:
        return {"publish": {"allow": [f"{_API}.>"]},
                "subscribe": {"allow": [f"{inbox_prefix(SETUP)}.>"]}}
    if user == READER:
        publish, subscribe = _reader(features)
    elif user in SERVICES:
        publish, subscribe = _service(user, features, snapshot_bucket, clusters, shards)
    else:
        raise ValueError(f"no bus user {user!r}; the users are {', '.join(USERS)}")
    deny = [subject for owner, held in durable_consumers(clusters).items() if owner != user
            for stream, name in held for subject in consumer_use(stream, name)]
    deny += [subject for _, held in durable_consumers(members).items()
             for stream, name in held for subject in consumer_use(stream, name)]
    result: dict[str, Any] = {"publish": {"allow": _unique(publish)},
                              "subscribe": {"allow": _unique(subscribe)}}
    if deny:
        result["publish"]["deny"] = _unique(deny)
    return result


def _service(user: str, features: Sequence[Mapping[str, BusAccess]], snapshot_bucket: str,
             clusters: Sequence[str], shards: int = 1) -> tuple[list[str], list[str]]:
    own = _OWN[user]
    if user == "planner" and shards > 1:
        # Its shards read the partitioned copy, never KUBE itself.
        own = BusAccess(publish=own.publish, buckets=own.buckets,
                        reads=tuple(shard_streams.stream_name(shards) if s == streams.KUBE.name
                                    else s for s in own.reads))
    accesses = [own, *(f[user] for f in features if user in f)]
    publish: list[str] = [f"{_API}.INFO", f"{_API}.STREAM.NAMES"]
    # Every service checks at start-up that the core streams exist.
    publish += [f"{_API}.STREAM.INFO.{stream}" for stream in CORE_STREAMS]
    subscribe = [f"{inbox_prefix(user)}.>"]
    for access in accesses:
        publish += access.publish
        subscribe += access.subscribe
        for stream in access.reads:
            publish += stream_reading(stream)
        for bucket in access.buckets:
            publish += [f"$KV.{bucket}.>", *stream_reading(kv_stream(bucket))]
    for stream, name in durable_consumers(clusters).get(user, []):
        publish += _owned_use(stream, name)
    if user == "planner":
        objects = object_stream(snapshot_bucket)
        publish += [f"$O.{snapshot_bucket}.>", *stream_reading(objects),
                    f"{_API}.STREAM.PURGE.{objects}"]
    return publish, subscribe


def _reader(features: Sequence[Mapping[str, BusAccess]]) -> tuple[list[str], list[str]]:
    read = [*CORE_STREAMS,
            *(s for f in features for a in f.values() for s in a.reads),
            *(kv_stream(b) for f in features for a in f.values() for b in a.buckets)]
    publish = [f"{_API}.INFO", f"{_API}.STREAM.NAMES"]
    for stream in _unique(read):
        publish += stream_reading(stream)
    published = [*(subject for spec in streams.ALL for subject in spec.subjects),
                 *(s for access in _OWN.values() for s in access.publish),
                 *(s for f in features for a in f.values() for s in a.publish)]
    subscribe = [f"{inbox_prefix(READER)}.>", *message_roots(published),
                 *(f"$KV.{b}.>" for f in features for a in f.values() for b in a.buckets)]
    return publish, subscribe


def message_roots(published: Iterable[str]) -> list[str]:
    """What the reader subscribes to for these message subjects: each one's first token with
    ``.>`` (``kube.obs.>`` and ``kube.sync.>`` give ``kube.>``), so the usual wildcards work.

    Never the JetStream API (``$...``, whose subjects name every user's consumers) nor an inbox
    (``_INBOX...``, another user's replies), nor a subject whose first token is a wildcard,
    which would take those in too; a subject of one token is kept as it is."""
    roots = []
    for subject in published:
        first, _, rest = subject.partition(".")
        if first.startswith(("$", "_INBOX")) or first in ("*", ">"):
            continue
        roots.append(f"{first}.>" if rest else subject)
    return _unique(roots)


def server_users(public_keys: Mapping[str, str], features: Sequence[Mapping[str, BusAccess]],
                 *, snapshot_bucket: str = SNAPSHOT_BUCKET,
                 clusters: Sequence[str] = DEFAULT_CLUSTERS, shards: int = 1,
                 members: Sequence[str] = (), extra_users: Sequence[Mapping[str, Any]] = ()) -> str:
    """The nats-server ``authorization`` block for these users (user -> nkey public key), and
    ``extra_users`` as given (members' users)."""
    users: list[Mapping[str, Any]] = [
        {"nkey": key, "permissions": permissions(user, features, snapshot_bucket=snapshot_bucket,
                                                 clusters=clusters, shards=shards,
                                                 members=members)}
        for user, key in public_keys.items()]
    users += extra_users
    return "authorization: " + json.dumps({"users": users}, indent=2) + "\n"


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
