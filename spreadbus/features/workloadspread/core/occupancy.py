"""How full each subset is, per pod version: pods counted plus reservations in flight.

Kruise keeps this in the WorkloadSpread status (``missingReplicas``, ``creatingPods``,
``deletingPods`` of ``versionedSubsetStatuses[version]``) and has the webhook rewrite the status on
every admission. spreadbus keeps the same three facts as a :class:`SubsetLoad` per version and
subset: the webhook holds them in memory, updates them incrementally from pod events
(:func:`pod_slot` says which counter a pod moves) and from its compare-and-set reservations on the
bus, and never scans pods on the admission path. :func:`loads_from_pods` is the full recount, for
start-up, the planner and the offline commands.

A subset's occupancy is ``active - deleting + creating``: active pods annotated to it, minus those
whose deletion is in flight (their replacement may be admitted, as Kruise's ``missingReplicas++``
allows), plus admissions whose pods have not been seen yet. Reservations expire as Kruise's do: a
create after 30 s, a delete after 15 s (strictly after: an entry exactly at the deadline lives).
Limits are per version, as in Kruise: during a rolling update the new version fills each subset up
to its limit while deletion costs remove the old version's pods first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Literal

import msgspec

from kubesemantics.intstr import IntOrStrError, scaled_value
from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.model import Subset, SubsetStatus, WorkloadSpread
from spreadbus.features.workloadspread.core.pod_state import Pod

CREATE_TIMEOUT = timedelta(seconds=30)
DELETE_TIMEOUT = timedelta(seconds=15)


def expired(at: datetime, timeout: timedelta, now: datetime) -> bool:
    """Whether an entry made ``at`` is dead at ``now``: only strictly past its deadline, as
    Kruise drops only entries whose deadline is before now (one exactly at it still counts)."""
    return at + timeout < now


def _live(entries: Mapping[str, datetime], timeout: timedelta, now: datetime) -> int:
    """How many entries are not :func:`expired`: ``at + timeout < now`` is ``at < now - timeout``,
    so one subtraction and a comparison per entry in C (read on every admission, over every
    reservation in flight)."""
    if not entries:
        return 0
    return sum(map((now - timeout).__le__, entries.values()))


class Reservation(msgspec.Struct, frozen=True):
    """An admission in flight: a slot taken (``creating``) or freed (``deleting``) in a subset."""

    workloadspread: str  # "namespace/name"
    version: str
    subset: str
    pod: str  # pod name, or the generated uid for pods admitted before they had a name
    kind: Literal["creating", "deleting"]
    at: datetime

    @property
    def timeout(self) -> timedelta:
        return CREATE_TIMEOUT if self.kind == "creating" else DELETE_TIMEOUT

    def live(self, now: datetime) -> bool:
        return not expired(self.at, self.timeout, now)


class SubsetLoad(msgspec.Struct, frozen=True):
    """One subset of one version: active pods counted and reservations in flight."""

    active: int = 0
    creating: dict[str, datetime] = msgspec.field(default_factory=dict)
    deleting: dict[str, datetime] = msgspec.field(default_factory=dict)

    def live_creating(self, now: datetime) -> int:
        return _live(self.creating, CREATE_TIMEOUT, now)

    def live_deleting(self, now: datetime) -> int:
        return _live(self.deleting, DELETE_TIMEOUT, now)

    def occupancy(self, now: datetime) -> int:
        return self.active - self.live_deleting(now) + self.live_creating(now)

    def holds(self, pod: str) -> bool:
        return pod in self.creating or pod in self.deleting


# version -> subset name -> load
Loads = dict[str, dict[str, SubsetLoad]]


def subset_limit(subset: Subset, replicas: int) -> int | None:
    """maxReplicas scaled (rounding up) against the workload's replicas; None means unlimited."""
    if subset.max_replicas is None:
        return None
    try:
        return max(scaled_value(subset.max_replicas, replicas, round_up=True), 0)
    except IntOrStrError:
        return 0


