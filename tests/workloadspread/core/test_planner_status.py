"""Planner side: subset status, reservations expiry, conditions, existing pods, the whole plan."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.existing_pods import group_pods
from spreadbus.features.workloadspread.core.model import (
    FAKE_SUBSET,
    Condition,
    SubsetStatus,
    from_object,
    status_to_json,
)
from spreadbus.features.workloadspread.core.occupancy import Reservation
from spreadbus.features.workloadspread.core.reconcile import (
    latest_version,
    plan_workloadspread,
    workload_pods,
)
from spreadbus.features.workloadspread.core.reschedule import schedulable_condition
from spreadbus.features.workloadspread.core.status import subset_status
from spreadbus.features.workloadspread.core.target import lookup_in
from tests.workloadspread.core.builders import (
    deployment,
    node,
    pod,
    replicaset,
    subset,
    workloadspread,
    zone_term,
)

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
JSON = dict[str, Any]


def ago(seconds: int) -> datetime:
    return NOW - timedelta(seconds=seconds)


def _subset(max_replicas: int | str | None) -> Any:
    return from_object(workloadspread(subset("a", max_replicas))).subsets[0]


@pytest.mark.parametrize(
    ("maximum", "active", "creating", "deleting", "expected"),
    [
        (5, 3, {}, {}, (3, 2, set(), set())),
        (5, 7, {}, {}, (7, 0, set(), set())),
        (None, 4, {"x": ago(1)}, {"p0": ago(1)}, (4, -1, {"x"}, {"p0"})),
        (5, 2, {"x": ago(30), "y": ago(31)}, {}, (2, 2, {"x"}, set())),
        (5, 2, {}, {"p0": ago(15), "p1": ago(16)}, (2, 4, set(), {"p0"})),
        (2, 2, {}, {"p0": ago(1)}, (2, 1, set(), {"p0"})),
    ],
    ids=[
        "under the limit",
        "over the limit floors at zero",
        "unlimited stays -1",
        "creating expires strictly after 30s",
        "deleting expires strictly after 15s",
        "deleting frees a slot",
    ],
)
def test_subset_status_counts(
    maximum: int | None,
    active: int,
    creating: dict[str, datetime],
    deleting: dict[str, datetime],
    expected: tuple[int, int, set[str], set[str]],
) -> None:
    pods = [pod(f"p{i}") for i in range(active)]
    outcome = subset_status(
        _subset(maximum), pods, creating=creating, deleting=deleting, replicas=10, now=NOW
    )
    s = outcome.status
    assert (s.replicas, s.missing_replicas, set(s.creating_pods), set(s.deleting_pods)) == expected


def test_a_seen_pod_clears_its_creating_entry_by_uid_or_name() -> None:
    by_uid = pod("web-1")
    by_uid["metadata"]["annotations"] = {
        "apps.kruise.io/matched-workloadspread": '{"name":"ws","subset":"a","uid":"u-1"}'
    }
    failed = pod("web-2", phase="Failed")
    outcome = subset_status(
        _subset(5),
        [by_uid, failed],
        creating={"u-1": ago(1), "web-2": ago(1), "later": ago(1)},
        deleting={},
        replicas=5,
        now=NOW,
    )
    assert set(outcome.status.creating_pods) == {"later"}
    assert outcome.status.missing_replicas == 3
    assert outcome.wake_at == [ago(1) + timedelta(seconds=30)]


def test_percent_max_replicas_is_scaled_with_round_up() -> None:
    outcome = subset_status(_subset("34%"), [], creating={}, deleting={}, replicas=10, now=NOW)
    assert outcome.status.missing_replicas == 4


def _cond(status: str, reason: str, seconds_ago: int | None) -> SubsetStatus:
    since = ago(seconds_ago) if seconds_ago is not None else None
    return SubsetStatus(name="a", conditions=(Condition("Schedulable", status, reason, "", since),))


def test_an_unsteered_pod_on_a_full_subsets_node_joins_it_over_its_limit_as_in_kruise() -> None:
    """The known limit of a pod admitted without a subset (webhook down, view not synced)."""
    d = deployment(replicas=3)
    rs = replicaset(d)
    ws = from_object(workloadspread(subset("a", 2), subset("b")))
    pods = [
        pod("web-abc-1", owner=rs, ws="ws", subset_name="a", node="na"),
        pod("web-abc-2", owner=rs, ws="ws", subset_name="a", node="na"),
        pod("web-abc-3", owner=rs, node="na", created="2026-01-01T00:05:00Z"),
    ]
    plan = plan_workloadspread(
        ws,
        workload=d,
        pods=pods,
        nodes={"na": node("na", "a")},
        now=NOW,
        whitelist=Whitelist(),
        latest="abc",
    )
    assert plan.pod_patches["default/web-abc-3"]["metadata"]["annotations"] == {
        "apps.kruise.io/matched-workloadspread": '{"name":"ws","subset":"a"}'
    }
    assert subset_field_of(plan, "replicas") == {"a": 3, "b": 0}
    # One pod too many in a: the newest is first in line on scale-in.
    assert plan.wanted_costs["default/web-abc-3"] == "-100"
    assert {plan.wanted_costs[f"default/web-abc-{i}"] for i in (1, 2)} == {"200"}


def subset_field_of(plan: Any, field: str) -> dict[str, Any]:
    return {s["name"]: s[field] for s in status_to_json(plan.status)["subsetStatuses"]}


@pytest.mark.parametrize(
    ("old", "stuck", "last", "expected", "revisit"),
    [
        (None, True, False, ("False", "PodUnschedulable", NOW), None),
        (None, False, False, ("True", "Sufficient", NOW), None),
        (_cond("True", "Sufficient", 50), True, False, ("False", "PodUnschedulable", NOW), None),
        (
            _cond("False", "PodUnschedulable", 50),
            True,
            False,
            ("False", "PodUnschedulable", ago(50)),
            None,
        ),
        (
            _cond("False", "PodUnschedulable", 100),
            False,
            False,
            ("False", "PodUnschedulable", ago(100)),
            ago(100) + timedelta(seconds=300),
        ),
        (
            _cond("False", "PodUnschedulable", 300),
            False,
            False,
            ("False", "PodUnschedulable", ago(300)),
            NOW,
        ),
        (_cond("False", "PodUnschedulable", 301), False, False, ("True", "Sufficient", NOW), None),
        (_cond("False", "PodUnschedulable", None), False, False, ("True", "Sufficient", NOW), None),
        (
            _cond("False", "PodUnschedulable", None),
            True,
            False,
            ("False", "PodUnschedulable", None),
            None,
        ),
        (_cond("True", "Sufficient", 500), True, True, ("True", "Sufficient", ago(500)), None),
        (None, True, True, ("True", "Sufficient", NOW), None),
    ],
    ids=[
        "first stuck pod",
        "first look, nothing stuck",
        "turns unschedulable",
        "stays unschedulable keeping its time",
        "waits for the window",
        "exactly at the window still waits",
        "recovers after the window",
        "no transition time recovers at once",
        "no transition time and stuck pods stays unschedulable",
        "last subset is always schedulable",
        "last subset without history",
    ],
)
def test_schedulable_condition(
    old: SubsetStatus | None,
    stuck: bool,
    last: bool,
    expected: tuple[str, str, datetime | None],
    revisit: datetime | None,
) -> None:
    condition, when = schedulable_condition(old, has_stuck=stuck, last=last, now=NOW)
    assert (condition.status, condition.reason, condition.last_transition_time) == expected
    assert when == revisit


def test_existing_pods_are_matched_by_node_and_score() -> None:
    ws = from_object(
        workloadspread(
            subset("a", 1),
            subset(
                "b", 5, preferredNodeSelectorTerms=[{"weight": 5, "preference": zone_term("b")}]
            ),
            {"name": "any", "tolerations": [{"key": "spot", "operator": "Exists"}]},
        )
    )
    nodes = {
        "na": node("na", "a"),
        "nb": node("nb", "b"),
        "spot": node("spot", "c", taints=[{"key": "spot", "effect": "NoSchedule"}]),
    }
    pods = [
        pod("p1", node="na"),
        pod("p2", node="na"),
        pod("p3", node="spot"),
        pod("p4"),
        pod("p5", node="gone"),
        pod("p6", ws="ws", subset_name="removed"),
        pod("p7", node="nb"),
    ]
    grouping = group_pods(ws, pods, replicas=10, nodes=nodes)
    names = {k: [p["metadata"]["name"] for p in v] for k, v in grouping.buckets.items()}
    # p1 takes a's only slot; p2 still fits only a and "any" (no quota left in a: any scores +1)
    assert names == {
        "a": ["p1"],
        "b": ["p7"],
        "any": ["p2", "p3"],
        FAKE_SUBSET: ["p4", "p5", "p6"],
    }
    assert grouping.pod_patches["default/p1"] == {
        "metadata": {
            "annotations": {"apps.kruise.io/matched-workloadspread": '{"name":"ws","subset":"a"}'}
        }
    }


@pytest.mark.parametrize(
    ("ignore", "copied"),
    [(None, True), ("true", False), ("True", False), ("false", True), ("yes", True)],
)
def test_ignore_patch_existing_pods_metadata_keeps_the_patch_off_pre_existing_pods(
    ignore: str | None, copied: bool
) -> None:
    raw = workloadspread(
        subset(
            "a",
            5,
            patch={
                "metadata": {"labels": {"zone": "a"}, "annotations": {"note": "from subset a"}},
                "spec": {"priorityClassName": "high"},
            },
        ),
        subset("b"),
    )
    if ignore is not None:
        raw["metadata"]["annotations"] = {
            "workloadspread.kruise.io/ignore-patch-existing-pods-metadata": ignore
        }
    ws = from_object(raw)
    nodes = {"na": node("na", "a")}
    plan = plan_workloadspread(
        ws,
        workload=deployment(replicas=1),
        pods=[pod("p1", node="na")],
        nodes=nodes,
        now=NOW,
        whitelist=Whitelist(),
    )
    matched = {"apps.kruise.io/matched-workloadspread": '{"name":"ws","subset":"a"}'}
    if copied:
        expected = {
            "metadata": {
                "labels": {"zone": "a"},
                "annotations": {"note": "from subset a", **matched},
            }
        }
    else:
        expected = {"metadata": {"annotations": matched}}
    assert plan.pod_patches == {"default/p1": expected}
    assert [s.replicas for s in plan.status.subset_statuses] == [1, 0]


def test_reordered_subsets_keep_their_status_by_name() -> None:
    # Kruise's TestUpdateSubsetSequence: the spec lists b before a, the old status a before b.
    raw = workloadspread(
        subset("b", 5),
        subset("a", 5),
        status={
            "subsetStatuses": [
                {
                    "name": "a",
                    "missingReplicas": 4,
                    "creatingPods": {"p0": "2026-01-01T12:00:02Z", "later": "2026-01-01T11:59:50Z"},
                },
                {
                    "name": "b",
                    "missingReplicas": 4,
                    "creatingPods": {"p1": "2026-01-01T12:00:02Z"},
                    "conditions": [
                        {
                            "type": "Schedulable",
                            "status": "False",
                            "reason": "PodUnschedulable",
                            "lastTransitionTime": "2026-01-01T11:59:00Z",
                        }
                    ],
                },
            ]
        },
        strategy={"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30}},
    )
    pods = [pod("p0", ws="ws", subset_name="a"), pod("p1", ws="ws", subset_name="b")]
    plan = plan_workloadspread(
        from_object(raw),
        workload=deployment(replicas=5),
        pods=pods,
        nodes={},
        now=NOW,
        whitelist=Whitelist(),
    )
    top = {s.name: s for s in plan.status.subset_statuses}
    assert [s.name for s in plan.status.subset_statuses] == ["b", "a"]
    assert (top["b"].replicas, top["b"].missing_replicas, top["b"].creating_pods) == (1, 4, {})
    # a's unseen "later" admission stays with a and takes one more slot there.
    assert (top["a"].replicas, top["a"].missing_replicas, set(top["a"].creating_pods)) == (
        1,
        3,
        {"later"},
    )
    # b, first in the spec now, keeps its own condition (inside the recovery window); a, now
    # last, is always schedulable.
    assert top["b"].conditions == (
        Condition("Schedulable", "False", "PodUnschedulable", "", ago(60)),
    )
    assert top["a"].conditions == (Condition("Schedulable", "True", "Sufficient", "", NOW),)


def _rollout_world() -> tuple[JSON, JSON, JSON]:
    d = deployment(replicas=4)
    old_rs = replicaset(d, "old")
    old_rs["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:old"
    new_rs = replicaset(d, "new")
    return d, old_rs, new_rs


def test_latest_version_is_the_replicaset_matching_the_template() -> None:
    d, old_rs, new_rs = _rollout_world()
    ws = from_object(workloadspread(subset("a", 2), subset("b")))
    assert latest_version(ws, d, replicasets=[old_rs, new_rs]) == "new"
    assert latest_version(ws, d, replicasets=[old_rs]) is None
    cloneset = {
        "kind": "CloneSet",
        "metadata": {"generation": 1},
        "status": {"observedGeneration": 1},
    }
    assert latest_version(ws, cloneset) == "versionIgnored"


def test_plan_for_a_rolling_update() -> None:
    d, old_rs, new_rs = _rollout_world()
    raw = workloadspread(
        subset("a", 2),
        subset("b"),
        status={
            "versionedSubsetStatuses": {
                "new": [
                    {
                        "name": "a",
                        "replicas": 0,
                        "missingReplicas": 1,
                        "creatingPods": {"web-new-2": "2026-01-01T11:59:50Z"},
                    },
                    {"name": "b", "replicas": 0, "missingReplicas": -1},
                ]
            }
        },
    )
    ws = from_object(raw)
    pods = [
        pod("web-old-1", owner=old_rs, ws="ws", subset_name="a"),
        pod("web-old-2", owner=old_rs, ws="ws", subset_name="a"),
        pod("web-old-3", owner=old_rs, ws="ws", subset_name="b"),
        pod("web-new-1", owner=new_rs, ws="ws", subset_name="a"),
        pod("stranger"),
    ]
    mine = workload_pods(ws, d, pods, lookup=lookup_in([d, old_rs, new_rs]), whitelist=Whitelist())
    assert [p["metadata"]["name"] for p in mine] == [p["metadata"]["name"] for p in pods[:4]]
    plan = plan_workloadspread(
        ws,
        workload=d,
        pods=mine,
        nodes={},
        reservations=[Reservation("default/ws", "new", "b", "web-new-3", "creating", ago(5))],
        now=NOW,
        whitelist=Whitelist(),
        latest="new",
    )
    body = status_to_json(plan.status)
    assert body["subsetStatuses"] == [
        {"name": "a", "replicas": 3, "missingReplicas": 0},
        {"name": "b", "replicas": 1, "missingReplicas": -1},
    ]
    assert body["versionedSubsetStatuses"] == {
        "new": [
            {
                "name": "a",
                "replicas": 1,
                "missingReplicas": 0,
                "creatingPods": {"web-new-2": "2026-01-01T11:59:50Z"},
            },
            {
                "name": "b",
                "replicas": 0,
                "missingReplicas": -1,
                "creatingPods": {"web-new-3": "2026-01-01T11:59:55Z"},
            },
        ],
        "old": [
            {"name": "a", "replicas": 2, "missingReplicas": 0},
            {"name": "b", "replicas": 1, "missingReplicas": -1},
        ],
    }
    # old pods are reversed: a is idx 1 (cost 100), b idx 0 (cost 200); new: a 200
    assert plan.deletion_costs == {
        "default/web-old-1": "100",
        "default/web-old-2": "100",
        "default/web-old-3": "200",
        "default/web-new-1": "200",
    }
    assert plan.requeue_at == ago(10) + timedelta(seconds=30)
    assert plan.evictions == []


def test_plan_marks_a_subset_unschedulable_then_evicts_its_stuck_pods_once_observed() -> None:
    d = deployment(replicas=3)
    rs = replicaset(d)
    raw = workloadspread(
        subset("a", 3),
        subset("b"),
        strategy={"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30}},
    )
    ws = from_object(raw)
    unsched = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    pods = [
        pod("web-abc-1", owner=rs, ws="ws", subset_name="a", node="n1"),
        pod(
            "web-abc-2",
            owner=rs,
            ws="ws",
            subset_name="a",
            phase="Pending",
            ready=False,
            created="2026-01-01T11:59:00Z",
            conditions=unsched,
        ),
        pod(
            "web-abc-3",
            owner=rs,
            ws="ws",
            subset_name="a",
            phase="Pending",
            ready=False,
            created="2026-01-01T11:59:50Z",
            conditions=unsched,
        ),
        pod(
            "web-abc-4",
            owner=rs,
            ws="ws",
            subset_name="b",
            phase="Pending",
            ready=False,
            created="2026-01-01T11:00:00Z",
            conditions=unsched,
        ),
    ]
    plan = plan_workloadspread(
        ws, workload=d, pods=pods, nodes={}, now=NOW, whitelist=Whitelist(), latest="abc"
    )
    conditions = {s.name: s.conditions for s in plan.status.subset_statuses}
    assert conditions["a"] == (Condition("Schedulable", "False", "PodUnschedulable", "", NOW),)
    assert conditions["b"] == (Condition("Schedulable", "True", "Sufficient", "", NOW),)
    assert plan.evictions == [], "nothing is evicted before the closed subset is observed"
    assert plan.requeue_at == datetime(2026, 1, 1, 12, 0, 20, tzinfo=UTC)

    observed = from_object({**raw, "status": status_to_json(plan.status)})
    again = plan_workloadspread(
        observed, workload=d, pods=pods, nodes={}, now=NOW, whitelist=Whitelist(), latest="abc"
    )
    assert [e.pod for e in again.evictions] == ["default/web-abc-2"]
    assert again.evictions[0].reason == "unschedulable for more than 30s in subset a"


def test_fixed_strategy_drops_schedulable_conditions() -> None:
    raw = workloadspread(
        subset("a", 3),
        subset("b"),
        status={
            "subsetStatuses": [
                {"name": "a", "conditions": [{"type": "Schedulable", "status": "False"}]}
            ]
        },
    )
    plan = plan_workloadspread(
        from_object(raw), workload=deployment(), pods=[], nodes={}, now=NOW, whitelist=Whitelist()
    )
    assert all(s.conditions == () for s in plan.status.subset_statuses)


def test_a_workload_scaled_to_zero_counts_no_pods() -> None:
    d = deployment(replicas=0)
    rs = replicaset(d)
    ws = from_object(workloadspread(subset("a", 3)))
    pods = [pod("web-abc-1", owner=rs)]
    assert workload_pods(ws, d, pods, lookup=lookup_in([d, rs]), whitelist=Whitelist()) == []


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["Running", "Pending", "Failed", "Unknown", ""]),
            st.sampled_from(["", "n-a", "n-b", "missing"]),
            st.sampled_from(
                [
                    None,
                    '{"name":"ws","subset":"a"}',
                    '{"NAME":"ws","Subset":"gone"}',
                    "{",
                    "[1]",
                    '{"name":5}',
                ]
            ),
            st.booleans(),
        ),
        max_size=12,
    ),
    st.sampled_from([None, 0, 5, "50%", "x%"]),
    st.integers(0, 400),
)
def test_planning_never_raises_on_odd_pods(
    rows: list[tuple[str, str, str | None, bool]], maximum: Any, seconds: int
) -> None:
    raw = workloadspread(
        subset("a", maximum),
        subset("b", preferredNodeSelectorTerms=[{"weight": 2, "preference": zone_term("b")}]),
        strategy={"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30}},
    )
    pods = []
    for i, (phase, node_name, annotation, unschedulable) in enumerate(rows):
        p = pod(
            f"p{i}",
            phase=phase,
            node=node_name if node_name != "missing" else "nowhere",
            conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
            if unschedulable
            else None,
        )
        if annotation is not None:
            p["metadata"]["annotations"] = {"apps.kruise.io/matched-workloadspread": annotation}
        pods.append(p)
    plan = plan_workloadspread(
        from_object(raw),
        workload=deployment(replicas=4),
        pods=pods,
        nodes={"n-a": node("n-a", "a"), "n-b": node("n-b", "b")},
        now=NOW + timedelta(seconds=seconds),
        whitelist=Whitelist(),
    )
    assert [s.name for s in plan.status.subset_statuses] == ["a", "b"]
    assert sum(s.replicas for s in plan.status.subset_statuses) <= len(pods)


def test_plan_wants_every_cost_and_writes_only_those_that_differ() -> None:
    d = deployment(replicas=3)
    rs = replicaset(d)
    ws = from_object(workloadspread(subset("a", 1), subset("b")))
    pods = [
        pod("web-abc-1", owner=rs, ws="ws", subset_name="a", node="n1"),
        pod("web-abc-2", owner=rs, ws="ws", subset_name="a", created="2026-01-01T00:01:00Z"),
        pod("web-abc-3", owner=rs, ws="ws", subset_name="b", node="n2"),
    ]
    carried = {"web-abc-1": "200", "web-abc-2": "0", "web-abc-3": "100"}
    for p in pods:
        p["metadata"]["annotations"]["controller.kubernetes.io/pod-deletion-cost"] = carried[
            p["metadata"]["name"]
        ]
    plan = plan_workloadspread(
        ws,
        workload=d,
        pods=pods,
        nodes={},
        now=NOW,
        whitelist=Whitelist(),
        latest="abc",
    )
    # a holds one pod too many: the newer one goes first (-100); the other keeps a's 200.
    assert plan.wanted_costs == {
        "default/web-abc-1": "200",
        "default/web-abc-2": "-100",
        "default/web-abc-3": "100",
    }
    assert plan.deletion_costs == {"default/web-abc-2": "-100"}
