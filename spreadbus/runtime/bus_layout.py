"""What the bus holds for the services: every stream and bucket, and which of them each needs.

``spreadbus bus-setup`` creates and updates all of it with the ``setup`` user's credential
(:mod:`spreadbus.runtime.bus_setup`); no service may. A service only checks, before it starts
its work, that what it needs exists (:mod:`spreadbus.runtime.bus_presence`), so the two must
agree on the names, and both read them here:

- the core streams (:mod:`events.streams`, ``HISTORY`` with the installation's limits);
- the planner's lease bucket (``spreadbus-leases``; its TTL is the lease duration) and snapshot
  object store (``--snapshot-bucket``);
- with ``--shards N`` (N > 1), the stream ``KUBE_SHARDS_<N>`` the planner shards read instead of
  ``KUBE`` (:mod:`events.shards`);
- the key-value buckets the features declare (``Feature.buckets``).

A key-value bucket ``b`` is the stream ``KV_b`` and an object store ``o`` the stream ``OBJ_o``,
which is how a service checks for them and how permissions name them.

Signatures::

    BusLayout(streams, buckets, object_stores)
    bus_layout(buckets: Sequence[BucketSpec], *, history_max_age: float, history_max_bytes: int,
               lease_ttl_seconds: float = LEASE_TTL_SECONDS,
               snapshot_bucket: str = SNAPSHOT_BUCKET, shards: int = 1) -> BusLayout
    service_needs(service: str, accesses: Sequence[Mapping[str, BusAccess]], *,
                  snapshot_bucket: str = SNAPSHOT_BUCKET, shards: int = 1
                  ) -> tuple[str, ...]   # stream names
    kv_stream(bucket: str) -> str ; object_stream(bucket: str) -> str
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from events import shards as shard_streams
from events import streams
from events.streams import DomainSource, StreamSpec
from spreadbus.engine.bus_access import BucketSpec, BusAccess

LEASE_BUCKET: Final = "spreadbus-leases"
LEASE_TTL_SECONDS: Final = 6.0
"""The planner's ``--lease-ttl-seconds`` default; the bucket's TTL is what every replica uses."""
SNAPSHOT_BUCKET: Final = "spreadbus-snapshots"
CORE_STREAMS: Final = tuple(s.name for s in streams.ALL)


def kv_stream(bucket: str) -> str:
    return f"KV_{bucket}"


def object_stream(bucket: str) -> str:
    return f"OBJ_{bucket}"


@dataclass(frozen=True)
class BusLayout:
    streams: tuple[StreamSpec, ...]
    buckets: tuple[BucketSpec, ...]
    object_stores: tuple[str, ...]
    bucket_sources: Mapping[str, tuple[DomainSource, ...]] = field(default_factory=dict)
    """Bucket -> the buckets of other domains it copies (a hub's, from its members')."""

    def names(self) -> tuple[str, ...]:
        """Every stream name of the layout, buckets and object stores included."""
        return (*(s.name for s in self.streams), *(kv_stream(b.name) for b in self.buckets),
                *(object_stream(o) for o in self.object_stores))


def bus_layout(
    buckets: Sequence[BucketSpec],
    *,
    history_max_age: float,
    history_max_bytes: int,
    lease_ttl_seconds: float = LEASE_TTL_SECONDS,
    snapshot_bucket: str = SNAPSHOT_BUCKET,
    shards: int = 1,
) -> BusLayout:
    """Everything the services and the features' buckets need, each once."""
    lease = BucketSpec(name=LEASE_BUCKET, description="the planner's leadership lease",
                       history=1, ttl_seconds=lease_ttl_seconds)
    unique = {b.name: b for b in (lease, *buckets)}
    core = streams.with_history(history_max_age, history_max_bytes)
    sharded = (shard_streams.shard_stream(shards),) if shards > 1 else ()
    return BusLayout(streams=(*core, *sharded), buckets=tuple(unique.values()),
                     object_stores=(snapshot_bucket,))


def service_needs(
    service: str,
    accesses: Sequence[Mapping[str, BusAccess]],
    *,
    snapshot_bucket: str = SNAPSHOT_BUCKET,
    shards: int = 1,
) -> tuple[str, ...]:
    """The streams (buckets as their streams) ``service`` cannot work without.

    Every core stream, since each service reads or writes one and the setup step creates them
    together; the streams and buckets its features' parts read or write; the planner's lease
    and snapshots, and a sharded planner's stream of observations.
    """
    needs = list(CORE_STREAMS)
    for access in (a[service] for a in accesses if service in a):
        needs += access.reads
        needs += (kv_stream(b) for b in access.buckets)
    if service == "planner":
        needs += (kv_stream(LEASE_BUCKET), object_stream(snapshot_bucket))
        if shards > 1:
            needs.append(shard_streams.stream_name(shards))
    return tuple(dict.fromkeys(needs))
