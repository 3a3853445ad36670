"""What the planner runs of the cluster registry: :class:`~.planning.rule.ClusterStatusRule` over
the host's Cluster objects, with the heartbeat bucket's stream folded beside it. Cluster objects
are cluster-scoped: under planner shards only the shard owning the cluster-scoped objects
decides them, so no two shards write one Cluster."""

from __future__ import annotations

from datetime import timedelta

from spreadbus.clusterregistry.heartbeat import STREAM
from spreadbus.engine.feature import PlannerContext, PlannerSide, SideStream
from spreadbus.features.clusters.planning.rule import (
    HEARTBEATS_RESOURCE,
    ClusterStatusRule,
    Heartbeats,
)
from spreadbus.features.clusters.settings import ClusterSettings


async def planner_side(ctx: PlannerContext[ClusterSettings]) -> PlannerSide:
    if not ctx.shards.owns(""):
        return PlannerSide(rules=[])
    heartbeats = Heartbeats()
    rule = ClusterStatusRule(
        ctx.cluster, heartbeats,
        grace_period=timedelta(seconds=ctx.settings.cluster_monitor_grace_seconds),
        startup_grace_period=timedelta(seconds=ctx.settings.cluster_startup_grace_seconds),
        success_threshold=timedelta(seconds=ctx.settings.cluster_success_threshold_seconds),
        failure_threshold=timedelta(seconds=ctx.settings.cluster_failure_threshold_seconds))
    return PlannerSide(rules=[rule], streams=[SideStream(stream=STREAM, fold=heartbeats.apply,
                                                         resource=HEARTBEATS_RESOURCE)])
