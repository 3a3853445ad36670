"""Karmada's replica assignment over the selected clusters, a pure function.

Read from Karmada's ``pkg/scheduler/core/assignment.go``, ``division_algorithm.go`` and
``common.go`` (v1.16 and later):

- the strategy follows the placement: Duplicated (also without ``replicaScheduling``),
  Aggregated, DynamicWeight (Weighted with ``dynamicWeight``, even beside a static list) or
  StaticWeight (Weighted otherwise, every cluster weight 1 without a weight preference);
- StaticWeight: a cluster's weight is the largest of the rules that match it, clusters no rule
  matches take no part, and all weights 0 means each weighs 1; Webster divides the replicas and
  the previous result is never read (Fresh and Steady alike);
- DynamicWeight and Aggregated read the previous ``spec.clusters`` restricted to the candidates:
  Fresh divides all replicas by capacity plus what each cluster holds now; Steady scale-down
  divides by the current layout (capacity ignored); Steady scale-up divides only the missing
  replicas by spare capacity and adds them on top; an equal sum is kept as it is. Too little
  capacity is :class:`Unschedulable`. Aggregated first puts the clusters already used in front
  and keeps the shortest prefix whose capacity covers the target;
- with overflow tiers each tier takes what it can hold, in order; zero-replica entries are
  dropped at the end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum

import msgspec

from spreadbus.features.propagation.core.webster import allocate


class Strategy(StrEnum):
    DUPLICATED = "Duplicated"
    AGGREGATED = "Aggregated"
    STATIC_WEIGHT = "StaticWeight"
    DYNAMIC_WEIGHT = "DynamicWeight"


class Mode(StrEnum):
    STEADY = "Steady"
    FRESH = "Fresh"


class Target(msgspec.Struct, frozen=True):
    """One ``spec.clusters`` entry."""

    name: str
    replicas: int


class Candidate(msgspec.Struct, frozen=True):
    """A selected cluster: ``allocatable`` is the estimate of how many more replicas fit there
    (the workload's own excluded); ``weight`` its static weight (0: no rule matches it);
    ``tier`` its overflow order."""

    name: str
    allocatable: int = 0
    weight: int = 1
    tier: int = 0


class Unschedulable(Exception):
    """Not enough capacity; Karmada leaves ``spec.clusters`` as it was."""


def strategy_of(replica_scheduling: Mapping[str, object] | None) -> Strategy:
    """The strategy a (defaulted) ``replicaScheduling`` selects."""
    if replica_scheduling is None or replica_scheduling.get("replicaSchedulingType") != "Divided":
        return Strategy.DUPLICATED
    if replica_scheduling.get("replicaDivisionPreference") == "Aggregated":
        return Strategy.AGGREGATED
    preference = replica_scheduling.get("weightPreference")
    if isinstance(preference, Mapping) and preference.get("dynamicWeight"):
        return Strategy.DYNAMIC_WEIGHT
    return Strategy.STATIC_WEIGHT


def _descending(entries: Sequence[Target]) -> list[Target]:
    """Go's ``sort.Sort`` by replicas descending; stable, as Go's insertion sort is up to 12."""
    return sorted(entries, key=lambda t: -t.replicas)


def _merge(old: Sequence[Target], new: Sequence[Target]) -> list[Target]:
    """``MergeTargetClusters``: ``new`` with the old replicas added, old-only names appended."""
    if not old:
        return list(new)
    if not new:
        return list(old)
    left = {t.name: t.replicas for t in old}
    merged = [Target(t.name, t.replicas + left.pop(t.name, 0)) for t in new]
    merged.extend(Target(name, replicas) for name, replicas in left.items())
    return merged


def _webster(target: int, avail: Sequence[Target], uid: str) -> list[Target]:
    votes = {t.name: t.replicas for t in avail}
    if sum(votes.values()) == 0:
        return []
    return [Target(p.name, p.seats) for p in allocate(target, votes, None, uid)]


def _divide(strategy: Strategy, target: int, avail: list[Target], scheduled: list[Target],
            uid: str, what: str) -> list[Target]:
    available = sum(t.replicas for t in avail)
    if available < target:
        raise Unschedulable(f"failed to {what}: Clusters available replicas {available} are "
                            "not enough to schedule.")
    if strategy is Strategy.AGGREGATED:
        prior = {t.name for t in scheduled if t.replicas > 0}
        if prior:
            avail = ([t for t in avail if t.name in prior]
                     + [t for t in avail if t.name not in prior])
        running = 0
        for i, entry in enumerate(avail):
            running += entry.replicas
            if running >= target:
                avail = avail[:i + 1]
                break
    return _merge(scheduled, _webster(target, avail, uid))


def _dynamic(strategy: Strategy, replicas: int, candidates: Sequence[Candidate],
             previous: Sequence[Target], mode: Mode, uid: str) -> list[Target]:
    names = {c.name for c in candidates}
    scheduled = [t for t in previous if t.name in names]
    assigned = sum(t.replicas for t in scheduled)
    if mode is Mode.FRESH:
        held: dict[str, int] = {}
        for t in scheduled:
            held[t.name] = held.get(t.name, 0) + t.replicas
        avail = _descending([Target(c.name, c.allocatable + held.get(c.name, 0))
                             for c in candidates])
        return _divide(strategy, replicas, avail, [], uid, "do fresh scale")
    if assigned > replicas:
        return _divide(strategy, replicas, _descending(scheduled), [], uid, "scale down")
    if assigned < replicas:
        avail = _descending([Target(c.name, c.allocatable) for c in candidates])
        return _divide(strategy, replicas - assigned, avail, scheduled, uid, "scale up")
    return scheduled


def _static(replicas: int, candidates: Sequence[Candidate], uid: str) -> list[Target]:
    weighted = [Target(c.name, c.weight) for c in candidates if c.weight > 0]
    if sum(t.replicas for t in weighted) == 0:
        weighted = [Target(c.name, 1) for c in candidates]
    return _webster(replicas, weighted, uid)


def _assign_tier(strategy: Strategy, replicas: int, candidates: Sequence[Candidate],
                 previous: Sequence[Target], mode: Mode, uid: str) -> list[Target]:
    if strategy is Strategy.DUPLICATED:
        result = [Target(c.name, replicas) for c in candidates]
    elif strategy is Strategy.STATIC_WEIGHT:
        result = _static(replicas, candidates, uid)
    else:
        result = _dynamic(strategy, replicas, candidates, previous, mode, uid)
    return [t for t in result if t.replicas > 0]


def assign(strategy: Strategy, replicas: int, candidates: Sequence[Candidate],
           previous: Sequence[Target] = (), mode: Mode = Mode.STEADY, uid: str = "",
           *, workload: bool = True, overflow: bool = False) -> list[Target]:
    """The new ``spec.clusters`` for the candidates, in Karmada's order.

    ``workload``: the template has replicas or resource requests; otherwise (and for a
    workload of 0 replicas without requests, which Karmada cannot tell apart) every candidate
    is listed with 0. ``overflow``: the observed affinity term has overflow tiers, each
    candidate's ``tier`` its order among them. ``available`` per tier is the allocatable plus
    what the binding holds there. Raises :class:`Unschedulable`, or ``ValueError`` without
    candidates."""
    if not candidates:
        raise ValueError("no clusters available to schedule")
    if not workload:
        return [Target(c.name, 0) for c in candidates]
    if not overflow:
        return _assign_tier(strategy, replicas, candidates, previous, mode, uid)
    held = {t.name: t.replicas for t in reversed(previous)}
    result: list[Target] = []
    remaining = replicas
    for tier in sorted({c.tier for c in candidates}):
        members = [c for c in candidates if c.tier == tier]
        room = sum(c.allocatable + held.get(c.name, 0) for c in members)
        share = min(remaining, room)
        result.extend(_assign_tier(strategy, share, members, previous, mode, uid))
        remaining -= share
        if remaining <= 0:
            break
    if remaining > 0:
        raise Unschedulable("Clusters available replicas are not enough to schedule.")
    return result
