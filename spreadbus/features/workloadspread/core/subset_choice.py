"""Which subset a new pod goes to.

First fit in spec order, as Kruise: skip subsets marked ``Schedulable=False`` and subsets that are
full (occupancy at or above the scaled ``maxReplicas``); unlimited subsets always fit. No subset
fits -> ``None``, and the pod is admitted without constraints (Kruise does not reject it).

``minReplicas`` (spreadbus; OpenKruise has no such field) adds a first pass: the first schedulable
subset still below its minimum wins, in spec order, so every subset reaches its minimum before any
subset receives pods beyond its own. Without minimums the result is exactly Kruise's.

Schedulability is read from the subset's top-level status condition, and also from the versioned
status of the pod's version when one exists; Kruise reads only the versioned one, which a brand
new version does not have yet, so its first pods could be sent to a subset just marked
unschedulable.

StatefulSets go by ordinal instead (Kruise, no bookkeeping): walk the schedulable subsets adding
each one's integer maxReplicas (unlimited adds 2^31-1) and take the first whose running total
exceeds the ordinal. Unschedulable subsets are skipped without adding their capacity. Minimums
apply here too, as a layout of the ordinals: first each schedulable subset's minimum, in spec
order, then each one's remaining room (maxReplicas minus minimum), in spec order. A StatefulSet
creates its pods in ordinal order and removes the highest ordinal first, so it fills every minimum
before any subset grows beyond its own, and scales in from the room above the minimums (last
subset first) before it takes any subset below its minimum. Without minimums the layout is exactly
Kruise's thresholds, and an ordinal still maps to one subset whatever pods exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from kubesemantics.intstr import int_value
from spreadbus.features.workloadspread.core.model import SubsetStatus, WorkloadSpread
from spreadbus.features.workloadspread.core.occupancy import (
    SubsetLoad,
    minimum_within,
    subset_limit,
)

INT32_MAX = 2**31 - 1
_EMPTY = SubsetLoad()


def unschedulable_subsets(ws: WorkloadSpread, version: str | None = None) -> frozenset[str]:
    names = _unschedulable(ws.status.subset_statuses)
    if version is not None:
        versioned = ws.status.versioned_subset_statuses.get(version)
        if versioned:
            names += _unschedulable(versioned)
    return frozenset(names)


def _unschedulable(statuses: Iterable[SubsetStatus]) -> list[str]:
    return [status.name for status in statuses if status.unschedulable]


def single_unlimited(ws: WorkloadSpread) -> bool:
    """Kruise's shortcut: one subset without a limit takes every pod, no bookkeeping."""
    return len(ws.subsets) == 1 and ws.subsets[0].max_replicas is None


def choose_subset(
    ws: WorkloadSpread,
    *,
    replicas: int,
    loads: Mapping[str, SubsetLoad],
    now: datetime,
    version: str | None = None,
) -> str | None:
    """The subset for a new pod of ``version`` given that version's ``loads``; None if all full."""
    if single_unlimited(ws):
        return ws.subsets[0].name
    blocked = unschedulable_subsets(ws, version)
    # Each limit scaled once, for both passes.
    candidates = [(s, subset_limit(s, replicas)) for s in ws.subsets if s.name not in blocked]
    for subset, limit in candidates:
        minimum = minimum_within(subset, limit)
        if minimum > 0 and loads.get(subset.name, _EMPTY).occupancy(now) < minimum:
            return subset.name
    for subset, limit in candidates:
        if limit is None or loads.get(subset.name, _EMPTY).occupancy(now) < limit:
            return subset.name
    return None


def ordinal_layout(ws: WorkloadSpread) -> list[tuple[str, int]]:
    """How many consecutive ordinals each schedulable subset takes, in ordinal order."""
    blocked = unschedulable_subsets(ws)
    minimums: list[tuple[str, int]] = []
    rooms: list[tuple[str, int]] = []
    for subset in ws.subsets:
        if subset.name in blocked:
            continue
        limit = INT32_MAX if subset.max_replicas is None else int_value(subset.max_replicas)
        minimum = minimum_within(subset, limit)
        minimums.append((subset.name, minimum))
        rooms.append((subset.name, limit - minimum))
    return minimums + rooms


def choose_subset_by_ordinal(ws: WorkloadSpread, ordinal: int) -> str | None:
    """The StatefulSet rule: running totals of :func:`ordinal_layout`; the first above ``ordinal``.

    A pod without an ordinal (-1) goes to the first schedulable subset, as in Kruise.
    """
    threshold = 0
    for name, count in ordinal_layout(ws):
        threshold += count
        if ordinal < threshold:
            return name
    return None
