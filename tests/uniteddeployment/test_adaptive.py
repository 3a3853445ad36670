"""Default Adaptive: timed-out pending pods and the subset Schedulable window.

The tables port Kruise's own cases (``TestDefaultAdaptiveStrategy`` and the pending-pod cases of
``TestCheckPodReserved``) with times on whole seconds, as they are stored.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spreadbus.features.uniteddeployment.core.adaptive import (
    default_adaptive_round,
    pending_timeout,
)
from spreadbus.features.uniteddeployment.core.conditions import find_condition, format_time
from spreadbus.features.uniteddeployment.core.model import ScheduleStrategy
from tests.uniteddeployment.pod_builders import pod

NOW = datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)
S = timedelta(seconds=1)
ADAPTIVE = ScheduleStrategy(type="Adaptive")


def schedulable(status: str, at: datetime | None = None, reason: str = "") -> list[dict[str, Any]]:
    found: dict[str, Any] = {"type": "Schedulable", "status": status}
    if at is not None:
        found["lastTransitionTime"] = format_time(at)
    if reason:
        found["reason"] = reason
    return [found]


# --- pending_timeout -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("created_ago", "timed_out", "recheck"),
    [(3, False, 7), (11, True, None), (10, False, None)],
    ids=["not-yet", "timed-out", "exactly-at-deadline-is-not-strictly-before"],
)
def test_pending_pod_clock_starts_at_creation(
    created_ago: int, timed_out: bool, recheck: int | None
) -> None:
    found = pending_timeout(pod(created=NOW - created_ago * S, unschedulable=True), 10 * S, NOW)
    assert found.timed_out is timed_out
    if recheck is None:
        assert found.recheck_after is None or found.recheck_after <= timedelta(0)
    else:
        assert found.recheck_after == recheck * S


@pytest.mark.parametrize(
    "candidate",
    [
        pod(created=NOW - 100 * S, phase="Running", unschedulable=True),
        pod(created=NOW - 100 * S, unschedulable=True, node="n1"),
        pod(created=NOW - 100 * S, unschedulable=True, deleted=NOW),
        pod(created=NOW - 100 * S, scheduled=True),
        pod(created=NOW - 100 * S),
    ],
    ids=["running", "bound", "deleting", "scheduled", "no-condition"],
)
def test_only_unbound_unschedulable_pending_pods_count(candidate: dict[str, Any]) -> None:
    found = pending_timeout(candidate, 10 * S, NOW)
    assert not found.timed_out
    assert found.recheck_after is None


def test_missing_creation_time_reads_as_long_ago() -> None:
    candidate = pod(created=NOW, unschedulable=True)
    del candidate["metadata"]["creationTimestamp"]
    assert pending_timeout(candidate, 10 * S, NOW).timed_out


# --- default_adaptive_round: Kruise's four cases ---------------------------------------------


def test_not_timed_out_yet_requeues_at_the_deadline() -> None:
    verdict = default_adaptive_round(
        schedulable("True"),
        replicas=1,
        ready_replicas=0,
        pods=[pod(created=NOW - 15 * S, unschedulable=True)],
        strategy=ADAPTIVE,
        now=NOW,
    )
    assert (verdict.unschedulable, verdict.pending_pods) == (False, 0)
    assert verdict.requeue_after == 15 * S
    assert verdict.conditions == schedulable("True")


def test_timed_out_marks_unschedulable_for_the_window() -> None:
    verdict = default_adaptive_round(
        schedulable("True"),
        replicas=1,
        ready_replicas=0,
        pods=[pod(created=NOW - 31 * S, unschedulable=True)],
        strategy=ADAPTIVE,
        now=NOW,
    )
    assert (verdict.unschedulable, verdict.pending_pods) == (True, 1)
    assert verdict.requeue_after == 300 * S
    assert verdict.conditions == [
        {
            "type": "Schedulable",
            "status": "False",
            "lastTransitionTime": format_time(NOW),
            "reason": "reschedule",
            "message": "timeout pending pods found",
        }
    ]


def test_during_unschedulable_window_waits_for_its_end() -> None:
    verdict = default_adaptive_round(
        schedulable("False", NOW - 60 * S),
        replicas=1,
        ready_replicas=1,
        pods=[pod(created=NOW - 15 * S, unschedulable=True)],
        strategy=ADAPTIVE,
        now=NOW,
    )
    assert (verdict.unschedulable, verdict.pending_pods) == (True, 0)
    assert verdict.requeue_after == 240 * S
    assert verdict.conditions == schedulable("False", NOW - 60 * S)


def test_after_window_recovers_with_go_float_message() -> None:
    verdict = default_adaptive_round(
        schedulable("False", NOW - 60 * S - 300 * S),
        replicas=1,
        ready_replicas=0,
        pods=[pod(created=NOW - 15 * S, scheduled=True)],
        strategy=ADAPTIVE,
        now=NOW,
    )
    assert (verdict.unschedulable, verdict.pending_pods) == (False, 0)
    assert verdict.requeue_after is None
    assert verdict.conditions == [
        {
            "type": "Schedulable",
            "status": "True",
            "lastTransitionTime": format_time(NOW),
            "reason": "recover",
            "message": "unschedulable subset recovered after 300.000000 seconds",
        }
    ]


def test_custom_durations_and_message() -> None:
    strategy = ScheduleStrategy(
        type="Adaptive", has_adaptive=True, reschedule_critical_seconds=5, unschedulable_seconds=42
    )
    verdict = default_adaptive_round(
        schedulable("False", NOW - 42 * S),
        replicas=2,
        ready_replicas=1,
        pods=[pod(created=NOW - 6 * S, unschedulable=True)],
        strategy=strategy,
        now=NOW,
    )
    # window over (42s is not before now) -> recover, then the stuck pod flips it straight back
    assert verdict.unschedulable
    assert verdict.pending_pods == 1
    assert verdict.requeue_after == 42 * S
    written = find_condition(verdict.conditions, "Schedulable")
    assert written is not None
    assert (written["status"], written["reason"], written["lastTransitionTime"]) == (
        "False",
        "reschedule",
        format_time(NOW),
    )


def test_still_stuck_pods_do_not_extend_the_window() -> None:
    start = NOW - 100 * S
    verdict = default_adaptive_round(
        schedulable("False", start, reason="reschedule"),
        replicas=1,
        ready_replicas=0,
        pods=[pod(created=NOW - 200 * S, unschedulable=True)],
        strategy=ADAPTIVE,
        now=NOW,
    )
    assert verdict.unschedulable
    written = find_condition(verdict.conditions, "Schedulable")
    assert written is not None
    assert written["lastTransitionTime"] == format_time(start)
    # the window end (200 s) comes before another full window (300 s)
    assert verdict.requeue_after == 200 * S


def test_pods_are_not_scanned_when_all_ready() -> None:
    verdict = default_adaptive_round(
        [],
        replicas=1,
        ready_replicas=1,
        pods=[pod(created=NOW - 100 * S, unschedulable=True)],
        strategy=ADAPTIVE,
        now=NOW,
    )
    assert not verdict.unschedulable
    assert verdict.pending_pods == 0
    assert verdict.conditions == []


# --- properties ------------------------------------------------------------------------------


@given(
    ages=st.lists(st.integers(min_value=0, max_value=100), max_size=6),
    critical=st.integers(min_value=0, max_value=60),
    marked_ago=st.one_of(st.none(), st.integers(min_value=0, max_value=600)),
)
def test_round_properties(ages: list[int], critical: int, marked_ago: int | None) -> None:
    strategy = ScheduleStrategy(
        type="Adaptive", has_adaptive=True, reschedule_critical_seconds=critical
    )
    conditions = [] if marked_ago is None else schedulable("False", NOW - marked_ago * S)
    pods = [pod(f"p{i}", created=NOW - age * S, unschedulable=True) for i, age in enumerate(ages)]
    verdict = default_adaptive_round(
        conditions, replicas=len(pods) + 1, ready_replicas=0, pods=pods, strategy=strategy, now=NOW
    )
    stuck = sum(1 for age in ages if age > critical)
    assert verdict.pending_pods == stuck
    in_window = marked_ago is not None and marked_ago < 300
    assert verdict.unschedulable == (stuck > 0 or in_window)
    # wake-ups are positive and no later than any reason to look again
    if verdict.requeue_after is not None:
        assert verdict.requeue_after > timedelta(0)
    candidates = [(critical - age) * S for age in ages if age < critical]
    if stuck:
        candidates.append(300 * S)
    if in_window:
        assert marked_ago is not None
        candidates.append((300 - marked_ago) * S)
    assert verdict.requeue_after == (min(candidates) if candidates else None)
    written = find_condition(verdict.conditions, "Schedulable")
    if stuck:
        assert written is not None
        assert written["status"] == "False"
    elif marked_ago is not None:
        assert written is not None
        assert written["status"] == ("False" if in_window else "True")


def test_window_ends_exactly_at_its_length() -> None:
    # lastTransitionTime + unschedulableDuration == now is not "before", so the subset recovers
    verdict = default_adaptive_round(
        schedulable("False", NOW - 300 * S, reason="reschedule"),
        replicas=1,
        ready_replicas=1,
        pods=[],
        strategy=ADAPTIVE,
        now=NOW,
    )
    assert not verdict.unschedulable
    written = find_condition(verdict.conditions, "Schedulable")
    assert written is not None
    assert (written["status"], written["reason"]) == ("True", "recover")
    one_second_earlier = default_adaptive_round(
        schedulable("False", NOW - 299 * S, reason="reschedule"),
        replicas=1,
        ready_replicas=1,
        pods=[],
        strategy=ADAPTIVE,
        now=NOW,
    )
    assert one_second_earlier.unschedulable
    assert one_second_earlier.requeue_after == S
