"""One scheduling round of a held binding: the taint manager's evictions, Karmada's scheduler,
and the graceful-eviction tasks that survive it.

The planner's rule and ``spreadbus plan`` run the same round, so the binding they write and the
one they print cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import msgspec

from kubesemantics.lenient_json import as_str
from spreadbus.features.propagation.core.bindings import HeldBinding
from spreadbus.features.propagation.core.cluster import Cluster
from spreadbus.features.propagation.core.policy import applied_placement
from spreadbus.features.propagation.planning.eviction import Eviction, evict
from spreadbus.features.propagation.planning.graceful_eviction import assess
from spreadbus.features.propagation.planning.schedule import Binding, Round, schedule


class BindingRound(msgspec.Struct, frozen=True):
    evicted: Eviction
    """The binding's clusters and tasks after the taint manager's pass."""
    result: Round
    tasks: tuple[Mapping[str, Any], ...]
    """The graceful-eviction tasks kept after the round."""


def binding_round(held: HeldBinding, clusters: Sequence[Cluster], now: datetime, *,
                  observed: bool = True) -> BindingRound:
    """The round at ``now``; ``observed``: the scheduler had observed the binding's current
    generation before it (a task waits for the schedule that replaces its copy)."""
    evicted = evict(held.clusters, held.eviction_tasks, clusters,
                    applied_placement(held.annotations), held.failover, now)
    binding = Binding(
        api_version=held.resource.api_version, kind=held.resource.kind,
        placement=held.placement, replicas=held.replicas, workload=held.workload,
        request=held.request, uid=held.resource.uid, clusters=evicted.clusters,
        annotations=held.annotations, reschedule_triggered_at=held.reschedule_triggered_at,
        last_scheduled_time=held.last_scheduled_time, observed_affinity=held.observed_affinity,
        evicting=tuple(as_str(t.get("fromCluster")) for t in evicted.tasks),
        deleting=held.deleting)
    result = schedule(binding, clusters, now)
    tasks = evicted.tasks
    if not held.deleting:
        # The scheduler marks the generation observed when it succeeds or finds nothing to do.
        tasks = assess(tasks, now, targets=[t.name for t in result.clusters], health=held.health,
                       scheduled=observed and (result.succeeded or not result.scheduled)).kept
    return BindingRound(evicted=evicted, result=result, tasks=tasks)
