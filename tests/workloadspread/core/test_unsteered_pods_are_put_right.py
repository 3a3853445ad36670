"""Pods admitted while no webhook steered them are put where the webhook would have put them.

The pod webhook fails open: a pod created while it is down lands anywhere, and the planner later
matches it to a subset by its node. Such a pod (created after its WorkloadSpread) is marked
unsteered; repair moves it up to a subset with room, or out of a subset beyond its maxReplicas,
within the same limits as a rebalance. Steered pods and pods made before the WorkloadSpread stay.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from spreadbus.features.workloadspread.core.existing_pods import matched_pod
from spreadbus.features.workloadspread.core.model import (
    UNSTEERED_ANNOTATION,
    WorkloadSpread,
    from_object,
)
from spreadbus.features.workloadspread.core.rebalance import is_unsteered, rebalance
from tests.workloadspread.core.builders import JSON, deployment, pod, subset, workloadspread

WEB = deployment(replicas=6)
APP = {"app": "web"}
BORN = "2026-01-01T00:00:00Z"


def spread(fixed: int, elastic: int, *, fixed_max: int = 4,
           elastic_max: int | None = None) -> WorkloadSpread:
    missing_fixed = max(0, fixed_max - fixed)
    missing_elastic = -1 if elastic_max is None else max(0, elastic_max - elastic)
    observed = {"observedGeneration": 1, "subsetStatuses": [
        {"name": "fixed", "replicas": fixed, "missingReplicas": missing_fixed},
        {"name": "elastic", "replicas": elastic, "missingReplicas": missing_elastic}]}
    obj = workloadspread(subset("fixed", fixed_max), subset("elastic", elastic_max),
                         status=observed)
    obj["metadata"]["creationTimestamp"] = BORN
    return from_object(obj)


def member(name: str, where: str, *, unsteered: bool = False, second: int = 1) -> JSON:
    made = pod(name, owner=WEB, ws="ws", subset_name=where, labels=APP,
               created=f"2026-01-01T00:01:{second:02d}Z")
    if unsteered:
        made["metadata"]["annotations"][UNSTEERED_ANNOTATION] = "true"
    return made


def repair(ws: WorkloadSpread, members: list[JSON], **kwargs: Any) -> Any:
    kwargs.setdefault("replicas", len(members))
    kwargs.setdefault("max_unavailable", "100%")
    return rebalance(ws, status=ws.status, pods=members, repair=True, **kwargs)


def test_only_unsteered_pods_move_up_to_a_subset_with_room() -> None:
    ws = spread(fixed=2, elastic=4)
    members = [member("f0", "fixed"), member("f1", "fixed"),
               member("e0", "elastic"), member("e1", "elastic"),
               member("u0", "elastic", unsteered=True), member("u1", "elastic", unsteered=True),
               ]
    outcome = repair(ws, members)
    assert sorted((m.pod, m.source, m.destination) for m in outcome.evictions) == [
        ("default/u0", "elastic", "fixed"), ("default/u1", "elastic", "fixed")]
    assert all(m.reason.startswith("repair of an unsteered pod") for m in outcome.evictions)
    assert outcome.handled is None, "repair writes no handled annotation"
    assert rebalance(ws, status=ws.status, pods=members, replicas=6).evictions == ()


def test_an_unsteered_pod_leaves_a_subset_beyond_its_max_replicas() -> None:
    ws = spread(fixed=5, elastic=1)
    members = [*(member(f"f{i}", "fixed") for i in range(4)),
               member("u0", "fixed", unsteered=True), member("e0", "elastic")]
    outcome = repair(ws, members)
    assert [(m.pod, m.source, m.destination) for m in outcome.evictions] == [
        ("default/u0", "fixed", "elastic")]


def test_steered_pods_beyond_max_replicas_stay_where_the_webhook_put_them() -> None:
    ws = spread(fixed=5, elastic=1)
    members = [*(member(f"f{i}", "fixed") for i in range(5)), member("e0", "elastic")]
    assert repair(ws, members).evictions == ()


def test_repair_moves_within_the_unavailable_limit() -> None:
    ws = spread(fixed=0, elastic=4)
    members = [member(f"u{i}", "elastic", unsteered=True, second=i) for i in range(4)]
    outcome = repair(ws, members, max_unavailable=1)
    assert len(outcome.evictions) == 1
    assert outcome.movable == 4
    assert outcome.waiting_for == "the unavailable limit"


def test_a_pod_matched_by_the_planner_is_marked_only_if_made_after_its_spread() -> None:
    """A pod of the WorkloadSpread's own second counts as made after it: timestamps have
    second resolution, and a workload applied with its spread makes its pods in that second."""
    ws = spread(fixed=0, elastic=0)
    fixed = ws.subsets[0]
    before = pod("old", owner=WEB, labels=APP, created="2025-12-31T23:59:59Z")
    after = pod("new", owner=WEB, labels=APP, created="2026-01-01T00:00:01Z")
    same = pod("same", owner=WEB, labels=APP, created=BORN)
    for made, marked in ((before, False), (after, True), (same, True)):
        patch, updated = matched_pod(ws, made, fixed)
        annotations = patch["metadata"]["annotations"]
        assert (UNSTEERED_ANNOTATION in annotations) == marked, made["metadata"]["name"]
        assert is_unsteered(ws, updated) == marked


def test_pods_of_the_spreads_own_second_matched_into_a_full_subset_are_moved_out() -> None:
    ws = spread(fixed=6, elastic=0)
    fixed = ws.subsets[0]
    steered = [member(f"f{i}", "fixed") for i in range(4)]
    matched = [matched_pod(ws, pod(f"u{i}", owner=WEB, labels=APP, created=BORN), fixed)[1]
               for i in range(2)]
    outcome = repair(ws, [*steered, *matched])
    assert sorted((m.pod, m.source, m.destination) for m in outcome.evictions) == [
        ("default/u0", "fixed", "elastic"), ("default/u1", "fixed", "elastic")]


@given(fixed=st.integers(0, 6), steered=st.integers(0, 6), unsteered=st.integers(0, 6),
       fixed_max=st.integers(1, 6), limit=st.integers(1, 6))
def test_repair_never_moves_a_steered_pod_nor_more_than_the_limit(
        fixed: int, steered: int, unsteered: int, fixed_max: int, limit: int) -> None:
    ws = spread(fixed=fixed, elastic=steered + unsteered, fixed_max=fixed_max)
    members = [*(member(f"f{i}", "fixed") for i in range(fixed)),
               *(member(f"e{i}", "elastic") for i in range(steered)),
               *(member(f"u{i}", "elastic", unsteered=True) for i in range(unsteered))]
    if not members:
        return
    outcome = repair(ws, members, max_unavailable=limit)
    moved = [m.pod for m in outcome.evictions]
    assert all(p.startswith("default/u") for p in moved)
    assert len(moved) <= min(limit, unsteered, max(0, fixed_max - fixed))
    if unsteered and fixed < fixed_max:
        assert moved, "an unsteered pod below a subset with room moves"
