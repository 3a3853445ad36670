"""Rebalancing a WorkloadSpread on request: which pods move up, how many at once, and when the
request is handled."""

from __future__ import annotations

from typing import Any

from spreadbus.features.workloadspread.core.model import WorkloadSpread, from_object
from spreadbus.features.workloadspread.core.rebalance import (
    HANDLED_ANNOTATION,
    REQUEST_ANNOTATION,
    Budget,
    budgets_for,
    rebalance,
    unavailable_limit,
)
from tests.workloadspread.core.builders import JSON, deployment, pod, subset, workloadspread

WEB = deployment(replicas=6)


def status(*subsets: tuple[str, int, int], closed: tuple[str, ...] = ()) -> JSON:
    """(name, replicas, missingReplicas) per subset."""
    out = []
    for name, replicas, missing in subsets:
        entry: JSON = {"name": name, "replicas": replicas, "missingReplicas": missing}
        if name in closed:
            entry["conditions"] = [{"type": "Schedulable", "status": "False",
                                    "lastTransitionTime": "2026-01-01T00:00:00Z"}]
        out.append(entry)
    return {"observedGeneration": 1, "subsetStatuses": out}


def spread(observed: JSON, *, request: str | None = "r1", handled: str | None = None,
           fixed_max: int = 4) -> WorkloadSpread:
    obj = workloadspread(subset("fixed", fixed_max), subset("elastic"), status=observed)
    annotations: dict[str, str] = {}
    if request is not None:
        annotations[REQUEST_ANNOTATION] = request
    if handled is not None:
        annotations[HANDLED_ANNOTATION] = handled
    obj["metadata"]["annotations"] = annotations
    return from_object(obj)


def pods(fixed: int, elastic: int, *, unready: int = 0, loose: int = 0) -> list[JSON]:
    app = {"app": "web"}
    out = [pod(f"f{i}", owner=WEB, ws="ws", subset_name="fixed", labels=app)
           for i in range(fixed)]
    out += [pod(f"e{i}", owner=WEB, ws="ws", subset_name="elastic", ready=i >= unready,
                created=f"2026-01-01T00:00:0{i}Z", labels=app) for i in range(elastic)]
    out += [pod(f"n{i}", owner=WEB, labels=app) for i in range(loose)]
    return out


ROOMY = status(("fixed", 1, 3), ("elastic", 5, -1))


def run(ws: WorkloadSpread, members: list[JSON], **kwargs: Any) -> Any:
    kwargs.setdefault("replicas", 6)
    return rebalance(ws, status=kwargs.pop("fresh", ws.status), pods=members, **kwargs)


def test_no_request_or_a_handled_one_moves_nothing() -> None:
    for ws in (spread(ROOMY, request=None), spread(ROOMY, request="r1", handled="r1")):
        outcome = run(ws, pods(1, 5))
        assert outcome.request == ""
        assert outcome.evictions == ()
        assert outcome.handled is None


def test_one_pod_at_a_time_by_default_from_the_lowest_subset() -> None:
    outcome = run(spread(ROOMY), pods(1, 5), max_unavailable="25%")
    # In scale-in order within the subset: the youngest first.
    assert [(m.pod, m.source, m.destination) for m in outcome.evictions] == [
        ("default/e4", "elastic", "fixed")]
    assert outcome.movable == 3
    assert outcome.handled is None
    assert outcome.waiting_for == "the unavailable limit"


def test_never_more_moves_than_the_room_above() -> None:
    outcome = run(spread(ROOMY), pods(1, 5), max_unavailable="100%")
    assert [m.pod for m in outcome.evictions] == ["default/e4", "default/e3", "default/e2"]
    assert outcome.waiting_for == ""


def test_pods_in_no_subset_move_before_those_in_a_lower_one() -> None:
    outcome = run(spread(ROOMY), pods(1, 3, loose=2), max_unavailable=2)
    assert [(m.pod, m.source) for m in outcome.evictions] == [("default/n0", ""),
                                                              ("default/n1", "")]


