"""How many replicas each subset workload gets: Kruise's four allocators.

Which one runs depends on the UD alone (:func:`allocator_for`): reservation (Adaptive with
``reserveUnschedulablePods``), adaptive (Adaptive), min/max (some subset has ``minReplicas`` or
``maxReplicas``), else specific. Each is a pure function of the UD and of what the controller
observed of the existing subset workloads (:class:`SubsetWorkload`, keyed by subset name; a subset
without a workload is simply missing), and answers ``{subset: replicas}`` for every spec subset,
in spec order, or an :class:`AllocationError` carrying Kruise's message (the controller then
changes nothing that round).

- Specific: fixed ``replicas`` (integers or percentages of ``spec.replicas``) are honoured; the
  rest is split evenly over the other subsets, the remainder going to the subsets that run the
  most replicas now (ties: the later name), so a scale changes as few workloads as possible.
  An unparsable ``replicas`` makes its subset unspecified.
- Min/max: every subset's minimum in spec order, then up to every subset's maximum in spec order;
  the current workloads play no part. An unparsable minimum or maximum reads as 0.
- Adaptive: min/max, where an unschedulable subset is pinned to its ready replicas (pending pods
  move on to later subsets) and a schedulable one never drops below its ready replicas.
- Reservation: min/max, where the replicas a subset cannot run (its reserved pods) are counted
  there and allocated again elsewhere as substitutes, so the sum may exceed ``spec.replicas``.

Arithmetic is Go's int32 without overflow: inputs are bounded by int32 and no sum here gets near
the bound for any UD the webhook admits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

import msgspec

from spreadbus.features.uniteddeployment.core.model import Subset, UnitedDeployment
from spreadbus.features.uniteddeployment.core.replicas import (
    INT32_MAX,
    SubsetReplicasError,
    parse_subset_replicas,
)

Allocation = dict[str, int]


class SubsetWorkload(msgspec.Struct, frozen=True):
    """What the allocators read of one existing subset workload.

    ``unschedulable`` is this round's verdict (timed-out pending pods, or reserved pods in
    reservation mode); ``marked_unschedulable`` is the subset's persisted ``Schedulable=False``
    condition, which reservation mode reads as "not yet trusted" even once its pods run.
    """

    replicas: int = 0
    ready_replicas: int = 0
    reserved_pods: int = 0
    unschedulable: bool = False
    marked_unschedulable: bool = False

    @property
    def allocatable(self) -> bool:
        return not self.unschedulable and not self.marked_unschedulable


@dataclass(frozen=True)
class AllocationError:
    """The replicas cannot be split; ``message`` is Kruise's."""

    message: str


class Allocator(StrEnum):
    SPECIFIC = "specific"
    MIN_MAX = "min-max"
    ADAPTIVE = "adaptive"
    RESERVATION = "reservation"


Workloads = Mapping[str, SubsetWorkload]


def allocator_for(ud: UnitedDeployment) -> Allocator:
    strategy = ud.schedule_strategy
    if strategy.reservation:
        return Allocator.RESERVATION
    if strategy.adaptive:
        return Allocator.ADAPTIVE
    if any(subset.elastic for subset in ud.subsets):
        return Allocator.MIN_MAX
    return Allocator.SPECIFIC


def allocate(ud: UnitedDeployment, workloads: Workloads) -> Allocation | AllocationError:
    """The next replicas of every spec subset, by the allocator the UD calls for."""
    match allocator_for(ud):
        case Allocator.RESERVATION:
            return allocate_reservation(ud, workloads)
        case Allocator.ADAPTIVE:
            return allocate_adaptive(ud, workloads)
        case Allocator.MIN_MAX:
            return allocate_min_max(ud)
        case Allocator.SPECIFIC:
            return allocate_specific(ud, workloads)


# --- specific -----------------------------------------------------------------------------------


def specified_replicas(ud: UnitedDeployment) -> dict[str, int]:
    """The subsets whose ``replicas`` parse, with their value; the rest count as unspecified."""
    total = -1 if ud.replicas is None else ud.replicas
    found: dict[str, int] = {}
    for subset in ud.subsets:
        if subset.replicas is None:
            continue
        try:
            found[subset.name] = parse_subset_replicas(total, subset.replicas)
        except SubsetReplicasError:
            continue
    return found


def allocate_specific(ud: UnitedDeployment, workloads: Workloads) -> Allocation | AllocationError:
    total = -1 if ud.replicas is None else ud.replicas
    order = sorted(
        ud.subsets,
        key=lambda s: (workloads[s.name].replicas if s.name in workloads else 0, s.name),
    )
    specified = specified_replicas(ud)
    specified_sum = sum(specified.values())
    specified_count = sum(1 for s in order if s.name in specified)
    if total != -1:
        if specified_sum > total:
            return AllocationError(
                f"specified subsets' replica ({specified_sum}) is greater than "
                f"UnitedDeployment replica ({total})"
            )
        if specified_sum < total and specified_count == len(order):
            return AllocationError(
                f"specified subsets' replica ({specified_sum}) is less than "
                f"UnitedDeployment replica ({total})"
            )
    elif specified_count != len(order):
        return AllocationError(
            "all subsets must be specified when UnitedDeployment replica is unspecified"
        )

    result: dict[str, int] = {}
    for subset in order:
        if subset.name in specified:
            result[subset.name] = specified[subset.name]
    left = len(order) - specified_count
    if left:
        rest = total - specified_sum
        average, remainder = _go_divmod(rest, left)
        for subset in reversed(order):
            if subset.name in specified:
                continue
            if remainder > 0:
                result[subset.name] = average + 1
                remainder -= 1
            else:
                result[subset.name] = average
            left -= 1
            if left == 0:
                break
    return {s.name: result.get(s.name, 0) for s in ud.subsets}


