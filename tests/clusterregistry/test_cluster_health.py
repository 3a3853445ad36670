"""A member's Ready condition and taints, decided as Karmada decides them.

Transcribed from karmada-io/karmada (f8fdd02df376):
``pkg/controllers/status/cluster_condition_cache_test.go``
(``TestThresholdAdjustedReadyCondition``),
``pkg/controllers/status/cluster_status_controller_test.go`` (``TestGenerateReadyCondition``),
``pkg/controllers/cluster/cluster_controller_test.go`` (``TestController_Reconcile``'s taints,
``TestController_monitorClusterHealth``); the grace-period boundaries follow
``tryUpdateClusterHealth`` (``now.After(probe + grace)``: strictly after).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.clusterregistry.cluster_health import (
    CLUSTER_NOT_REACHABLE,
    CLUSTER_NOT_READY,
    CLUSTER_READY,
    STATUS_NEVER_UPDATED,
    STATUS_UNKNOWN,
    TAINT_NOT_READY,
    TAINT_UNREACHABLE,
    ApiServerHealth,
    FlapGuard,
    MemberReport,
    damped_ready,
    find_condition,
    format_time,
    monitored_conditions,
    observed_ready,
    ready_status,
    reported_status,
    scheduling_taints,
)

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
THRESHOLD = timedelta(seconds=30)


def ready(status: str) -> dict[str, Any]:
    return {"type": "Ready", "status": status}


# -- TestThresholdAdjustedReadyCondition -------------------------------------------------------

@pytest.mark.parametrize(("case", "guard", "current", "observed", "expected"), [
    ("cluster just joined in ready state", None, None, "True", "True"),
    ("cluster just joined in not-ready state", None, None, "False", "False"),
    ("cluster stays ready", FlapGuard("True"), "True", "True", "True"),
    ("cluster becomes not ready but still not reach failure threshold",
     FlapGuard("False", NOW - THRESHOLD / 2), "True", "False", "True"),
    ("cluster becomes not ready and reaches failure threshold",
     FlapGuard("False", NOW - THRESHOLD), "True", "False", "False"),
    ("cluster stays not ready", FlapGuard("False", NOW - 2 * THRESHOLD), "False", "False",
     "False"),
    ("cluster recovers but still not reach success threshold",
     FlapGuard("True", NOW - THRESHOLD / 2), "False", "True", "False"),
    ("cluster recovers and reaches success threshold",
     FlapGuard("True", NOW - THRESHOLD), "False", "True", "True"),
    ("ready condition changes from true to false",
     FlapGuard("True", NOW - timedelta(minutes=10)), "True", "False", "True"),
    ("ready condition changes from false to true",
     FlapGuard("False", NOW - timedelta(minutes=10)), "False", "True", "False"),
    ("current condition is nil, should return observed condition",
     FlapGuard("False", NOW - THRESHOLD), None, "True", "True"),
])
def test_threshold_adjusted_ready_condition(case: str, guard: FlapGuard | None,
                                            current: str | None, observed: str,
                                            expected: str) -> None:
    got, _ = damped_ready(guard, None if current is None else ready(current), ready(observed),
                          NOW, success_threshold=THRESHOLD, failure_threshold=THRESHOLD)
    assert got["status"] == expected, case


def test_the_guard_remembers_when_the_observation_changed() -> None:
    _, guard = damped_ready(FlapGuard("True"), ready("True"), ready("False"), NOW)
    assert guard == FlapGuard("False", NOW)
    held, guard = damped_ready(guard, ready("True"), ready("False"), NOW + THRESHOLD)
    assert held["status"] == "False"
    assert guard.since == NOW


# -- TestGenerateReadyCondition ----------------------------------------------------------------

@pytest.mark.parametrize(("health", "status", "reason"), [
    (ApiServerHealth.HEALTHY, "True", CLUSTER_READY),
    (ApiServerHealth.UNHEALTHY, "False", CLUSTER_NOT_READY),
    (ApiServerHealth.UNREACHABLE, "False", CLUSTER_NOT_REACHABLE),
])
def test_generate_ready_condition(health: ApiServerHealth, status: str, reason: str) -> None:
    condition = observed_ready(health)
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "Ready", status, reason)
    assert condition["message"]


# -- TestController_Reconcile: taints by condition ---------------------------------------------

def taint(key: str) -> dict[str, Any]:
    return {"key": key, "effect": "NoSchedule"}


@pytest.mark.parametrize(("case", "taints", "conditions", "expected"), [
    ("cluster without status", [], [], [TAINT_NOT_READY]),
    ("cluster with ready condition", [taint(TAINT_NOT_READY)], [ready("True")], []),
    ("cluster with unknown condition", [taint(TAINT_NOT_READY)], [ready("Unknown")],
     [TAINT_UNREACHABLE]),
    ("cluster with false condition", [taint(TAINT_UNREACHABLE)], [ready("False")],
     [TAINT_NOT_READY]),
])
def test_taints_follow_the_ready_condition(case: str, taints: list[dict[str, Any]],
                                           conditions: list[dict[str, Any]],
                                           expected: list[str]) -> None:
    got = scheduling_taints(taints, conditions, NOW)
    assert [t["key"] for t in got] == expected, case
    assert all(t["effect"] == "NoSchedule" for t in got)


def test_an_added_taint_is_stamped_and_others_keep_their_place() -> None:
    user = {"key": "example.com/maintenance", "effect": "NoExecute"}
    got = scheduling_taints([user, taint(TAINT_NOT_READY)], [ready("Unknown")], NOW)
    assert got == [user, {**taint(TAINT_UNREACHABLE), "timeAdded": format_time(NOW)}]


def test_taints_already_right_are_left_as_they_are() -> None:
    existing = [{**taint(TAINT_UNREACHABLE), "timeAdded": "2025-01-01T00:00:00Z"}]
    assert scheduling_taints(existing, [ready("Unknown")], NOW) == existing


def test_a_taint_with_another_effect_is_not_karmadas() -> None:
    """Karmada matches a taint by key and effect: a NoExecute not-ready taint stays, and the
    NoSchedule one is added beside it."""
    mine = {"key": TAINT_NOT_READY, "effect": "NoExecute"}
    got = scheduling_taints([mine], [ready("False")], NOW)
    assert got[0] == mine
    assert got[1]["key"] == TAINT_NOT_READY
    assert got[1]["effect"] == "NoSchedule"


# -- TestController_monitorClusterHealth and the grace periods ---------------------------------

def test_cluster_without_status_turns_unknown_after_the_startup_grace_period() -> None:
    created = NOW - timedelta(seconds=61)
    got = monitored_conditions([], created=created, last_heartbeat=None, now=NOW)
    assert got == [{"type": "Ready", "status": "Unknown", "reason": STATUS_NEVER_UPDATED,
                    "message": got[0]["message"], "lastTransitionTime": format_time(NOW)}]
    assert monitored_conditions([], created=NOW - timedelta(seconds=60), last_heartbeat=None,
                                now=NOW) == []


def test_cluster_with_ready_condition_and_a_fresh_heartbeat_is_unchanged() -> None:
    conditions = [{**ready("True"), "reason": CLUSTER_READY, "lastTransitionTime": "x"}]
    assert monitored_conditions(conditions, created=NOW - timedelta(hours=1),
                                last_heartbeat=NOW, now=NOW) == conditions


@pytest.mark.parametrize(("silence", "expected"), [(40, "True"), (41, "Unknown")])
def test_ready_turns_unknown_strictly_after_40_seconds_without_a_heartbeat(
        silence: int, expected: str) -> None:
    conditions = [{**ready("True"), "reason": CLUSTER_READY,
                   "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    got = monitored_conditions(conditions, created=NOW - timedelta(hours=1),
                               last_heartbeat=NOW - timedelta(seconds=silence), now=NOW)
    assert got[0]["status"] == expected
    if expected == "Unknown":
        assert got[0]["reason"] == STATUS_UNKNOWN
        assert got[0]["lastTransitionTime"] == format_time(NOW)


def test_an_unknown_condition_keeps_its_reason_and_time() -> None:
    conditions = [{**ready("Unknown"), "reason": STATUS_UNKNOWN,
                   "lastTransitionTime": "2026-01-01T11:00:00Z"}]
    assert monitored_conditions(conditions, created=NOW - timedelta(hours=2),
                                last_heartbeat=NOW - timedelta(hours=1), now=NOW) == conditions


def test_a_false_condition_goes_unknown_too_when_heartbeats_stop() -> None:
    conditions = [{**ready("False"), "reason": CLUSTER_NOT_READY, "lastTransitionTime": "t"}]
    got = monitored_conditions(conditions, created=NOW - timedelta(hours=1),
                               last_heartbeat=NOW - timedelta(minutes=5), now=NOW)
    assert got[0]["status"] == "Unknown"
    assert scheduling_taints([], got, NOW)[0]["key"] == TAINT_UNREACHABLE


# -- the agent's report ------------------------------------------------------------------------

NODES = [{"status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                     "conditions": [ready("True")]}} for _ in range(2)]
PODS = [{"spec": {"nodeName": "n1", "containers": [{"resources": {"requests": {"cpu": "1"}}}]},
         "status": {"phase": "Running"}}]


def test_a_healthy_report_sets_ready_version_and_summaries() -> None:
    report = MemberReport(ApiServerHealth.HEALTHY, "v1.31.0", NODES, PODS)
    status, guard = reported_status({}, report, None, NOW)
    assert find_condition(status["conditions"]) == {
        **observed_ready(ApiServerHealth.HEALTHY), "lastTransitionTime": format_time(NOW)}
    assert status["kubernetesVersion"] == "v1.31.0"
    assert status["nodeSummary"] == {"totalNum": 2, "readyNum": 2}
    assert status["resourceSummary"] == {
        "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "220"},
        "allocated": {"cpu": "1", "pods": "1"},
    }
    assert guard == FlapGuard("True")
    assert ready_status({"status": status}) == "True"


def test_an_unhealthy_report_keeps_the_last_summary_until_the_threshold_then_says_false() -> None:
    healthy, guard = reported_status({}, MemberReport(ApiServerHealth.HEALTHY, "v1.31.0", NODES),
                                     None, NOW)
    sick = MemberReport(ApiServerHealth.UNHEALTHY)
    held, guard = reported_status(healthy, sick, guard, NOW + timedelta(seconds=1))
    assert (find_condition(held["conditions"]) or {}).get("status") == "True"
    later = NOW + timedelta(seconds=31)
    down, _ = reported_status(held, sick, guard, later)
    condition = find_condition(down["conditions"]) or {}
    assert condition["status"] == "False"
    assert condition["reason"] == CLUSTER_NOT_READY
    assert condition["lastTransitionTime"] == format_time(later)
    assert down["resourceSummary"] == healthy["resourceSummary"]
    assert down["kubernetesVersion"] == "v1.31.0"


def test_a_member_without_nodes_reports_empty_summaries() -> None:
    status, _ = reported_status({"kubernetesVersion": "v1.30.0"},
                                MemberReport(ApiServerHealth.HEALTHY), None, NOW)
    assert status["nodeSummary"] == {}
    assert status["resourceSummary"] == {}
    assert "kubernetesVersion" not in status


def test_no_condition_reads_unknown_as_kubectl_prints_it() -> None:
    assert ready_status({}) == "Unknown"


# -- properties over any history -----------------------------------------------------------------

REPORTS = st.lists(st.tuples(st.integers(0, 120), st.sampled_from(list(ApiServerHealth))),
                   max_size=12)


@settings(max_examples=100, deadline=None)
@given(reports=REPORTS, silence=st.integers(0, 120))
def test_any_history_ends_with_the_taint_its_ready_status_calls_for(
        reports: list[tuple[int, ApiServerHealth]], silence: int) -> None:
    """Whatever the agent reported and however long it then stayed silent, the member carries
    exactly the Karmada taint its Ready status calls for, and tainting again changes nothing."""
    created = NOW
    status: dict[str, Any] = {}
    taints: list[dict[str, Any]] = []
    guard: FlapGuard | None = None
    moment, last = created, None
    for gap, health in reports:
        moment += timedelta(seconds=gap)
        status, guard = reported_status(status, MemberReport(health, "v1.31.0"), guard, moment)
        last = moment
        taints = scheduling_taints(taints, status["conditions"], moment)
    now = moment + timedelta(seconds=silence)
    conditions = monitored_conditions(status.get("conditions"), created=created,
                                      last_heartbeat=last, now=now)
    taints = scheduling_taints(taints, conditions, now)
    expected = {"True": [], "False": [TAINT_NOT_READY], "Unknown": [TAINT_UNREACHABLE]}
    ready = find_condition(conditions)
    want = [TAINT_NOT_READY] if ready is None else expected[ready["status"]]
    assert [t["key"] for t in taints] == want
    assert scheduling_taints(taints, conditions, now + timedelta(seconds=1)) == taints
    if last is not None and silence > 40:
        assert ready is not None
        assert ready["status"] == "Unknown"
