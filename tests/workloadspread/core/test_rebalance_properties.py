"""Properties of rebalancing over any subsets, statuses, pods, budgets and evictions in flight:
moves go up into room, never exceed the limits, and the request is handled only when nothing
could move."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesemantics.pod_status import has_ready_condition
from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.model import from_object
from spreadbus.features.workloadspread.core.rebalance import (
    REQUEST_ANNOTATION,
    Budget,
    rebalance,
    unavailable_limit,
)
from tests.workloadspread.core.builders import JSON, deployment, pod, subset, workloadspread

WEB = deployment(replicas=8)
NAMES = ("a", "b", "c")


@st.composite
def cases(draw: st.DrawFn) -> dict[str, Any]:
    count = draw(st.integers(1, 3))
    names = NAMES[:count]
    statuses = []
    for name in names:
        missing = draw(st.integers(-1, 3))
        entry: JSON = {"name": name, "replicas": 0, "missingReplicas": missing}
        if draw(st.booleans()) and draw(st.booleans()):
            entry["conditions"] = [{"type": "Schedulable", "status": "False",
                                    "lastTransitionTime": "2026-01-01T00:00:00Z"}]
        statuses.append(entry)
    obj = workloadspread(*(subset(n) for n in names),
                         status={"observedGeneration": 1, "subsetStatuses": statuses})
    obj["metadata"]["annotations"] = {REQUEST_ANNOTATION: "r"}
    fresh_statuses = [dict(s, missingReplicas=draw(st.integers(-1, 3))
                           if draw(st.booleans()) else s["missingReplicas"]) for s in statuses]
    fresh = from_object({**obj, "status": {"observedGeneration": 1,
                                           "subsetStatuses": fresh_statuses}}).status
    members = []
    for i in range(draw(st.integers(0, 8))):
        where = draw(st.sampled_from([*names, None]))
        members.append(pod(f"p{i}", owner=WEB, ws="ws" if where else None,
                           subset_name=where, ready=draw(st.booleans()),
                           labels={"app": "web"}))
    keys = [pod_state.key(p) for p in members]
    return {
        "ws": from_object(obj), "fresh": fresh, "pods": members,
        "replicas": draw(st.integers(len(members), len(members) + 2)),
        "max_unavailable": draw(st.sampled_from([1, 2, "25%", "50%", "100%"])),
        "budgets": [Budget(kind="PodDisruptionBudget", name=f"b{i}", allowed=a)
                    for i, a in enumerate(draw(st.lists(st.integers(-1, 4), max_size=2)))],
        "in_flight": set(draw(st.lists(st.sampled_from(keys), max_size=2))) if keys else set(),
    }


def run(case: dict[str, Any]) -> Any:
    return rebalance(case["ws"], status=case["fresh"], pods=case["pods"],
                     replicas=case["replicas"], max_unavailable=case["max_unavailable"],
                     budgets=case["budgets"], in_flight=case["in_flight"])


def rank(case: dict[str, Any], subset_name: str) -> int:
    names = [s.name for s in case["ws"].subsets]
    return names.index(subset_name) if subset_name in names else len(names)


def room(case: dict[str, Any], name: str) -> int | None:
    """The room both statuses give an open subset (None: unlimited); 0 when closed."""
    seen = next(s for s in case["ws"].status.subset_statuses if s.name == name)
    fresh = next(s for s in case["fresh"].subset_statuses if s.name == name)
    if seen.unschedulable or fresh.unschedulable:
        return 0
    values = [s.missing_replicas for s in (seen, fresh) if s.missing_replicas != -1]
    return min(values) if values else None


@settings(max_examples=300)
@given(cases())
def test_moves_go_up_into_room_within_every_limit(case: dict[str, Any]) -> None:
    outcome = run(case)
    ready = {pod_state.key(p) for p in case["pods"] if has_ready_condition(p)}
    leaving = len(ready & case["in_flight"])
    unavailable = max(0, case["replicas"] - len(ready)) + leaving
    limit = unavailable_limit(case["max_unavailable"], case["replicas"]) - unavailable
    for budget in case["budgets"]:
        limit = min(limit, budget.allowed - leaving)
    assert len(outcome.evictions) <= max(0, limit)
    assert not {m.pod for m in outcome.evictions} & case["in_flight"]
    assert len({m.pod for m in outcome.evictions}) == len(outcome.evictions)
    into: dict[str, int] = {}
    for move in outcome.evictions:
        assert rank(case, move.destination) < rank(case, move.source)
        into[move.destination] = into.get(move.destination, 0) + 1
    for name, count in into.items():
        free = room(case, name)
        assert free is None or count <= free


@settings(max_examples=300)
@given(cases())
def test_handled_only_when_no_pod_could_move_up(case: dict[str, Any]) -> None:
    outcome = run(case)
    if outcome.handled is None:
        return
    assert outcome.handled == "r"
    assert outcome.evictions == ()
    names = [s.name for s in case["ws"].subsets]
    for member in case["pods"]:
        match = pod_state.matched(member)
        here = rank(case, match.subset) if match is not None else len(names)
        assert all(room(case, n) == 0 for n in names[:here])