def _go_divmod(a: int, b: int) -> tuple[int, int]:
    """Go's ``/`` and ``%`` on ints: the quotient truncates toward zero."""
    quotient = abs(a) // abs(b) * (1 if (a >= 0) == (b > 0) else -1)
    return quotient, a - quotient * b


# --- min/max ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bounds:
    minimum: int
    maximum: int


def _parse_or_zero(total: int, value: object) -> int:
    try:
        return parse_subset_replicas(total, value)
    except SubsetReplicasError:
        return 0


def subset_bounds(total: int, subset: Subset) -> Bounds:
    """Parsed min (default 0) and max (default unlimited); parse errors read as 0, even for max."""
    minimum = 0 if subset.min_replicas is None else _parse_or_zero(total, subset.min_replicas)
    maximum = (
        INT32_MAX if subset.max_replicas is None else _parse_or_zero(total, subset.max_replicas)
    )
    return Bounds(minimum, maximum)


def raw_bounds(ud: UnitedDeployment) -> dict[str, Bounds] | AllocationError:
    total = ud.replicas or 0
    bounds: dict[str, Bounds] = {}
    for index, subset in enumerate(ud.subsets):
        found = subset_bounds(total, subset)
        if found.minimum > found.maximum:
            return AllocationError(
                f"subset[{index}].maxReplicas({found.maximum}) must be more than or equal to "
                f"minReplicas({found.minimum})"
            )
        bounds[subset.name] = found
    return bounds


def fill_min_then_max(
    total: int, bounds: Mapping[str, Bounds], subsets: tuple[Subset, ...]
) -> Allocation:
    """Minimums in spec order, then the room up to each maximum in spec order."""
    result: dict[str, int] = {}
    allocated = 0
    for subset in subsets:
        add = max(min(bounds[subset.name].minimum, total - allocated), 0)
        result[subset.name] = add
        allocated += add
    if allocated >= total:
        return result
    for subset in subsets:
        room = bounds[subset.name].maximum - bounds[subset.name].minimum
        add = max(min(room, total - allocated), 0)
        result[subset.name] += add
        allocated += add
    return result


def allocate_min_max(ud: UnitedDeployment) -> Allocation | AllocationError:
    bounds = raw_bounds(ud)
    if isinstance(bounds, AllocationError):
        return bounds
    return fill_min_then_max(ud.replicas or 0, bounds, ud.subsets)


# --- adaptive -----------------------------------------------------------------------------------


def adaptive_bounds(bounds: Bounds, workload: SubsetWorkload | None) -> Bounds:
    """Pin an unschedulable subset to its ready pods; keep a schedulable one's ready pods."""
    minimum, maximum = bounds.minimum, bounds.maximum
    unschedulable = workload is not None and workload.unschedulable
    ready = 0 if workload is None else workload.ready_replicas
    if unschedulable:
        minimum = max(ready, minimum)
        maximum = min(ready, maximum)
    if not unschedulable and ready > minimum:
        minimum = min(ready, maximum)
    return Bounds(minimum, maximum)


def allocate_adaptive(ud: UnitedDeployment, workloads: Workloads) -> Allocation | AllocationError:
    bounds = raw_bounds(ud)
    if isinstance(bounds, AllocationError):
        return bounds
    adjusted = dict(bounds)
    for subset in ud.subsets:
        adjusted[subset.name] = adaptive_bounds(adjusted[subset.name], workloads.get(subset.name))
    return fill_min_then_max(ud.replicas or 0, adjusted, ud.subsets)


# --- reservation --------------------------------------------------------------------------------


class _Reservation:
    """One subset's allocation so far and how many more of its replicas can actually run."""

    def __init__(self, runnable: int) -> None:
        self.allocated = 0
        self.runnable = runnable

    def take(self, to: int, rest: int) -> int:
        """Raise the allocation towards ``to``; answer how many of the added replicas will run.

        Replicas beyond what the subset can run are allocated all the same (they become reserved
        pods) but are not counted as consumed, so the caller places them again elsewhere.
        """
        added = min(to - self.allocated, rest)
        self.allocated += added
        self.runnable -= added
        if self.runnable < 0:
            return max(0, added + self.runnable)
        return added


def allocate_reservation(
    ud: UnitedDeployment, workloads: Workloads
) -> Allocation | AllocationError:
    bounds = raw_bounds(ud)
    if isinstance(bounds, AllocationError):
        return bounds
    records: dict[str, _Reservation] = {}
    for subset in ud.subsets:
        workload = workloads.get(subset.name)
        if workload is None or workload.allocatable:
            records[subset.name] = _Reservation(INT32_MAX)
        else:
            records[subset.name] = _Reservation(workload.replicas - workload.reserved_pods)

    def result() -> Allocation:
        return {s.name: records[s.name].allocated for s in ud.subsets}

    rest = ud.replicas or 0
    for subset in ud.subsets:
        rest -= records[subset.name].take(bounds[subset.name].minimum, rest)
        if rest <= 0:
            return result()
    for subset in ud.subsets:
        workload = workloads.get(subset.name)
        if workload is None or not workload.unschedulable:
            rest -= records[subset.name].take(bounds[subset.name].maximum, rest)
        else:
            rest -= records[subset.name].take(workload.replicas, rest)
        if rest <= 0:
            return result()
    return result()
