"""Planner snapshots: both folds and their stream positions in one deterministic msgpack blob.

A snapshot is ``{"schema": N, "kube": KubeState, "decisions": DecisionState}`` encoded with sorted
map keys, so equal states give equal bytes (the determinism check of the test suite compares
them). :func:`load` returns ``None`` for anything it cannot trust (corrupt bytes, a schema version
this code does not write), and the planner then replays from the start of the streams.
"""

from __future__ import annotations

from typing import Final

import msgspec

from spreadbus.projection.decision_log import DecisionState
from spreadbus.projection.kube_state import KubeState

SNAPSHOT_SCHEMA: Final = 1


class Snapshot(msgspec.Struct, kw_only=True):
    schema: int
    kube: KubeState
    decisions: DecisionState


_ENCODER: Final = msgspec.msgpack.Encoder(order="deterministic")
_DECODER: Final = msgspec.msgpack.Decoder(Snapshot)


def dump(kube: KubeState, decisions: DecisionState) -> bytes:
    return _ENCODER.encode(Snapshot(schema=SNAPSHOT_SCHEMA, kube=kube, decisions=decisions))


def load(data: bytes) -> Snapshot | None:
    try:
        snapshot = _DECODER.decode(data)
    except msgspec.DecodeError:
        return None
    if snapshot.schema != SNAPSHOT_SCHEMA:
        return None
    return snapshot
