"""Reservation mode: reserved-pod verdicts, labels, conditions and the maxUnavailable fix.

The tables port Kruise's ``TestCheckPodReserved``,
``TestCalculateSubsetsStatusForReservedAdaptiveStrategy`` and
``TestPostProcessSubsetStatusForReservedAdaptiveStrategy``, on whole seconds.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spreadbus.features.uniteddeployment.core.conditions import find_condition, format_time
from spreadbus.features.uniteddeployment.core.model import ScheduleStrategy
from spreadbus.features.uniteddeployment.core.reservation import (
    after_allocation,
    max_unavailable,
    new_subset_conditions,
    override_max_unavailable,
    reservation_round,
    reserved_status,
)
from tests.uniteddeployment.pod_builders import RESERVED, REVISION, pod

NOW = datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)
S = timedelta(seconds=1)


def updated_condition(at: datetime) -> dict[str, Any]:
    return {
        "type": "UnitedDeploymentUpdated",
        "status": "False",
        "lastTransitionTime": format_time(at),
    }


# --- reserved_status: TestCheckPodReserved ---------------------------------------------------

CHECK_CASES: list[tuple[str, dict[str, Any], str, datetime, bool, timedelta | None, bool]] = [
    # name, pod, updated revision, UnitedDeploymentUpdated time, reserved, recheck, update timeout
    (
        "normal pod, pending, not long enough",
        pod(created=NOW - 3 * S, unschedulable=True),
        "",
        NOW,
        False,
        7 * S,
        False,
    ),
    (
        "normal pod, pending, long enough",
        pod(created=NOW - 11 * S, unschedulable=True),
        "",
        NOW,
        True,
        5 * S,
        False,
    ),
    (
        "normal pod, running",
        pod(created=NOW - 1 * S, phase="Running", ready_since=NOW - 3 * S, scheduled=True),
        "",
        NOW,
        False,
        None,
        False,
    ),
    (
        "reserved pod, pending",
        pod(
            created=NOW - 100 * S,
            unschedulable=True,
            not_ready_since=NOW - 3 * S,
            labels={RESERVED: "true"},
        ),
        "",
        NOW,
        True,
        5 * S,
        False,
    ),
    (
        "reserved pod, ready, but not long enough",
        pod(
            created=NOW - 100 * S,
            phase="Running",
            ready_since=NOW - 3 * S,
            scheduled=True,
            labels={RESERVED: "true"},
        ),
        "",
        NOW,
        True,
        2 * S,
        False,
    ),
    (
        "reserved pod, ready, long enough",
        pod(
            created=NOW - 100 * S,
            phase="Running",
            ready_since=NOW - 6 * S,
            scheduled=True,
            labels={RESERVED: "true"},
        ),
        "",
        NOW,
        False,
        None,
        False,
    ),
    (
        "normal pod, running, old revision, update timed out",
        pod(
            created=NOW - 1 * S,
            phase="Running",
            ready_since=NOW - 3 * S,
            scheduled=True,
            labels={REVISION: "old-revision", RESERVED: "false"},
        ),
        "new-revision",
        NOW - 11 * S,
        True,
        5 * S,
        True,
    ),
    (
        "normal pod, running, old revision, not timed out",
        pod(
            created=NOW - 1 * S,
            phase="Running",
            ready_since=NOW - 3 * S,
            scheduled=True,
            labels={REVISION: "old-revision"},
        ),
        "new-revision",
        NOW - 4 * S,
        False,
        6 * S,
        False,
    ),
    (
        "normal pod deleted",
        pod(
            created=NOW - 100 * S,
            phase="Running",
            ready_since=NOW - 99 * S,
            scheduled=True,
            deleted=NOW - 1 * S,
        ),
        "",
        NOW - 99 * S,
        False,
        None,
        False,
    ),
    (
        "reserved pod ready long enough but on an old revision stays reserved",
        pod(
            created=NOW - 100 * S,
            phase="Running",
            ready_since=NOW - 60 * S,
            scheduled=True,
            labels={RESERVED: "true", REVISION: "old"},
        ),
        "new",
        NOW,
        True,
        5 * S,
        False,
    ),
]


@pytest.mark.parametrize(
    ("candidate", "revision", "updated_at", "reserved", "recheck", "update_timeout"),
    [case[1:] for case in CHECK_CASES],
    ids=[case[0] for case in CHECK_CASES],
)
def test_reserved_status(
    candidate: dict[str, Any],
    revision: str,
    updated_at: datetime,
    reserved: bool,
    recheck: timedelta | None,
    update_timeout: bool,
) -> None:
    found = reserved_status(
        candidate,
        updated_revision=revision,
        ud_updated_condition=updated_condition(updated_at),
        pending_timeout_after=10 * S,
        min_ready=5 * S,
        now=NOW,
    )
    assert found.reserved is reserved
    assert found.recheck_after == recheck
    assert found.update_timed_out is update_timeout


def test_old_revision_pod_without_updated_condition_is_left_alone() -> None:
    found = reserved_status(
        pod(created=NOW - 100 * S, phase="Running", labels={REVISION: "old"}),
        updated_revision="new",
        ud_updated_condition=None,
        pending_timeout_after=10 * S,
        min_ready=5 * S,
        now=NOW,
    )
    assert not found.reserved
    assert found.recheck_after is None


# --- reservation_round: TestCalculateSubsetsStatusForReservedAdaptiveStrategy ----------------

STRATEGY = ScheduleStrategy(
    type="Adaptive",
    has_adaptive=True,
    reserve_unschedulable_pods=True,
    reschedule_critical_seconds=10,
    unschedulable_seconds=30,
)


def kruise_pod(ready: datetime, created: datetime, pending: bool, label: str) -> dict[str, Any]:
    labels = {RESERVED: label} if label else {}
    if pending:
        return pod(created=created, unschedulable=True, not_ready_since=ready, labels=labels)
    return pod(created=created, phase="Running", scheduled=True, ready_since=ready, labels=labels)


ROUND_CASES = [
    # name, marked, pod, reserved pods, unschedulable, requeue, labels written
    (
        "pod just created, pending",
        False,
        kruise_pod(NOW, NOW - S, True, ""),
        0,
        False,
        9 * S,
        {"default/p": {RESERVED: "false"}},
    ),
    (
        "created, running within critical seconds",
        False,
        kruise_pod(NOW - 5 * S, NOW - 8 * S, False, "false"),
        0,
        False,
        None,
        {},
    ),
    (
        "created, pending until timeout",
        False,
        kruise_pod(NOW - 13 * S, NOW - 13 * S, True, "false"),
        1,
        True,
        30 * S,
        {"default/p": {RESERVED: "true"}},
    ),
    (
        "recovered, not long enough",
        False,
        kruise_pod(NOW - 10 * S, NOW - 25 * S, False, "true"),
        1,
        True,
        20 * S,
        {},
    ),
    (
        "recovered, long enough",
        False,
        kruise_pod(NOW - 35 * S, NOW - 50 * S, False, "true"),
        0,
        False,
        None,
        {"default/p": {RESERVED: "false"}},
    ),
    # Kruise's inverted comparison: no wake-up is asked for a pod born reserved.
    (
        "pod created in a previously unschedulable subset",
        True,
        kruise_pod(NOW, NOW - S, True, ""),
        1,
        True,
        None,
        {"default/p": {RESERVED: "true"}},
    ),
]


@pytest.mark.parametrize(
    ("marked", "candidate", "reserved", "unschedulable", "requeue", "labels"),
    [case[1:] for case in ROUND_CASES],
    ids=[case[0] for case in ROUND_CASES],
)
def test_reservation_round(
    marked: bool,
    candidate: dict[str, Any],
    reserved: int,
    unschedulable: bool,
    requeue: timedelta | None,
    labels: dict[str, dict[str, str]],
) -> None:
    conditions = [{"type": "Schedulable", "status": "False" if marked else "True"}]
    verdict = reservation_round(
        conditions,
        pods=[candidate],
        updated_revision="",
        ud_updated_condition=updated_condition(NOW),
        strategy=STRATEGY,
        now=NOW,
    )
    assert verdict.reserved_pods == reserved
    assert verdict.unschedulable is unschedulable
    assert verdict.marked_unschedulable is marked
    assert verdict.requeue_after == requeue
    assert verdict.pod_labels == labels
    written = find_condition(verdict.conditions, "Schedulable")
    assert written is not None
    assert written["status"] == ("False" if unschedulable else "True")
    assert written["reason"] == "reschedule"
    assert written["message"] == ("reserved pods found" if unschedulable else "no reserved pods")


def test_update_timeout_pods_are_counted() -> None:
    old = [
        pod(f"old-{i}", created=NOW - 100 * S, phase="Running", labels={REVISION: "a"})
        for i in range(3)
    ]
    verdict = reservation_round(
        [],
        pods=old,
        updated_revision="b",
        ud_updated_condition=updated_condition(NOW - 11 * S),
        strategy=STRATEGY,
        now=NOW,
    )
    assert verdict.update_timeout_pods == 3
    assert verdict.reserved_pods == 3
    assert verdict.requeue_after == 30 * S


# --- after_allocation: TestPostProcessSubsetStatusForReservedAdaptiveStrategy ----------------


@pytest.mark.parametrize(
    ("replicas", "next_replicas", "unschedulable"),
    [(10, 10, False), (10, 15, True), (15, 10, False)],
    ids=["normal", "scale up", "scale down"],
)
def test_after_allocation(replicas: int, next_replicas: int, unschedulable: bool) -> None:
    before = [{"type": "Schedulable", "status": "True"}]
    after = after_allocation(
        before,
        unschedulable=False,
        marked_unschedulable=True,
        current_replicas=replicas,
        next_replicas=next_replicas,
        now=NOW,
    )
    written = find_condition(after, "Schedulable")
    assert written is not None
    assert (written["status"] == "False") is unschedulable
    if unschedulable:
        assert written["message"] == "subset just recovered scaled up"
    else:
        assert after == before


def test_after_allocation_leaves_unmarked_or_unschedulable_subsets() -> None:
    before = [{"type": "Schedulable", "status": "True"}]
    for unschedulable, marked in ((True, True), (False, False)):
        after = after_allocation(
            before,
            unschedulable=unschedulable,
            marked_unschedulable=marked,
            current_replicas=1,
            next_replicas=5,
            now=NOW,
        )
        assert after == before


def test_new_subset_conditions() -> None:
    assert new_subset_conditions(reservation=True, statuses_exist=False, now=NOW) == []
    assert new_subset_conditions(reservation=False, statuses_exist=True, now=NOW) == []
    assert new_subset_conditions(reservation=True, statuses_exist=True, now=NOW) == [
        {
            "type": "Schedulable",
            "status": "False",
            "lastTransitionTime": format_time(NOW),
            "reason": "created",
            "message": "newly-created subsets in reservation strategy",
        }
    ]


# --- maxUnavailable (Kruise #2412 fixed) -----------------------------------------------------


def deployment(surge: object = None, strategy_type: str | None = None) -> dict[str, Any]:
    strategy: dict[str, Any] = {}
    if strategy_type is not None:
        strategy["type"] = strategy_type
    if surge is not None:
        strategy["rollingUpdate"] = {"maxSurge": surge}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "spec": {"replicas": 3, "strategy": strategy},
    }


def cloneset(surge: object = None) -> dict[str, Any]:
    strategy: dict[str, Any] = {"partition": 0}
    if surge is not None:
        strategy["maxSurge"] = surge
    return {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "CloneSet",
        "spec": {"updateStrategy": strategy},
    }


def test_kruise_value_when_positive() -> None:
    found = override_max_unavailable(
        deployment(), current_replicas=5, ready_replicas=2, update_timeout_pods=1
    )
    assert found["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 4
    found = override_max_unavailable(
        cloneset(), current_replicas=5, ready_replicas=2, update_timeout_pods=0
    )
    assert found["spec"]["updateStrategy"] == {"partition": 0, "maxUnavailable": 3}


def test_scale_down_race_never_writes_a_negative_value() -> None:
    # 5 pods ready while spec.replicas was already lowered to 2: Kruise writes -3
    assert (
        max_unavailable(deployment(), current_replicas=2, ready_replicas=5, update_timeout_pods=0)
        == 0
    )
    assert (
        max_unavailable(deployment(0), current_replicas=2, ready_replicas=5, update_timeout_pods=0)
        == 1
    )
    assert (
        max_unavailable(
            deployment("0%"), current_replicas=2, ready_replicas=5, update_timeout_pods=0
        )
        == 1
    )
    assert (
        max_unavailable(cloneset(), current_replicas=2, ready_replicas=5, update_timeout_pods=0)
        == 1
    )
    assert (
        max_unavailable(
            cloneset("50%"), current_replicas=2, ready_replicas=5, update_timeout_pods=0
        )
        == 0
    )


def test_recreate_deployment_is_left_alone() -> None:
    original = deployment(strategy_type="Recreate")
    found = override_max_unavailable(
        original, current_replicas=2, ready_replicas=0, update_timeout_pods=0
    )
    assert found == original
    assert found is not original


def test_override_does_not_modify_its_input() -> None:
    original = cloneset()
    override_max_unavailable(original, current_replicas=4, ready_replicas=1, update_timeout_pods=0)
    assert original == cloneset()


@given(
    replicas=st.integers(min_value=0, max_value=50),
    ready=st.integers(min_value=0, max_value=60),
    timeouts=st.integers(min_value=0, max_value=10),
    surge=st.sampled_from([None, 0, 1, "0%", "25%", "1%"]),
    kind=st.sampled_from(["Deployment", "CloneSet"]),
)
def test_written_max_unavailable_keeps_the_workload_valid(
    replicas: int, ready: int, timeouts: int, surge: object, kind: str
) -> None:
    workload = deployment(surge) if kind == "Deployment" else cloneset(surge)
    value = max_unavailable(
        workload, current_replicas=replicas, ready_replicas=ready, update_timeout_pods=timeouts
    )
    assert value >= 0
    assert value >= replicas - ready + timeouts
    if kind == "Deployment" and surge in (0, "0%"):
        assert value >= 1
    if kind == "CloneSet" and surge in (None, 0, "0%"):
        assert value >= 1


@given(
    ages=st.lists(st.integers(min_value=0, max_value=60), max_size=5),
    marked=st.booleans(),
    labelled=st.lists(st.sampled_from(["", "true", "false"]), min_size=5, max_size=5),
)
def test_round_properties(ages: list[int], marked: bool, labelled: list[str]) -> None:
    pods = []
    for index, age in enumerate(ages):
        labels = {RESERVED: labelled[index]} if labelled[index] else {}
        pods.append(pod(f"p{index}", created=NOW - age * S, unschedulable=True, labels=labels))
    verdict = reservation_round(
        [{"type": "Schedulable", "status": "False" if marked else "True"}],
        pods=pods,
        updated_revision="",
        ud_updated_condition=updated_condition(NOW),
        strategy=STRATEGY,
        now=NOW,
    )
    assert 0 <= verdict.reserved_pods <= len(pods)
    assert verdict.unschedulable == (verdict.reserved_pods > 0)
    # every pod ends up labelled: either it was, or a label is written now
    for index, candidate in enumerate(pods):
        key = f"default/{candidate['metadata']['name']}"
        assert labelled[index] or key in verdict.pod_labels
        if key in verdict.pod_labels:
            assert verdict.pod_labels[key][RESERVED] in ("true", "false")
    # the labels written plus those kept count exactly the reserved pods
    final = [
        verdict.pod_labels.get(f"default/p{i}", {}).get(RESERVED, labelled[i])
        for i in range(len(pods))
    ]
    assert final.count("true") == verdict.reserved_pods
    if verdict.requeue_after is not None:
        assert verdict.requeue_after > timedelta(0)


def test_boundaries_are_strict() -> None:
    # Ready exactly min_ready ago: still reserved, looked at again "now" (no positive wake-up).
    ready_just = reserved_status(
        pod(
            created=NOW - 100 * S,
            phase="Running",
            ready_since=NOW - 5 * S,
            labels={RESERVED: "true"},
        ),
        updated_revision="",
        ud_updated_condition=None,
        pending_timeout_after=10 * S,
        min_ready=5 * S,
        now=NOW,
    )
    assert ready_just.reserved
    assert ready_just.recheck_after == timedelta(0)
    # Updating exactly pending_timeout long: old-revision pods are not reserved yet.
    update_just = reserved_status(
        pod(created=NOW - 100 * S, phase="Running", labels={REVISION: "old"}),
        updated_revision="new",
        ud_updated_condition=updated_condition(NOW - 10 * S),
        pending_timeout_after=10 * S,
        min_ready=5 * S,
        now=NOW,
    )
    assert not update_just.reserved
    assert not update_just.update_timed_out


def test_cloneset_surge_is_scaled_against_the_written_replicas() -> None:
    # 10% of 4 rounds up to 1: surge allowed, 0 is valid
    written = cloneset("10%")
    written["spec"]["replicas"] = 4
    assert (
        max_unavailable(written, current_replicas=0, ready_replicas=5, update_timeout_pods=0) == 0
    )
    # of 0 replicas it is 0: no surge, so at least 1
    written["spec"]["replicas"] = 0
    assert (
        max_unavailable(written, current_replicas=4, ready_replicas=5, update_timeout_pods=0) == 1
    )
