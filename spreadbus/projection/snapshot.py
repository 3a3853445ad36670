"""Planner snapshots: both folds, their stream positions and when they were taken, in one blob.

A snapshot is ``{"schema": N, "taken_at": T, "kube": KubeState, "decisions": DecisionState}``
encoded as msgpack with sorted map keys, so equal states taken at the same time give equal bytes
(the determinism check of the test suite compares them). :func:`load` returns ``None`` for
anything it cannot trust (corrupt bytes, a schema version this code does not write), and the
planner then replays from the start of the streams.

``taken_at`` (Unix seconds, read by the caller from its clock: this module reads none) lets the
planner judge whether the snapshot is still safe to tail from: ``KUBE`` keeps a deletion only
for its tombstone TTL (:data:`events.streams.TOMBSTONE_TTL_SECONDS`), so a snapshot older than
that may hold objects whose deletion is no longer in the stream. Schema 1 had no time; such a
snapshot cannot be judged and is not loaded.
"""

from __future__ import annotations

from typing import Final

import msgspec

from spreadbus.projection.decision_log import DecisionState
from spreadbus.projection.kube_state import KubeState

SNAPSHOT_SCHEMA: Final = 2


class Snapshot(msgspec.Struct, kw_only=True):
    schema: int
    taken_at: float
    kube: KubeState
    decisions: DecisionState


_ENCODER: Final = msgspec.msgpack.Encoder(order="deterministic")
_DECODER: Final = msgspec.msgpack.Decoder(Snapshot)


def dump(kube: KubeState, decisions: DecisionState, *, taken_at: float) -> bytes:
    return _ENCODER.encode(
        Snapshot(schema=SNAPSHOT_SCHEMA, taken_at=taken_at, kube=kube, decisions=decisions)
    )


def load(data: bytes | bytearray | memoryview) -> Snapshot | None:
    try:
        snapshot = _DECODER.decode(data)  # schema 1 fails here: it has no ``taken_at``
    except msgspec.DecodeError:
        return None
    if snapshot.schema != SNAPSHOT_SCHEMA:
        return None
    return snapshot
