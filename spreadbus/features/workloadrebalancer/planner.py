"""What the planner runs of WorkloadRebalancer: :class:`~.planning.rule.WorkloadRebalancerRule`
(the status, the rebalance request on the governing placement, the delete after the TTL)."""

from __future__ import annotations

from spreadbus.engine.feature import PlannerContext, PlannerSide
from spreadbus.features.workloadrebalancer.planning.rule import WorkloadRebalancerRule
from spreadbus.projection.cluster_rules import EveryCluster


async def planner_side(ctx: PlannerContext) -> PlannerSide:
    return PlannerSide(rules=[EveryCluster(
        lambda cluster: WorkloadRebalancerRule(cluster, ctx.shards), home=ctx.cluster)])