def subset_minimum(subset: Subset, replicas: int) -> int:
    """minReplicas, capped by the subset's limit (a percentage limit can scale below it)."""
    return minimum_within(subset, subset_limit(subset, replicas))


def minimum_within(subset: Subset, limit: int | None) -> int:
    """:func:`subset_minimum` against a limit the caller has already: a choice scales each limit
    once for both of its passes, and the ordinal layout reads maxReplicas unscaled."""
    minimum = subset.min_replicas if isinstance(subset.min_replicas, int) else 0
    return max(0, minimum if limit is None else min(minimum, limit))


def pod_slot(
    ws: WorkloadSpread,
    pod: Pod,
    *,
    versioned_kinds: frozenset[str] = pod_state.DEFAULT_VERSIONED_KINDS,
) -> tuple[str, str] | None:
    """The ``(version, subset)`` counter an active pod annotated for ``ws`` occupies, else None."""
    if not pod_state.is_active(pod):
        return None
    annotation = pod_state.matched(pod)
    if annotation is None or annotation.name != ws.name or ws.subset(annotation.subset) is None:
        return None
    return pod_state.version(pod, versioned_kinds), annotation.subset


def reservations_from_status(
    ws: WorkloadSpread, *, version: str | None = None
) -> list[Reservation]:
    """The creating/deleting entries Kruise-style status carries, read as reservations.

    Every ``versionedSubsetStatuses`` entry counts. When ``version`` is given and the status has
    no versioned entry for it, the top-level ``subsetStatuses`` entries stand for that version: a
    status written before versioned statuses existed keeps its admissions there.
    """
    versioned = ws.status.versioned_subset_statuses
    out: list[Reservation] = []
    for v, statuses in sorted(versioned.items()):
        out.extend(_status_reservations(ws.key, v, statuses))
    if version is not None and not versioned.get(version):
        out.extend(_status_reservations(ws.key, version, ws.status.subset_statuses))
    return out


def _status_reservations(
    key: str, version: str, statuses: Iterable[SubsetStatus]
) -> list[Reservation]:
    out: list[Reservation] = []
    for status in statuses:
        for pod, at in sorted(status.creating_pods.items()):
            out.append(Reservation(key, version, status.name, pod, "creating", at))
        for pod, at in sorted(status.deleting_pods.items()):
            out.append(Reservation(key, version, status.name, pod, "deleting", at))
    return out


def loads_from_pods(
    ws: WorkloadSpread,
    pods: Iterable[Pod],
    reservations: Iterable[Reservation],
    *,
    versioned_kinds: frozenset[str] = pod_state.DEFAULT_VERSIONED_KINDS,
) -> Loads:
    """Recount every subset of every version from the pods and the reservations in flight.

    A creating reservation disappears once a pod with its key is seen (in any state); a deleting
    reservation counts only while its pod is still active in that subset.
    """
    active: dict[tuple[str, str], int] = {}
    active_names: dict[tuple[str, str], set[str]] = {}
    seen_keys: set[str] = set()
    for pod in pods:
        seen_keys.add(pod_state.creating_key(pod))
        slot = pod_slot(ws, pod, versioned_kinds=versioned_kinds)
        if slot is None:
            continue
        active[slot] = active.get(slot, 0) + 1
        active_names.setdefault(slot, set()).add(pod_state.name(pod))
    creating: dict[tuple[str, str], dict[str, datetime]] = {}
    deleting: dict[tuple[str, str], dict[str, datetime]] = {}
    for r in reservations:
        if r.workloadspread != ws.key or ws.subset(r.subset) is None:
            continue
        slot = (r.version, r.subset)
        if r.kind == "creating" and r.pod not in seen_keys:
            creating.setdefault(slot, {})[r.pod] = min(
                r.at, creating.get(slot, {}).get(r.pod, r.at)
            )
        elif r.kind == "deleting" and r.pod in active_names.get(slot, set()):
            deleting.setdefault(slot, {})[r.pod] = min(
                r.at, deleting.get(slot, {}).get(r.pod, r.at)
            )
    loads: Loads = {}
    for slot in set(active) | set(creating) | set(deleting):
        version, subset = slot
        loads.setdefault(version, {})[subset] = SubsetLoad(
            active=active.get(slot, 0),
            creating=creating.get(slot, {}),
            deleting=deleting.get(slot, {}),
        )
    return loads


