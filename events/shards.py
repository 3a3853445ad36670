"""The observations split by namespace for N planner shards, by the server's own partition function.

A planner shard holds only the objects of its namespaces. Which namespaces those are is decided
by NATS, not by spreadbus: the stream ``KUBE_SHARDS_<N>`` sources ``KUBE`` and rewrites every
observation subject on the way in with the subject-transform function ``partition(N, 4)`` (the
namespace token), which inserts the partition number as a token::

    kube.obs.<cluster>.<group>.<resource>.<namespace>.<name>
        -> kube-shards-<N>.<partition>.<cluster>.<group>.<resource>.<namespace>.<name>
    kube.sync.<cluster>.<group>.<resource>            (unchanged: every shard needs every marker)

Why a sourced stream per shard count rather than a transform on ``KUBE`` itself or a mapping in
the server's account: ``KUBE``'s subjects are the contract every other reader relies on (the
webhook, the watcher, outside subscribers), and a transform there or an account mapping would
change them and fix one shard count for all; a sourced stream leaves ``KUBE`` as it is, and two
shard counts (during a change from 2 to 4 shards) are two streams side by side. The copy keeps
``KUBE``'s retention (latest message per subject, the tombstones' TTL, which the server honours on
sourced messages), so a shard replaying its stream from the start sees every live object of its
namespaces, as a planner replaying ``KUBE`` does. Its sequences are its own: a sharded planner's
positions and its plans' ``causes`` count in ``KUBE_SHARDS_<N>``.

The rewritten subject has the seven tokens of an observation subject, with cluster, group,
resource, namespace and name at the same places, so the projection folds it unchanged.

A shard reads its partition, the cluster-scoped objects (namespace token ``_``, which all fall in
the partition of ``_``: Nodes, WorkloadRebalancers, ...) and every sync marker, through one
consumer with non-overlapping filters (:func:`shard_filters`). The partition is the server's:
FNV-1a (32 bits) of the token's bytes, modulo N; :func:`partition` computes the same number, so a
rule can tell which namespaces are its own (a WorkloadRebalancer naming workloads elsewhere), and
tests hold the two equal on a real server.

Signatures::

    Shards(count: int, index: int)   # .owns(namespace) -> bool, .name
    partition(token: str, count: int) -> int
    stream_name(count: int) -> str ; subject_prefix(count: int) -> str
    shard_stream(count: int) -> StreamSpec
    shard_filters(cluster_token: str, shards: Shards) -> list[str]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from events import subjects
from events.streams import KUBE, StreamSpec

_FNV_OFFSET: Final = 0x811C9DC5
_FNV_PRIME: Final = 0x01000193
MAX_SHARDS: Final = 1024
"""More shards than any installation needs; bounds the streams a typo would create."""
CLUSTER_SCOPED: Final = subjects.escape("")
"""The namespace token of a cluster-scoped object."""


def partition(token: str, count: int) -> int:
    """The partition the server's ``partition(count, ...)`` gives one subject token."""
    value = _FNV_OFFSET
    for byte in token.encode("utf-8"):
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return value % count


def stream_name(count: int) -> str:
    return f"{KUBE.name}_SHARDS_{count}"


def subject_prefix(count: int) -> str:
    return f"kube-shards-{count}"


def check_count(count: int) -> None:
    if not 1 <= count <= MAX_SHARDS:
        raise ValueError(f"shards must be between 1 and {MAX_SHARDS}, not {count}")


@dataclass(frozen=True)
class Shards:
    """Shard ``index`` of ``count``; one shard (the default) owns every namespace."""

    count: int = 1
    index: int = 0

    def __post_init__(self) -> None:
        check_count(self.count)
        if not 0 <= self.index < self.count:
            raise ValueError(f"shard must be between 0 and {self.count - 1} (shards is "
                             f"{self.count}), not {self.index}")

    @property
    def sharded(self) -> bool:
        return self.count > 1

    def owns(self, namespace: str) -> bool:
        """Whether this shard decides for ``namespace`` ("" for cluster-scoped objects)."""
        return self.count == 1 or partition(subjects.escape(namespace), self.count) == self.index

    @property
    def name(self) -> str:
        """How leases and snapshots tell shards apart: ``shard-<index>-of-<count>``."""
        return f"shard-{self.index}-of-{self.count}"


ONE: Final = Shards()
"""A planner that is not sharded: it owns every namespace."""


def shard_stream(count: int) -> StreamSpec:
    """``KUBE`` copied with each observation's partition inserted (see the module docstring)."""
    check_count(count)
    observation = f"{subjects.OBSERVATIONS}.*.*.*.*.*"
    wildcards = ".".join(f"{{{{wildcard({i})}}}}" for i in range(1, 6))
    return StreamSpec(
        name=stream_name(count),
        subjects=(),
        discard=KUBE.discard,
        max_age_seconds=KUBE.max_age_seconds,
        max_bytes=KUBE.max_bytes,
        max_msgs_per_subject=KUBE.max_msgs_per_subject,
        allow_msg_ttl=True,
        duplicate_window_seconds=KUBE.duplicate_window_seconds,
        sources=(KUBE.name,),
        source_transforms=(
            (observation,
             f"{subject_prefix(count)}.{{{{partition({count},4)}}}}.{wildcards}"),
            (f"{subjects.SYNC}.>", f"{subjects.SYNC}.>"),
        ),
        description=f"KUBE with each observation's namespace partition of {count} in its subject",
    )


def shard_filters(cluster_token: str, shards: Shards) -> list[str]:
    """What one shard follows of its stream: its partition, the cluster-scoped objects (all in
    the partition of ``_``) and the sync markers; filters that never overlap, as the server
    requires of one consumer's."""
    prefix = subject_prefix(shards.count)
    home = partition(CLUSTER_SCOPED, shards.count)
    wanted = [f"{prefix}.{shards.index}.{cluster_token}.>"]
    if home != shards.index:
        wanted.append(f"{prefix}.{home}.{cluster_token}.*.*.{CLUSTER_SCOPED}.*")
    wanted.append(f"{subjects.SYNC}.{cluster_token}.>")
    return wanted
