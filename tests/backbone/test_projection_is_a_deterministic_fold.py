"""The planner's projection: same log, same bytes; redeliveries and restarts change nothing."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.projection import snapshot
from spreadbus.projection.decision_log import DecisionLog
from spreadbus.projection.kube_state import KubeProjection
from tests.backbone.log_builders import deployment, observe, random_log, synced


def fold(entries: list[tuple[int, str, bytes]], projection: KubeProjection | None = None
         ) -> KubeProjection:
    projection = projection or KubeProjection()
    for seq, subject, data in entries:
        projection.apply(seq, subject, data)
    return projection


def snap(projection: KubeProjection) -> bytes:
    return snapshot.dump(projection.state, DecisionLog().state, taken_at=0.0)


@given(st.integers(min_value=0, max_value=10_000))
@settings(max_examples=25, deadline=None)
def test_replaying_the_same_log_twice_gives_byte_identical_snapshots(seed: int) -> None:
    log = random_log(seed)
    assert snap(fold(log)) == snap(fold(log))


@given(st.integers(min_value=0, max_value=10_000), st.data())
@settings(max_examples=25, deadline=None)
def test_redelivered_messages_change_nothing(seed: int, data: st.DataObject) -> None:
    log = random_log(seed)
    replayed = [log[i] for i in data.draw(st.lists(st.integers(0, len(log) - 1), max_size=50))]
    # Redeliveries interleaved after their first delivery: each at or below the position.
    noisy: list[tuple[int, str, bytes]] = []
    for entry in log:
        noisy.append(entry)
        noisy.extend(r for r in replayed if r[0] <= entry[0])
    assert snap(fold(noisy)) == snap(fold(log))


@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=1, max_value=399))
@settings(max_examples=25, deadline=None)
def test_a_snapshot_plus_the_tail_equals_a_clean_replay(seed: int, cut: int) -> None:
    log = random_log(seed)
    head = fold(log[:cut])
    restored = snapshot.load(snap(head))
    assert restored is not None
    resumed = fold(log[cut:], KubeProjection(restored.kube))
    assert snap(resumed) == snap(fold(log))


def test_deleted_objects_leave_the_projection() -> None:
    projection = fold([
        (1, *observe(deployment("a", 1, 1), "ADDED")),
        (2, *observe(deployment("b", 1, 2), "ADDED")),
        (3, *observe(deployment("a", 1, 3), "DELETED")),
    ])
    assert set(projection.objects("c1", "apps", "deployments")) == {"default.b"}
    assert projection.get("c1", "apps", "deployments", "default", "b") == deployment("b", 1, 2)


def test_sync_follows_the_latest_marker() -> None:
    projection = fold([(1, *synced(complete=False))])
    assert not projection.synced("c1", "apps", "deployments")
    fold([(2, *synced(complete=True))], projection)
    assert projection.synced("c1", "apps", "deployments")
    fold([(3, *synced(complete=False))], projection)
    assert not projection.synced("c1", "apps", "deployments")


def test_foreign_and_broken_messages_are_counted_and_skipped() -> None:
    subject, _ = observe(deployment("a", 1, 1))
    projection = fold([
        (1, subject, b'{"type": "telemetry"}'),
        (2, subject, b"not json"),
        (3, subject, b'{"type": "observation", "event": "ADDED"}'),
    ])
    assert projection.state.skipped == 3
    assert projection.last_seq == 3
    assert projection.objects("c1", "apps", "deployments") == {}


def test_a_corrupt_or_foreign_snapshot_is_refused() -> None:
    good = snap(fold(random_log(1)))
    assert snapshot.load(good) is not None
    assert snapshot.load(good[: len(good) // 2]) is None
    assert snapshot.load(b"\x00garbage") is None
    newer = good.replace(b"\xa6schema\x02", b"\xa6schema\x09")
    assert newer != good
    assert snapshot.load(newer) is None
