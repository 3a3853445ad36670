"""KUBE keeps only each subject's latest message; folding what is left equals folding everything.

This is the argument behind the stream's retention, checked on the pure fold: a consumer that
replays the retained messages from the start, with or without the deletions' tombstones (they
expire), builds the same objects and sync markers as one that saw every message; a snapshot
plus the retained tail after it does too, as long as the tombstones after it are still there.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from events import codec
from events.messages import Observation
from spreadbus.projection import snapshot
from spreadbus.projection.decision_log import DecisionLog
from spreadbus.projection.kube_state import KubeProjection, KubeState
from tests.backbone.log_builders import Entry, random_log


def retained(log: list[Entry], *, tombstones: bool = True) -> list[Entry]:
    """What a stream with ``max_msgs_per_subject=1`` holds, optionally after tombstones expired."""
    latest = {subject: (seq, subject, data) for seq, subject, data in log}
    kept = sorted(latest.values())
    if tombstones:
        return kept
    return [entry for entry in kept if not _is_deletion(entry[2])]


def _is_deletion(data: bytes) -> bool:
    event = codec.decode(data)
    return isinstance(event, Observation) and event.event == "DELETED"


def fold(entries: list[Entry], projection: KubeProjection | None = None) -> KubeState:
    projection = projection or KubeProjection()
    for entry in entries:
        projection.apply(*entry)
    return projection.state


def live(state: KubeState) -> tuple[object, object]:
    return ({rkey: bucket for rkey, bucket in state.objects.items() if bucket}, state.sync)


@given(st.integers(min_value=0, max_value=10_000), st.booleans())
@settings(max_examples=40, deadline=None)
def test_replaying_the_retained_messages_builds_the_same_objects(
    seed: int, tombstones_left: bool
) -> None:
    log = random_log(seed)
    kept = retained(log, tombstones=tombstones_left)
    assert len(kept) < len(log)  # the retention did drop history
    assert live(fold(kept)) == live(fold(log))


@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=1, max_value=399))
@settings(max_examples=40, deadline=None)
def test_a_snapshot_plus_the_retained_tail_builds_the_same_objects(seed: int, cut: int) -> None:
    log = random_log(seed)
    head = snapshot.load(snapshot.dump(fold(log[:cut]), DecisionLog().state, taken_at=0.0))
    assert head is not None
    tail = [entry for entry in retained(log) if entry[0] > cut]
    assert live(fold(tail, KubeProjection(head.kube))) == live(fold(log))
