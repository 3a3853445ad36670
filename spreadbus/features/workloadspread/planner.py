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
from spreadbus.projection.cluster_rules import EveryCluster


async def planner_side(ctx: PlannerContext[WorkloadSpreadSettings]) -> PlannerSide:
    ledgers = ReservationLedgers()

    def rule_for(cluster: str) -> WorkloadSpreadRule:
        # The bucket's stream folded below holds every cluster's reservations.
        return WorkloadSpreadRule(
            cluster,
            reservations=ledgers.of(cluster),
            whitelist=ctx.settings.whitelist(),
            recover_after_seconds=ctx.settings.adaptive_recover_seconds,
            min_interval_seconds=ctx.settings.workloadspread_min_interval_seconds,
            max_unavailable=ctx.settings.max_unavailable(),
            repair_unsteered=ctx.settings.repair_unsteered_pods,
        )

    return PlannerSide(
        rules=[EveryCluster(rule_for, home=ctx.cluster)],
        streams=[SideStream(stream=RESERVATIONS_STREAM, fold=ledgers.apply,
                            resource=RESERVATIONS_RESOURCE)],
    )
