"""The propagation answers of ``spreadbus validate`` and ``spreadbus plan``, offline.

``plan``: ``"resourceBindings": {"<namespace>/<name>" | "<name>": {...}}``, one entry per
binding the host holds (:mod:`.core.bindings`), after one round of the scheduler at ``--now``
(:mod:`.planning.schedule`), which runs once the cluster controller has set its health taints
(:func:`.core.cluster.with_health_taints`) and the taint manager has made the evictions due
then (:mod:`.planning.eviction`), and before the graceful eviction controller ends the tasks
whose grace period passed or whose replacements are healthy
(:mod:`.planning.graceful_eviction`): the resource, the replicas, ``spec.clusters`` after the round,
whether the scheduler ran and in which mode, why it failed, the rebalance trigger, the graceful
eviction tasks, and per target cluster the object spreadbus creates or patches there. A failed
round leaves no work where Karmada would leave ``spec.clusters`` empty. Without any binding the
key is left out, so the answer for a file without Karmada objects is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from kubesemantics.karmada_binding import is_member_object
from kubesemantics.lenient_json import as_int, as_str
from kubesemantics.timestamps import format_time
from spreadbus.engine.feature import OfflinePlan, OfflineValidation
from spreadbus.features.propagation.core.bindings import HeldBinding, held_bindings
from spreadbus.features.propagation.core.cluster import (
    Cluster,
    from_object,
    is_cluster,
    with_health_taints,
)
from spreadbus.features.propagation.core.interpreter import work
from spreadbus.features.propagation.core.validation import (
    validate_binding,
    validate_cluster,
    validate_policy,
)
from spreadbus.features.propagation.planning.binding_round import binding_round

JSON = dict[str, Any]


def validate_policy_offline(obj: JSON, *, old: JSON | None,
                            context: Sequence[JSON]) -> OfflineValidation:
    return OfflineValidation(errors=validate_policy(obj))


def validate_binding_offline(obj: JSON, *, old: JSON | None,
                             context: Sequence[JSON]) -> OfflineValidation:
    return OfflineValidation(errors=validate_binding(obj))


def validate_cluster_offline(obj: JSON, *, old: JSON | None,
                             context: Sequence[JSON]) -> OfflineValidation:
    return OfflineValidation(errors=validate_cluster(obj))


def _time(value: datetime | None) -> str | None:
    return format_time(value) if value is not None else None


def _task(task: Mapping[str, Any]) -> JSON:
    out: JSON = {"fromCluster": as_str(task.get("fromCluster")),
                 "replicas": as_int(task.get("replicas")),
                 "reason": as_str(task.get("reason")),
                 "purgeMode": as_str(task.get("purgeMode")) or None}
    return out


def _entry(held: HeldBinding, clusters: Sequence[Cluster], now: datetime) -> tuple[JSON, str]:
    passed = binding_round(held, clusters, now)
    result, tasks = passed.result, passed.tasks
    works: JSON = {}
    if held.template is not None:
        for target in result.clusters:
            works[target.name] = work(held.template, target.name, target.replicas, held.name,
                                      held.namespace)
    entry: JSON = {
        "resource": held.resource.to_json(),
        "replicas": held.replicas,
        "clusters": [{"name": t.name, "replicas": t.replicas} for t in result.clusters],
        "scheduled": result.scheduled,
        "mode": result.mode.value if result.mode is not None else None,
        "error": result.error,
        "rescheduleTriggeredAt": _time(held.reschedule_triggered_at),
        "gracefulEvictionTasks": [_task(t) for t in tasks],
        "works": works,
    }
    kind = "ClusterResourceBinding" if held.cluster_scoped else "ResourceBinding"
    spread = " ".join(f"{t.name}={t.replicas}" for t in result.clusters) or "no cluster"
    how = f" ({result.mode.value})" if result.mode is not None else " (not rescheduled)"
    line = f"{kind} {held.key}: {spread}{how}"
    if result.error:
        line += f": {result.error}"
    return entry, line


def offline_plan(objects: Sequence[JSON], now: datetime) -> OfflinePlan:
    clusters = sorted((with_health_taints(from_object(o), now) for o in objects
                       if is_cluster(o) and not is_member_object(o)), key=lambda c: c.name)
    answer: JSON = {}
    lines: list[str] = []
    for held in held_bindings(objects):
        entry, line = _entry(held, clusters, now)
        answer[held.key] = entry
        lines.append(line)
    return OfflinePlan(answer={"resourceBindings": answer} if answer else {}, lines=lines)
