"""Why an admission chose its subset: each subset as the decision counted it, and the reason.

The audit log records this next to the choice, so "why did this pod land in the elastic pool" is
answered from what the webhook saw then (``fixed is full (100/100); elastic has room
(0/unlimited)``), not from what the cluster holds now. The wording follows the choice's own
passes (:mod:`.subset_choice`): minimums first, then first fit in spec order, skipping
unschedulable and full subsets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

import msgspec

from spreadbus.features.workloadspread.core.model import WorkloadSpread
from spreadbus.features.workloadspread.core.occupancy import (
    SubsetLoad,
    minimum_within,
    subset_limit,
)
from spreadbus.features.workloadspread.core.subset_choice import (
    single_unlimited,
    unschedulable_subsets,
)

_EMPTY = SubsetLoad()


class SubsetSeen(msgspec.Struct, frozen=True, kw_only=True):
    """One subset as a decision counted it."""

    name: str
    occupancy: int
    limit: int | None
    minimum: int
    schedulable: bool


def subsets_seen(
    ws: WorkloadSpread,
    *,
    replicas: int,
    loads: Mapping[str, SubsetLoad],
    now: datetime,
    version: str | None = None,
) -> list[SubsetSeen]:
    """Every subset of ``ws`` in spec order, with the occupancy, limit and schedulability the
    choice reads for a pod of ``version``."""
    blocked = unschedulable_subsets(ws, version)
    seen = []
    for subset in ws.subsets:
        limit = subset_limit(subset, replicas)
        seen.append(SubsetSeen(
            name=subset.name,
            occupancy=loads.get(subset.name, _EMPTY).occupancy(now),
            limit=limit,
            minimum=minimum_within(subset, limit),
            schedulable=subset.name not in blocked,
        ))
    return seen


def _count(seen: SubsetSeen) -> str:
    return f"{seen.occupancy}/{'unlimited' if seen.limit is None else seen.limit}"


def _has_room(seen: SubsetSeen) -> bool:
    return seen.limit is None or seen.occupancy < seen.limit


def admission_reason(
    ws: WorkloadSpread, seen: Sequence[SubsetSeen], chosen: str | None, *, held: bool = False
) -> str:
    """The reason for choosing ``chosen`` (None: no subset) given the subsets as ``seen``."""
    if ws.target_ref is not None and ws.target_ref.kind == "StatefulSet":
        return (f"StatefulSet pods go by ordinal: {chosen} takes this ordinal" if chosen
                else "StatefulSet pods go by ordinal: no subset takes this ordinal")
    if single_unlimited(ws):
        return f"{chosen} is the only subset and unlimited"
    if held and chosen:
        return f"{chosen} already holds this pod's reservation (the same pod admitted again)"
    by_name = {s.name: s for s in seen}
    picked = by_name.get(chosen or "")
    if picked is not None and picked.minimum > 0 and picked.occupancy < picked.minimum:
        return f"{chosen} is below its minimum ({picked.occupancy}/{picked.minimum})"
    parts = []
    for subset in seen:
        if subset.name == chosen:
            parts.append(f"{subset.name} has room ({_count(subset)})")
            break
        if not subset.schedulable:
            parts.append(f"{subset.name} is unschedulable")
        elif not _has_room(subset):
            parts.append(f"{subset.name} is full ({_count(subset)})")
        else:
            parts.append(f"{subset.name} has room ({_count(subset)})")
    if chosen is None:
        return "no subset has room: " + "; ".join(parts)
    return "; ".join(parts)
