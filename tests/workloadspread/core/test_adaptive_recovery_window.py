"""The Adaptive recovery window is a parameter of the pure planning functions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.model import from_object
from spreadbus.features.workloadspread.core.reconcile import plan_workloadspread
from tests.workloadspread.core.builders import deployment, subset, workloadspread

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
TURNED_FALSE = NOW - timedelta(seconds=60)


def _plan(window: float | None = None) -> tuple[str, datetime | None]:
    raw = workloadspread(
        subset("a", 3),
        subset("b"),
        strategy={"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30}},
        status={
            "subsetStatuses": [
                {
                    "name": "a",
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
    )
    ws = from_object(raw)
    if window is None:
        plan = plan_workloadspread(
            ws, workload=deployment(replicas=3), pods=[], nodes={}, now=NOW, whitelist=Whitelist()
        )
    else:
        plan = plan_workloadspread(
            ws,
            workload=deployment(replicas=3),
            pods=[],
            nodes={},
            now=NOW,
            whitelist=Whitelist(),
            recover_after_seconds=window,
        )
    first = plan.status.subset_statuses[0]
    condition = first.condition("Schedulable")
    assert condition is not None
    return condition.status, plan.requeue_at


def test_the_default_window_is_kruises_five_minutes() -> None:
    assert _plan() == ("False", TURNED_FALSE + timedelta(seconds=300))


@pytest.mark.parametrize("seconds", [10.0, 59.0])
def test_a_subset_recovers_once_a_shorter_window_has_passed(seconds: float) -> None:
    status, _ = _plan(seconds)
    assert status == "True"


@pytest.mark.parametrize("seconds", [61.0, 600.0])
def test_a_subset_stays_unschedulable_within_the_window_and_asks_to_look_again_at_its_end(
    seconds: float,
) -> None:
    assert _plan(seconds) == (
        "False",
        TURNED_FALSE + timedelta(seconds=seconds),
    )
