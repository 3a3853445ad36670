"""Rebalancing a UnitedDeployment: move to the placement it would get if created now, safely.

A WorkloadRebalancer asks by writing ``rebalance.spreadbus.io/request: <uid>`` on the UD; while
that differs from ``rebalance.spreadbus.io/handled`` (:func:`pending_request`), the reconcile
uses :func:`rebalance_step` instead of the allocator and writes ``handled`` once the step says
``done``.

The fresh placement (:func:`fresh_allocation`) is the allocator's answer with no subset
workloads at all: no current replicas for the specific allocator's remainder rule, no ready pods
pinning Adaptive subsets, no unschedulable marks. Each step moves towards it:

- *Destinations* (fewer replicas than fresh) grow first, in spec order, while the surge (replicas
  above the UD's total) stays within the motion bound ``max(1, spec.replicas * 25 // 100)``.
- *Sources* (more than fresh) shrink only as far as availability allows: their not-ready pods go
  for free (ReplicaSets and CloneSets delete not-ready pods first on scale-down), ready ones only
  as many as there are ready pods beyond the total, which are the ready pods the destinations
  gained. Later subsets give first.
- Sources never go below, nor destinations above, their fresh count.

So ``min(total ready, total)`` never drops, at most the bound is in flight at once, and the
sequence ends at the fresh placement as destination pods become ready. ``done`` is reported when
the step *is* the fresh placement, or when nothing moved and nothing is pending that could let
it move later (no not-ready pod that could still free one). A pod that never becomes ready
holds the rebalance at its last safe step; a destination the Adaptive pass finds unschedulable
is frozen instead, so the rebalance ends rather than waits on it.

Signatures::

    pending_request(annotations) -> str | None
    fresh_allocation(ud) -> Allocation | AllocationError
    motion_bound(total) -> int
    rebalance_step(fresh, current, *, total, removes_unready_first, frozen,
                   disruptions_allowed) -> RebalanceStep
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from kubesemantics.lenient_json import as_str
from spreadbus.features.uniteddeployment.core.allocation import (
    Allocation,
    AllocationError,
    SubsetWorkload,
    allocate,
)
from spreadbus.features.uniteddeployment.core.model import UnitedDeployment

REQUEST_ANNOTATION = "rebalance.spreadbus.io/request"
HANDLED_ANNOTATION = "rebalance.spreadbus.io/handled"


def pending_request(annotations: object) -> str | None:
    """The rebalance request still to be handled (its value), or None."""
    if not isinstance(annotations, Mapping):
        return None
    request = as_str(annotations.get(REQUEST_ANNOTATION))
    if not request or request == as_str(annotations.get(HANDLED_ANNOTATION)):
        return None
    return request


def fresh_allocation(ud: UnitedDeployment) -> Allocation | AllocationError:
    """The allocation the UD would get with no subset workloads yet."""
    return allocate(ud, {})


def motion_bound(total: int) -> int:
    """How many replicas may be in motion at once: a quarter of the total, at least one."""
    return max(1, total * 25 // 100)


@dataclass(frozen=True)
class RebalanceStep:
    """The replicas to give each subset now (spec order), and whether rebalancing is over:
    ``reached`` (the step is the fresh placement) or stalled (nothing can move)."""

    allocation: dict[str, int]
    done: bool
    in_motion: int
    reached: bool = False


def rebalance_step(
    fresh: Mapping[str, int],
    current: Mapping[str, SubsetWorkload],
    *,
    total: int | None = None,
    removes_unready_first: bool = True,
    frozen: Collection[str] = (),
    disruptions_allowed: int | None = None,
) -> RebalanceStep:
    """The next placement from ``current`` (spec replicas and ready replicas per subset; a
    missing subset has no workload) towards ``fresh`` (spec order).

    ``total`` is ``spec.replicas`` (the sum of ``fresh`` when None) and sets the motion bound;
    surge and spare ready pods are counted against the sum of ``fresh``.
    ``removes_unready_first`` says the workload kind deletes not-ready pods first on
    scale-down (ReplicaSets, CloneSets); StatefulSets delete by ordinal, so for them every
    removal is paid from the spare ready pods.

    ``frozen`` subsets do not grow this step (the Adaptive pass found them unschedulable: new
    pods would only wait there) and are not waited for. ``disruptions_allowed`` (a
    PodDisruptionBudget's or PodUnavailableBudget's current allowance) caps the ready pods taken
    away in this step.
    """
    names = list(fresh)
    want = {name: max(0, fresh[name]) for name in names}
    have = {name: max(0, current[name].replicas) if name in current else 0 for name in names}
    ready = {
        name: max(0, min(current[name].ready_replicas, have[name])) if name in current else 0
        for name in names
    }
    unready = {name: have[name] - ready[name] for name in names}
    goal = sum(want.values())
    bound = motion_bound(goal if total is None else total)
    destinations = [name for name in names if have[name] < want[name]]
    sources = [name for name in names if have[name] > want[name]]

    # Ready pods beyond the total are what the destinations gained: only those may go.
    spare_ready = max(0, sum(ready.values()) - goal)
    if disruptions_allowed is not None:
        spare_ready = min(spare_ready, max(0, disruptions_allowed))
    step = dict(have)
    if removes_unready_first:
        # Not-ready source pods cost no availability.
        for name in sources:
            step[name] -= min(step[name] - want[name], unready[name])
    # Then as many as there are spare ready pods, later subsets first.
    for name in reversed(sources):
        take = min(step[name] - want[name], spare_ready)
        step[name] -= take
        spare_ready -= take
    # Destinations grow within the motion bound, in spec order.
    room = bound - (sum(step.values()) - goal)
    for name in destinations:
        if room <= 0:
            break
        if name in frozen:
            continue
        add = min(want[name] - step[name], room)
        step[name] += add
        room -= add

    in_motion = max(0, sum(step.values()) - goal)
    reached = step == want
    # Pods that may still become ready, and so free a move later.
    waiting = any(
        unready[name] > 0
        for name in names
        if name not in frozen and (name not in sources or not removes_unready_first)
    )
    stalled = step == have and not waiting
    return RebalanceStep(
        allocation=step, done=reached or stalled, in_motion=in_motion, reached=reached
    )
