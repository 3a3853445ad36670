"""What the planner runs of PodUnavailableBudget: :class:`~.planning.rule.BudgetRule`, with the
budget bucket's stream folded beside the observations (:mod:`.planning.budget_records`)."""

from __future__ import annotations

from spreadbus.engine.feature import PlannerContext, PlannerSide, SideStream
from spreadbus.features.podunavailablebudget.core.budget_ledger import STREAM
from spreadbus.features.podunavailablebudget.planning.budget_records import (
    BUDGETS_RESOURCE,
    BudgetRecords,
)
from spreadbus.features.podunavailablebudget.planning.rule import BudgetRule
from spreadbus.features.podunavailablebudget.settings import PodUnavailableBudgetSettings
from spreadbus.projection.cluster_rules import EveryCluster


async def planner_side(ctx: PlannerContext[PodUnavailableBudgetSettings]) -> PlannerSide:
    records = BudgetRecords()

    def rule_for(cluster: str) -> BudgetRule:
        # The bucket's stream folded below holds every cluster's budgets.
        return BudgetRule(cluster, records=records.of(cluster),
                          min_interval_seconds=ctx.settings.pub_min_interval_seconds)

    side = SideStream(stream=STREAM, fold=records.apply, resource=BUDGETS_RESOURCE)
    return PlannerSide(rules=[EveryCluster(rule_for, home=ctx.cluster)], streams=[side])
