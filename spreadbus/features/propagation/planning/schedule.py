"""One round of Karmada's scheduler on one binding, as a pure function of the binding, the
clusters and the time.

Read from Karmada's ``pkg/scheduler/scheduler.go`` (``doScheduleBinding`` and the two
``scheduleResourceBindingWith…`` functions), ``pkg/scheduler/core/generic_scheduler.go`` and
``pkg/util/binding.go``. The scheduler runs on the first of: the placement changed since the
one it applied; for Divided the replicas in ``spec.clusters`` do not sum to the binding's (for
Duplicated, a cluster holds other than all of them); a rebalance was asked after the last
successful schedule (``RescheduleRequired``, which also makes the round Fresh); the template is
not a workload or is Duplicated (always); a cluster it is on is being deleted. So a recovered
cluster pulls nothing back by itself. A binding being deleted is never scheduled.

With ``clusterAffinities`` the terms are tried from the observed one on (from the first on a
rebalance), the first that schedules wins; the observed name only moves on success. A failure
where no cluster fits at all clears ``spec.clusters`` (Karmada patches the empty result); any
other failure leaves it. Only a success stamps ``lastScheduledTime``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

import msgspec

from kubesemantics.lenient_json import as_int, as_map, as_str
from spreadbus.features.propagation.core.cluster import Cluster
from spreadbus.features.propagation.core.division import (
    Candidate,
    Mode,
    Strategy,
    Target,
    Unschedulable,
    assign,
    strategy_of,
)
from spreadbus.features.propagation.core.estimator import replicas_that_fit
from spreadbus.features.propagation.core.policy import placement_changed
from spreadbus.features.propagation.core.selection import (
    MAX_INT32,
    SelectionError,
    cluster_matches,
    details,
    fits,
    observed_term,
    select,
)

SUCCESS_MESSAGE = "Binding has been scheduled successfully."


class Binding(msgspec.Struct, frozen=True):
    """What the scheduler reads of a binding (its placement already defaulted)."""

    api_version: str
    kind: str
    placement: Mapping[str, object]
    replicas: int = 0
    workload: bool = False
    """Karmada's ``IsWorkload``: replicas, or replica requirements (a request or a node
    claim)."""
    request: Mapping[str, int] = msgspec.field(default_factory=dict)
    uid: str = ""
    clusters: tuple[Target, ...] = ()
    annotations: Mapping[str, object] = msgspec.field(default_factory=dict)
    reschedule_triggered_at: datetime | None = None
    last_scheduled_time: datetime | None = None
    observed_affinity: str = ""
    evicting: tuple[str, ...] = ()
    """The clusters of its graceful eviction tasks."""
    deleting: bool = False
    """The binding is being deleted: the scheduler skips it."""


class Round(msgspec.Struct, frozen=True):
    scheduled: bool
    """Whether the scheduler ran on the binding."""
    clusters: tuple[Target, ...]
    mode: Mode | None = None
    error: str | None = None
    reason: str = ""
    """The ``Scheduled`` condition's reason (``Success``, ``NoClusterFit``, ``Unschedulable``,
    ``SchedulerError``); empty when it did not run."""
    observed_affinity: str = ""
    succeeded: bool = False
    last_scheduled_time: datetime | None = None
    """``status.lastScheduledTime`` after the round: the round's time on success."""


class _NoFit(Exception):
    pass


_FAILURES = (_NoFit, Unschedulable, ValueError)
"""Every way a round fails: no cluster fits, too little room, constraints not met."""


def reschedule_required(trigger: datetime | None, last: datetime | None) -> bool:
    """A rebalance asked strictly after the last successful schedule (never before one)."""
    return trigger is not None and last is not None and trigger > last


def _replicas_changed(binding: Binding) -> bool:
    scheduling = binding.placement.get("replicaScheduling")
    if not isinstance(scheduling, Mapping):
        return False
    kind = scheduling.get("replicaSchedulingType")
    if kind == "Duplicated":
        return any(t.replicas != binding.replicas for t in binding.clusters)
    if kind == "Divided":
        return sum(t.replicas for t in binding.clusters) != binding.replicas
    return False


def needs_schedule(binding: Binding, clusters: Sequence[Cluster]) -> bool:
    if placement_changed(binding.placement, binding.annotations, binding.observed_affinity):
        return True
    if _replicas_changed(binding):
        return True
    if reschedule_required(binding.reschedule_triggered_at, binding.last_scheduled_time):
        return True
    strategy = strategy_of(_scheduling(binding.placement))
    if not binding.workload or strategy is Strategy.DUPLICATED:
        return True
    deleting = {c.name for c in clusters if c.deleting}
    return any(t.name in deleting for t in binding.clusters)


def _scheduling(placement: Mapping[str, object]) -> Mapping[str, object] | None:
    value = placement.get("replicaScheduling")
    return value if isinstance(value, Mapping) else None


def _weights(placement: Mapping[str, object], clusters: Sequence[Cluster]) -> dict[str, int]:
    scheduling = _scheduling(placement)
    preference = scheduling.get("weightPreference") if scheduling else None
    if not isinstance(preference, Mapping):
        return {c.name: 1 for c in clusters}
    rules = preference.get("staticWeightList")
    weights: dict[str, int] = {}
    for cluster in clusters:
        weight = 0
        for rule in rules if isinstance(rules, list) else ():
            rule_map = as_map(rule)
            if cluster_matches(cluster, as_map(rule_map.get("targetCluster"))):
                weight = max(weight, as_int(rule_map.get("weight")) or 0)
        weights[cluster.name] = weight
    return weights