def version_loads(
    loads: Mapping[str, Mapping[str, SubsetLoad]], version: str
) -> dict[str, SubsetLoad]:
    return dict(loads.get(version, {}))


# --- Incremental upkeep, for the webhook's in-memory loads ------------------------------------
#
# Each function returns new loads and copies only the one version map it touches, so an event
# costs O(subsets), never O(pods).


def _replace(loads: Loads, version: str, subset: str, load: SubsetLoad) -> Loads:
    out = dict(loads)
    out[version] = {**loads.get(version, {}), subset: load}
    return out


def _load(loads: Mapping[str, Mapping[str, SubsetLoad]], version: str, subset: str) -> SubsetLoad:
    return loads.get(version, {}).get(subset, SubsetLoad())


def apply_pod_change(
    loads: Loads,
    ws: WorkloadSpread,
    old: Pod | None,
    new: Pod | None,
    *,
    versioned_kinds: frozenset[str] = pod_state.DEFAULT_VERSIONED_KINDS,
) -> Loads:
    """Account for one watched pod event: added (``old`` None), changed, or gone (``new`` None).

    The pod's slot count moves with it; a pod that appears settles the creating reservation kept
    under its key; a pod that leaves its slot (gone, inactive, moved) settles its deleting one.
    """
    before = pod_slot(ws, old, versioned_kinds=versioned_kinds) if old is not None else None
    after = pod_slot(ws, new, versioned_kinds=versioned_kinds) if new is not None else None
    out = loads
    if before is not None and before != after:
        load = _load(out, *before)
        deleting = {k: v for k, v in load.deleting.items() if k != pod_state.name(old or {})}
        out = _replace(out, *before, SubsetLoad(max(load.active - 1, 0), load.creating, deleting))
    if new is not None:
        key = pod_state.creating_key(new)
        for version, subsets in list(out.items()):
            for name, load in subsets.items():
                if key in load.creating:
                    creating = {k: v for k, v in load.creating.items() if k != key}
                    out = _replace(
                        out, version, name, SubsetLoad(load.active, creating, load.deleting)
                    )
    if after is not None and before != after:
        load = _load(out, *after)
        out = _replace(out, *after, SubsetLoad(load.active + 1, load.creating, load.deleting))
    return out


def apply_reservation(loads: Loads, reservation: Reservation) -> Loads:
    """Record a reservation (one the webhook won by compare-and-set, or saw another win)."""
    load = _load(loads, reservation.version, reservation.subset)
    if reservation.kind == "creating":
        creating = {**load.creating, reservation.pod: reservation.at}
        new = SubsetLoad(load.active, creating, load.deleting)
    else:
        deleting = {**load.deleting, reservation.pod: reservation.at}
        new = SubsetLoad(load.active, load.creating, deleting)
    return _replace(loads, reservation.version, reservation.subset, new)


def expire(loads: Loads, now: datetime) -> Loads:
    """Drop reservations past their deadline (creates after 30 s, deletes after 15 s)."""
    out: Loads = {}
    for version, subsets in loads.items():
        out[version] = {
            name: SubsetLoad(
                load.active,
                {k: t for k, t in load.creating.items() if not expired(t, CREATE_TIMEOUT, now)},
                {k: t for k, t in load.deleting.items() if not expired(t, DELETE_TIMEOUT, now)},
            )
            for name, load in subsets.items()
        }
    return out