def test_a_disruption_budget_holds_the_moves_back() -> None:
    budget = Budget(kind="PodDisruptionBudget", name="web-pdb", allowed=0)
    outcome = run(spread(ROOMY), pods(1, 5), max_unavailable="100%", budgets=[budget])
    assert outcome.evictions == ()
    assert outcome.movable == 3
    assert outcome.handled is None
    assert outcome.waiting_for == "PodDisruptionBudget web-pdb"


def test_an_eviction_in_flight_is_unavailable_and_never_sent_twice() -> None:
    outcome = run(spread(ROOMY), pods(1, 5), max_unavailable=2, in_flight={"default/e0"})
    assert [m.pod for m in outcome.evictions] == ["default/e4"]
    budget = Budget(kind="PodUnavailableBudget", name="pub", allowed=1)
    held = run(spread(ROOMY), pods(1, 5), max_unavailable=2, in_flight={"default/e0"},
               budgets=[budget])
    assert held.evictions == ()


def test_unready_replicas_use_up_the_limit() -> None:
    outcome = run(spread(ROOMY), pods(1, 5, unready=1), max_unavailable=1)
    assert outcome.evictions == ()
    assert outcome.movable == 3


def test_handled_once_nothing_can_move() -> None:
    full = status(("fixed", 4, 0), ("elastic", 2, -1))
    outcome = run(spread(full), pods(4, 2))
    assert outcome.evictions == ()
    assert outcome.handled == "r1"


def test_a_subset_closed_by_adaptive_keeps_the_request_open() -> None:
    closed = status(("fixed", 1, 3), ("elastic", 5, -1), closed=("fixed",))
    outcome = run(spread(closed), pods(1, 5))
    assert outcome.evictions == ()
    assert outcome.handled is None


def test_room_the_written_status_does_not_show_yet_keeps_the_request_open() -> None:
    stale = status(("fixed", 2, 0), ("elastic", 4, -1))
    fresh = spread(status(("fixed", 2, 2), ("elastic", 4, -1))).status
    outcome = run(spread(stale, fixed_max=4), pods(2, 4), fresh=fresh)
    assert outcome.evictions == ()
    assert outcome.handled is None


def test_the_unavailable_limit_is_at_least_one() -> None:
    assert unavailable_limit("25%", 3) == 1
    assert unavailable_limit("25%", 8) == 2
    assert unavailable_limit(3, 100) == 3
    assert unavailable_limit("bogus", 8) == 2


def test_budgets_cover_the_workloads_pods_in_its_namespace() -> None:
    members = pods(1, 1)
    pdbs = [
        {"metadata": {"name": "match", "namespace": "default"},
         "spec": {"selector": {"matchLabels": {"app": "web"}}},
         "status": {"disruptionsAllowed": 2}},
        {"metadata": {"name": "everything", "namespace": "default"}, "spec": {"selector": {}},
         "status": {"disruptionsAllowed": 5}},
        {"metadata": {"name": "elsewhere", "namespace": "other"},
         "spec": {"selector": {"matchLabels": {"app": "web"}}}},
        {"metadata": {"name": "other-app", "namespace": "default"},
         "spec": {"selector": {"matchLabels": {"app": "db"}}}},
    ]
    pubs = [
        {"metadata": {"name": "by-ref", "namespace": "default"},
         "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}},
         "status": {"unavailableAllowed": 1}},
        {"metadata": {"name": "other-ref", "namespace": "default"},
         "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "db"},
                  "selector": {"matchLabels": {"app": "web"}}}},
        {"metadata": {"name": "by-selector", "namespace": "default"},
         "spec": {"selector": {"matchLabels": {"app": "web"}}}},
        {"metadata": {"name": "empty-selector", "namespace": "default"},
         "spec": {"selector": {}}},
    ]
    found = budgets_for(members, namespace="default", target=("apps", "Deployment", "web"),
                        disruption_budgets=pdbs, unavailable_budgets=pubs)
    assert [(b.kind, b.name, b.allowed) for b in found] == [
        ("PodDisruptionBudget", "match", 2),
        ("PodDisruptionBudget", "everything", 5),
        ("PodUnavailableBudget", "by-ref", 1),
        ("PodUnavailableBudget", "by-selector", 0),
    ]