def _overflow(placement: Mapping[str, object], affinity_name: str) -> bool:
    if placement.get("clusterAffinity") is not None or not affinity_name:
        return False
    term = observed_term(placement, affinity_name)
    return term is not None and term.get("overflowAffinities") is not None


def _schedule_once(binding: Binding, clusters: Sequence[Cluster], affinity_name: str,
                   mode: Mode) -> list[Target]:
    """``genericScheduler.Schedule``: raises :class:`_NoFit` when no cluster passes the
    filters, else another exception with Karmada's message."""
    targets = [t.name for t in binding.clusters]
    feasible: list[Cluster] = []
    reasons: dict[str, int] = {}
    for cluster in clusters:
        why = fits(cluster, binding.placement, affinity_name=affinity_name,
                   api_version=binding.api_version, kind=binding.kind, targets=targets,
                   evicting=binding.evicting, workload=binding.workload)
        if why is None:
            feasible.append(cluster)
        elif not cluster.deleting:
            reasons[why] = reasons.get(why, 0) + 1
    if not feasible:
        text = ", ".join(sorted(f"{n} {why}" for why, n in reasons.items())) or (
            "no cluster exists")
        raise _NoFit(f"0/{len(clusters)} clusters are available: {text}.")
    if binding.replicas == 0:
        allocatable = {c.name: MAX_INT32 for c in feasible}
    else:
        allocatable = {c.name: replicas_that_fit(c.room(), binding.request) for c in feasible}
    previous: dict[str, int] = {}
    for target in binding.clusters:
        previous.setdefault(target.name, target.replicas)
    strategy = strategy_of(_scheduling(binding.placement))
    try:
        chosen = select(details(feasible, binding.placement, affinity_name=affinity_name,
                                previous=previous, allocatable=allocatable),
                        binding.placement, strategy, binding.replicas)
    except SelectionError as exc:
        raise ValueError(f"failed to select clusters: {exc}") from exc
    by_name = {c.name: c for c in feasible}
    weights = (_weights(binding.placement, [by_name[d.name] for d in chosen])
               if strategy is Strategy.STATIC_WEIGHT else {})
    candidates = [Candidate(name=d.name, allocatable=d.allocatable,
                            weight=weights.get(d.name, 1), tier=d.tier) for d in chosen]
    try:
        return assign(strategy, binding.replicas, candidates, binding.clusters, mode,
                      binding.uid, workload=binding.workload,
                      overflow=_overflow(binding.placement, affinity_name))
    except Unschedulable as exc:
        raise Unschedulable(f"failed to assign replicas: {exc}") from exc
    except ValueError as exc:
        raise ValueError(f"failed to assign replicas: {exc}") from exc


def _reason(exc: Exception) -> str:
    if isinstance(exc, _NoFit):
        return "NoClusterFit"
    if isinstance(exc, Unschedulable):
        return "Unschedulable"
    return "SchedulerError"


def schedule(binding: Binding, clusters: Sequence[Cluster], now: datetime) -> Round:
    """The round at ``now``, which a success stamps as ``lastScheduledTime``."""
    last = binding.last_scheduled_time
    if binding.deleting or not needs_schedule(binding, clusters):
        return Round(scheduled=False, clusters=binding.clusters,
                     observed_affinity=binding.observed_affinity, last_scheduled_time=last)
    fresh = reschedule_required(binding.reschedule_triggered_at, binding.last_scheduled_time)
    mode = Mode.FRESH if fresh else Mode.STEADY
    terms = binding.placement.get("clusterAffinities")
    if not isinstance(terms, list) or not terms:
        try:
            result = _schedule_once(binding, clusters, "", mode)
        except _FAILURES as exc:
            return Round(scheduled=True, mode=mode, error=str(exc), reason=_reason(exc),
                         clusters=() if isinstance(exc, _NoFit) else binding.clusters,
                         observed_affinity=binding.observed_affinity, last_scheduled_time=last)
        return Round(scheduled=True, mode=mode, clusters=tuple(result), reason="Success",
                     observed_affinity=binding.observed_affinity, succeeded=True,
                     last_scheduled_time=now)
    names = [as_str(as_map(t).get("affinityName")) for t in terms]
    index = 0 if fresh or binding.observed_affinity not in names else names.index(
        binding.observed_affinity)
    first: Exception | None = None
    for name in names[index:]:
        try:
            result = _schedule_once(binding, clusters, name, mode)
        except _FAILURES as exc:
            first = first or exc
            continue
        return Round(scheduled=True, mode=mode, clusters=tuple(result), reason="Success",
                     observed_affinity=name, succeeded=True, last_scheduled_time=now)
    error = first or ValueError("no cluster affinity term to schedule with")
    return Round(scheduled=True, mode=mode, error=str(error), reason=_reason(error),
                 clusters=() if isinstance(error, _NoFit) else binding.clusters,
                 observed_affinity=binding.observed_affinity, last_scheduled_time=last)
