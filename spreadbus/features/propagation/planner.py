"""What the planner runs of propagation: :class:`~.planning.rule.PropagationRule`, once, for the
host (the planner's own cluster), reading the members' objects by their cluster keys."""

from __future__ import annotations

from spreadbus.engine.feature import PlannerContext, PlannerSide
from spreadbus.features.propagation.planning.rule import PropagationRule
from spreadbus.features.propagation.settings import PropagationSettings


async def planner_side(ctx: PlannerContext[PropagationSettings]) -> PlannerSide:
    return PlannerSide(rules=[PropagationRule(
        ctx.cluster, ctx.shards, eviction_rate=ctx.settings.resource_eviction_rate)])
