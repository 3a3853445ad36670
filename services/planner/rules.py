"""The rules this planner runs, in one place; a new placement rule is added here.

Each rule is a pure object satisfying :class:`spreadbus.projection.planning.Rule`; the planner
runs them in this order on every decision round and publishes their plans.
"""

from __future__ import annotations

from spreadbus.core.workloadspread.custom_workloads import Whitelist
from spreadbus.core.workloadspread.reschedule import RECOVER_AFTER
from spreadbus.projection.observed_generation import ObservedGeneration
from spreadbus.projection.planning import Rule
from spreadbus.projection.reservations import ReservationLedgers
from spreadbus.projection.workloadspread import WorkloadSpreadRule


def default_rules(
    cluster: str,
    *,
    reservations: ReservationLedgers | None = None,
    whitelist: Whitelist | None = None,
    adaptive_recover_seconds: float = RECOVER_AFTER.total_seconds(),
    workloadspread_min_interval_seconds: float = 0.25,
) -> list[Rule]:
    return [
        ObservedGeneration(cluster),
        WorkloadSpreadRule(cluster, reservations=reservations, whitelist=whitelist,
                           recover_after_seconds=adaptive_recover_seconds,
                           min_interval_seconds=workloadspread_min_interval_seconds),
    ]
