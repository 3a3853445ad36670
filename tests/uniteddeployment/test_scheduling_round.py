"""The scheduling pass the reconcile runs around the allocator, end to end over plain JSON."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from spreadbus.features.uniteddeployment.core.allocation import SubsetWorkload, allocate
from spreadbus.features.uniteddeployment.core.conditions import find_condition, format_time
from spreadbus.features.uniteddeployment.core.scheduling import (
    SchedulingRound,
    after_allocation,
    rebalance_allocation,
    schedule_round,
)
from tests.uniteddeployment.builders import ADAPTIVE, RESERVATION, elastic_subsets, ud
from tests.uniteddeployment.pod_builders import RESERVED, pod

NOW = datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)
S = timedelta(seconds=1)


def workload(replicas: int, ready: int, status_replicas: int | None = None) -> dict[str, Any]:
    return {
        "kind": "Deployment",
        "spec": {"replicas": replicas},
        "status": {
            "replicas": replicas if status_replicas is None else status_replicas,
            "readyReplicas": ready,
        },
    }


def stuck(name: str) -> dict[str, Any]:
    return pod(name, created=NOW - 60 * S, unschedulable=True)


def running(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return pod(
        name, created=NOW - 600 * S, phase="Running", ready_since=NOW - 500 * S, labels=labels
    )


def test_fixed_strategy_only_reads_the_workloads() -> None:
    fixed = ud(elastic_subsets([None, None], [2, None]), replicas=4)
    found = schedule_round(
        fixed,
        {"subset-0": [], "subset-1": []},
        {"subset-0": workload(4, 2)},
        {"subset-0": [stuck("a"), stuck("b")]},
        updated_revision="r",
        ud_updated_condition=None,
        now=NOW,
    )
    assert found.workloads == {"subset-0": SubsetWorkload(replicas=4, ready_replicas=2)}
    assert found.conditions == {"subset-0": [], "subset-1": []}
    assert found.pod_labels == {}
    assert found.requeue_after is None


def test_adaptive_full_subset_moves_its_stuck_pods_on() -> None:
    model = ud(elastic_subsets([None, None], [None, None]), replicas=4, strategy=ADAPTIVE)
    found = schedule_round(
        model,
        {"subset-0": [], "subset-1": []},
        {"subset-0": workload(4, 2)},
        {"subset-0": [running("a"), running("b"), stuck("c"), stuck("d")]},
        updated_revision="r",
        ud_updated_condition=None,
        now=NOW,
    )
    assert found.workloads["subset-0"].unschedulable
    assert found.requeue_after == 300 * S
    written = find_condition(found.conditions["subset-0"], "Schedulable")
    assert written is not None
    assert written["message"] == "timeout pending pods found"
    assert found.conditions["subset-1"] == []
    assert allocate(model, found.workloads) == {"subset-0": 2, "subset-1": 2}
    # after the window, with the pods still stuck, the flip goes straight back to False
    later = NOW + 301 * S
    again = schedule_round(
        model,
        found.conditions,
        {"subset-0": workload(2, 1)},
        {"subset-0": [running("a"), stuck("c")]},
        updated_revision="r",
        ud_updated_condition=None,
        now=later,
    )
    rewritten = find_condition(again.conditions["subset-0"], "Schedulable")
    assert rewritten is not None
    assert rewritten["lastTransitionTime"] == format_time(later)
    assert again.workloads["subset-0"].unschedulable


def test_subset_without_status_entry_is_skipped() -> None:
    model = ud(elastic_subsets([None], [None]), replicas=2, strategy=ADAPTIVE)
    found = schedule_round(
        model,
        {},
        {"subset-0": workload(2, 0)},
        {"subset-0": [stuck("a")]},
        updated_revision="r",
        ud_updated_condition=None,
        now=NOW,
    )
    assert not found.workloads["subset-0"].unschedulable
    assert found.conditions == {}


def test_reservation_labels_pods_and_substitutes() -> None:
    model = ud(elastic_subsets([None, None], [None, None]), replicas=3, strategy=RESERVATION)
    pods = [
        running("a", {RESERVED: "false"}),
        stuck("b"),
        pod("c", created=NOW - 5 * S, unschedulable=True),
    ]
    found = schedule_round(
        model,
        {"subset-0": [], "subset-1": []},
        {"subset-0": workload(3, 1)},
        {"subset-0": pods},
        updated_revision="",
        ud_updated_condition=None,
        now=NOW,
    )
    flag = found.workloads["subset-0"]
    assert (flag.reserved_pods, flag.unschedulable, flag.marked_unschedulable) == (1, True, False)
    assert found.pod_labels == {
        "default/b": {RESERVED: "true"},
        "default/c": {RESERVED: "false"},
    }
    # c becomes stuck in 25 s; a reserved pod is looked at again after 300 s
    assert found.requeue_after == 25 * S
    allocation = allocate(model, found.workloads)
    assert allocation == {"subset-0": 3, "subset-1": 1}  # one substitute elsewhere
    assert after_allocation(model, found, allocation, now=NOW) == found


def test_after_allocation_marks_a_recovered_subset_that_grows() -> None:
    model = ud(elastic_subsets([None, None], [None, None]), replicas=3, strategy=RESERVATION)
    before = SchedulingRound(
        workloads={"subset-0": SubsetWorkload(replicas=1, marked_unschedulable=True)},
        conditions={"subset-0": [{"type": "Schedulable", "status": "True"}]},
    )
    after = after_allocation(model, before, {"subset-0": 3, "subset-1": 0}, now=NOW)
    written = find_condition(after.conditions["subset-0"], "Schedulable")
    assert written is not None
    assert written["message"] == "subset just recovered scaled up"
    adaptive = ud(elastic_subsets([None, None], [None, None]), replicas=3, strategy=ADAPTIVE)
    assert after_allocation(adaptive, before, {"subset-0": 3, "subset-1": 0}, now=NOW) == before


def test_rebalance_allocation() -> None:
    model = ud(elastic_subsets([None, None], [6, None]), replicas=10, strategy=ADAPTIVE)
    round_ = SchedulingRound(
        workloads={
            "subset-0": SubsetWorkload(replicas=2, ready_replicas=2),
            "subset-1": SubsetWorkload(replicas=8, ready_replicas=8),
        }
    )
    allocation = allocate(model, round_.workloads)
    assert allocation == {"subset-0": 2, "subset-1": 8}  # Adaptive keeps ready pods where they are
    assert isinstance(allocation, dict)
    assert rebalance_allocation(model, {}, round_, allocation) == (allocation, None)
    request = {"rebalance.spreadbus.io/request": "wr-1"}
    assert rebalance_allocation(model, request, round_, allocation) == (
        {"subset-0": 4, "subset-1": 8},
        None,
    )
    arrived = SchedulingRound(
        workloads={
            "subset-0": SubsetWorkload(replicas=6, ready_replicas=6),
            "subset-1": SubsetWorkload(replicas=6, ready_replicas=6),
        }
    )
    assert rebalance_allocation(model, request, arrived, allocation) == (
        {"subset-0": 6, "subset-1": 4},
        "wr-1",
    )
    handled = {**request, "rebalance.spreadbus.io/handled": "wr-1"}
    assert rebalance_allocation(model, handled, arrived, allocation) == (allocation, None)


def test_rebalance_does_not_grow_an_unschedulable_subset() -> None:
    model = ud(elastic_subsets([None, None], [6, None]), replicas=10, strategy=ADAPTIVE)
    round_ = SchedulingRound(
        workloads={
            "subset-0": SubsetWorkload(replicas=3, ready_replicas=2, unschedulable=True),
            "subset-1": SubsetWorkload(replicas=8, ready_replicas=8),
        }
    )
    allocation = allocate(model, round_.workloads)
    assert allocation == {"subset-0": 2, "subset-1": 8}
    request = {"rebalance.spreadbus.io/request": "wr-1"}
    # subset-0 cannot take pods and subset-1 has none to spare: the rebalance ends where it is
    # and the Adaptive allocation (the pending pod leaves subset-0) stands
    assert rebalance_allocation(model, request, round_, allocation) == (allocation, "wr-1")


# --- properties ------------------------------------------------------------------------------

pod_states = st.sampled_from(["stuck", "young", "running", "reserved-running", "reserved-stuck"])


def _pod(index: int, state: str, age: int) -> dict[str, Any]:
    created = NOW - age * S
    if state in ("stuck", "young"):
        return pod(f"p{index}", created=created, unschedulable=True)
    labels = {RESERVED: "true"} if state.startswith("reserved") else {RESERVED: "false"}
    if state == "reserved-stuck":
        return pod(f"p{index}", created=created, unschedulable=True, labels=labels)
    return pod(
        f"p{index}", created=created, phase="Running", ready_since=created + S, labels=labels
    )


@given(
    strategy=st.sampled_from([None, ADAPTIVE, RESERVATION]),
    states=st.lists(st.tuples(pod_states, st.integers(1, 400)), max_size=6),
    marked_ago=st.one_of(st.none(), st.integers(0, 600)),
    ready=st.integers(0, 6),
)
def test_round_invariants(
    strategy: dict[str, Any] | None,
    states: list[tuple[str, int]],
    marked_ago: int | None,
    ready: int,
) -> None:
    model = ud(elastic_subsets([None, None], [None, None]), replicas=6, strategy=strategy)
    conditions: list[dict[str, Any]] = []
    if marked_ago is not None:
        conditions = [
            {
                "type": "Schedulable",
                "status": "False",
                "lastTransitionTime": format_time(NOW - marked_ago * S),
                "reason": "reschedule",
            }
        ]
    pods = [_pod(i, state, age) for i, (state, age) in enumerate(states)]
    found = schedule_round(
        model,
        {"subset-0": conditions, "subset-1": []},
        {"subset-0": workload(len(pods), min(ready, len(pods)))},
        {"subset-0": pods},
        updated_revision="",
        ud_updated_condition=None,
        now=NOW,
    )
    flag = found.workloads["subset-0"]
    assert flag.replicas == len(pods)
    assert found.conditions["subset-1"] == []
    if found.requeue_after is not None:
        assert found.requeue_after > timedelta(0)
    written = find_condition(found.conditions["subset-0"], "Schedulable")
    if strategy is None:
        assert found.conditions["subset-0"] == conditions
        assert found.pod_labels == {}
        assert found.requeue_after is None
        assert not flag.unschedulable
        return
    if strategy is ADAPTIVE:
        assert found.pod_labels == {}
        assert flag.reserved_pods == 0
        if flag.unschedulable:
            assert written is not None
            assert written["status"] == "False"
        return
    assert flag.unschedulable == (flag.reserved_pods > 0)
    assert flag.marked_unschedulable == (marked_ago is not None)
    assert written is not None
    assert written["status"] == ("False" if flag.unschedulable else "True")
    assert set(found.pod_labels) <= {f"default/p{i}" for i in range(len(pods))}
