"""What the planner runs of UnitedDeployment: :class:`~.planning.rule.UnitedDeploymentRule`,
reconciling every UnitedDeployment into its subset workloads, revisions, pod labels and status."""

from __future__ import annotations

from spreadbus.engine.feature import PlannerContext, PlannerSide
from spreadbus.features.uniteddeployment.core.reconcile import reconcile_grouped
from spreadbus.features.uniteddeployment.planning.rule import Fleet, UnitedDeploymentRule
from spreadbus.features.uniteddeployment.settings import UnitedDeploymentSettings
from spreadbus.projection.cluster_rules import EveryCluster


async def planner_side(ctx: PlannerContext[UnitedDeploymentSettings]) -> PlannerSide:
    fleet = Fleet()  # one per planner: a UD's rule reads its subsets in the other clusters

    def rule_for(cluster: str) -> UnitedDeploymentRule:
        return UnitedDeploymentRule(
            cluster, reconcile=reconcile_grouped,
            min_interval_seconds=ctx.settings.uniteddeployment_min_interval_seconds,
            fleet=fleet,
            control_plane=cluster == ctx.cluster
            and ctx.settings.uniteddeployment_control_plane,
        )

    return PlannerSide(rules=[EveryCluster(rule_for, home=ctx.cluster)])
