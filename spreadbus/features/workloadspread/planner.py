"""What the planner runs of WorkloadSpread: :class:`~.planning.rule.WorkloadSpreadRule` (status,
deletion costs, Adaptive evictions, matched annotations, rebalancing on request) over the
projection, with the reservation bucket's stream folded beside it (:mod:`.planning.reservations`).
"""

from __future__ import annotations

from spreadbus.engine.feature import PlannerContext, PlannerSide, SideStream
from spreadbus.features.workloadspread.core.reservation_contract import (
    STREAM as RESERVATIONS_STREAM,
)
from spreadbus.features.workloadspread.planning.reservations import (
    RESERVATIONS_RESOURCE,
    ReservationLedgers,
)
from spreadbus.features.workloadspread.planning.rule import WorkloadSpreadRule
from spreadbus.features.workloadspread.settings import WorkloadSpreadSettings


async def planner_side(ctx: PlannerContext[WorkloadSpreadSettings]) -> PlannerSide:
    ledgers = ReservationLedgers(ctx.cluster)
    rule = WorkloadSpreadRule(
        ctx.cluster,
        reservations=ledgers,
        whitelist=ctx.settings.whitelist(),
        recover_after_seconds=ctx.settings.adaptive_recover_seconds,
        min_interval_seconds=ctx.settings.workloadspread_min_interval_seconds,
        max_unavailable=ctx.settings.max_unavailable(),
        repair_unsteered=ctx.settings.repair_unsteered_pods,
    )

    return PlannerSide(
        rules=[rule],
        streams=[SideStream(stream=RESERVATIONS_STREAM, fold=ledgers.apply,
                            resource=RESERVATIONS_RESOURCE)],
    )
