"""One scheduling round of a held binding: the taint manager's evictions, the application
failover controller's, Karmada's scheduler, and the graceful-eviction tasks that survive it.

The planner's rule and ``spreadbus plan`` run the same round, so the binding they write and the
one they print cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import msgspec

from kubesemantics.lenient_json import as_map, as_str
from spreadbus.features.propagation.core.bindings import HeldBinding
from spreadbus.features.propagation.core.cluster import Cluster
from spreadbus.features.propagation.core.policy import applied_placement
from spreadbus.features.propagation.planning.application_failover import (
    CRB_PRODUCER,
    RB_PRODUCER,
    fail_over,
    next_due,
    unhealthy_since,
)
from spreadbus.features.propagation.planning.eviction import Eviction, evict
from spreadbus.features.propagation.planning.graceful_eviction import assess, next_end
from spreadbus.features.propagation.planning.schedule import Binding, Round, schedule


class BindingRound(msgspec.Struct, frozen=True):
    evicted: Eviction
    """The binding's clusters and tasks after the taint manager's and the application failover
    controller's passes."""
    result: Round
    tasks: tuple[Mapping[str, Any], ...]
    """The graceful-eviction tasks kept after the round."""
    unhealthy_since: Mapping[str, datetime] = {}
    """The application failover timers still running."""
    taint_evicted: bool = False
    """The taint manager evicted the binding from a cluster this round."""
    runs_out: datetime | None = None
    """When a kept task's grace period or a running timer runs out, with no event to tell."""


def binding_round(held: HeldBinding, clusters: Sequence[Cluster], now: datetime, *,
                  observed: bool = True, taint_evictions: bool = True) -> BindingRound:
    """The round at ``now``; ``observed``: the scheduler had observed the binding's current
    generation before it (a task waits for the schedule that replaces its copy);
    ``taint_evictions``: the taint manager may evict now (its queue's rate allows it)."""
    if taint_evictions:
        tainted = evict(held.clusters, held.eviction_tasks, clusters,
                        applied_placement(held.annotations), held.failover, now)
    else:
        tainted = Eviction(clusters=tuple(held.clusters), tasks=tuple(held.eviction_tasks))
    raw_application = as_map(held.failover).get("application")
    application = raw_application if isinstance(raw_application, Mapping) else None
    failover = fail_over(tainted.clusters, tainted.tasks, held.health,
                         unhealthy_since(held.annotations), application, now,
                         producer=CRB_PRODUCER if held.cluster_scoped else RB_PRODUCER)
    evicted = Eviction(clusters=failover.clusters, tasks=failover.tasks)
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
    ends = [t for t in (next_end(tasks), next_due(failover.since, application)) if t is not None]
    return BindingRound(evicted=evicted, result=result, tasks=tasks,
                        unhealthy_since=failover.since,
                        taint_evicted=len(tainted.tasks) > len(held.eviction_tasks),
                        runs_out=min(ends) if ends else None)
