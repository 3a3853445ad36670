"""How full each subset is, per pod version: pods counted plus reservations in flight.

Kruise keeps this in the WorkloadSpread status (``missingReplicas``, ``creatingPods``,
``deletingPods`` of ``versionedSubsetStatuses[version]``) and has the webhook rewrite the status on
every admission. spreadbus keeps the same three facts as a :class:`SubsetLoad` per version and
subset, counted by one rule that every count of them calls:

- a pod is read once into an :class:`Occupant` (:func:`occupant`): its name, the reservation key
  its appearance settles, the WorkloadSpread and subset its annotation names, its version, whether
  it is active. It occupies the ``(version, subset)`` slot of that WorkloadSpread when it is
  active and the spec still has the subset (:meth:`Occupant.slot`); Kruise's grouping of the
  planner reads the same reading (:meth:`Occupant.bucket`);
- a reservation counts in its slot until a pod with its key is seen (creating) or while its pod
  still occupies the slot (deleting), for a subset the spec still has
  (:func:`counted`); :func:`count_loads` puts the two together.

The rule reads the pods through :class:`Occupied`: :class:`PodScan` is the full recount
(:func:`loads_from_pods`: the offline commands and the checks), the webhook's view keeps the same
readings up to date pod event by pod event, so that an admission never scans pods, and its
reservation tally carries a batch's count with :func:`apply_reservation`. Property tests fold
random histories into each cache and compare it with the full recount.

The planner's status is Kruise's controller algorithm (:mod:`.status`), which settles an entry in
flight by the pods of the subset's bucket only (pods matched by their node included); it reads
pods through :func:`occupant` too.

A subset's occupancy is ``active - deleting + creating``: active pods annotated to it, minus those
whose deletion is in flight (their replacement may be admitted, as Kruise's ``missingReplicas++``
allows), plus admissions whose pods have not been seen yet. Reservations expire as Kruise's do: a
create after 30 s, a delete after 15 s (strictly after: an entry exactly at the deadline lives),
read against the clock when a load is read, so that a count carried from one decision to the next
stays exact.
A count made from a view that lags behind the cluster (the webhook's) reads that clock through
:func:`expiry_clock`: a creating reservation whose pod exists but is not in the view yet must not
run out while the view is behind, or its slot would be given twice.
Limits are per version, as in Kruise: during a rolling update the new version fills each subset up
to its limit while deletion costs remove the old version's pods first.
"""

from __future__ import annotations

from collections.abc import Collection, Container, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Final, Literal, NamedTuple, Protocol

import msgspec

from kubesemantics import pod_status
from kubesemantics.intstr import IntOrStrError, scaled_value
from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.model import (
    FAKE_SUBSET,
    Subset,
    SubsetStatus,
    WorkloadSpread,
)
from spreadbus.features.workloadspread.core.pod_state import Pod

CREATE_TIMEOUT = timedelta(seconds=30)
DELETE_TIMEOUT = timedelta(seconds=15)

Slot = tuple[str, str]
"""(version, subset)."""


def expired(at: datetime, timeout: timedelta, now: datetime) -> bool:
    """Whether an entry made ``at`` is dead at ``now``: only strictly past its deadline, as
    Kruise drops only entries whose deadline is before now (one exactly at it still counts)."""
    return at + timeout < now


UNKNOWN_VIEW_TIME: Final = datetime(1970, 1, 1, tzinfo=UTC)
"""What :func:`expiry_clock` judges by for a view never known to be current: nothing expires."""


def expiry_clock(now: datetime, view_current_at: datetime | None) -> datetime:
    """The time a count from a view judges reservations expired by: ``now``, or, if earlier,
    the last time the view was known to hold every observation (None: never).

    A creating reservation counts until its pod is seen, or until 30 s have passed (the pod was
    never made). A view behind the cluster cannot tell the two apart: the pod may exist, unseen,
    and expiring its reservation would free its slot for another pod. Judged at the time the
    view is current as of, it runs out only once the view would have shown its pod; while the
    view is current this is ``now``, Kruise's rule. Deleting reservations keep the wall clock
    (:func:`without_expired_deletions`)."""
    if view_current_at is None:
        return UNKNOWN_VIEW_TIME
    return min(now, view_current_at)


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


def without_expired_deletions(
    loads: Mapping[str, SubsetLoad], now: datetime
) -> dict[str, SubsetLoad]:
    """``loads`` without the deleting reservations dead at ``now``, for a count whose clock
    (:func:`expiry_clock`) is behind ``now``: a deletion frees its pod's slot for 15 s of the
    wall clock, never longer, since a lagging view still shows that pod while it runs, and a
    deletion that failed must not let its slot be taken for as long as the view lags."""
    out = dict(loads)
    for subset, load in loads.items():
        deleting = load.deleting
        if deleting and load.live_deleting(now) != len(deleting):
            live = {pod: at for pod, at in deleting.items() if not expired(at, DELETE_TIMEOUT, now)}
            out[subset] = SubsetLoad(load.active, load.creating, live)
    return out


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


class Occupant(NamedTuple):
    """What the counting rule reads of one pod: every cache of it keeps this, read once per
    observation, so that none reads the pod's JSON its own way."""

    name: str
    key: str
    """The reservation key the pod's appearance settles: the annotation's uid, else its name."""
    spread: str
    """The WorkloadSpread its matched annotation names ("" without a readable annotation)."""
    subset: str
    version: str
    active: bool

    @property
    def claim(self) -> tuple[str, Slot] | None:
        """``(spread, (version, subset))`` an active annotated pod occupies, before that spread's
        spec is consulted: what a cache indexes when it cannot know the spec (it may change)."""
        if not self.active or not self.spread or not self.subset:
            return None
        return self.spread, (self.version, self.subset)

    def slot(self, spread: str, subsets: Container[str]) -> Slot | None:
        """The ``(version, subset)`` counter this pod occupies in ``spread`` (whose spec names
        ``subsets``), else None: active, annotated for it, into a subset its spec still has."""
        claim = self.claim
        if claim is None or claim[0] != spread or self.subset not in subsets:
            return None
        return claim[1]

    def bucket(self, spread: str, subsets: Container[str]) -> str | None:
        """Kruise's grouping of a pod, active or not: the subset it is annotated into for
        ``spread``, :data:`FAKE_SUBSET` when the spec no longer has it, None when it is not
        annotated for ``spread`` (the planner then matches it by its node)."""
        if self.spread != spread or not self.subset:
            return None
        return self.subset if self.subset in subsets else FAKE_SUBSET


def occupant(
    pod: Pod, versioned_kinds: frozenset[str] = pod_state.DEFAULT_VERSIONED_KINDS
) -> Occupant:
    """The one reading of a pod every count of a WorkloadSpread's subsets is made from."""
    annotation = pod_state.matched(pod)
    name = pod_state.name(pod)
    key = pod_state.creating_key_with(annotation, pod)
    version = pod_state.version(pod, versioned_kinds)
    active = pod_status.active_deleting_truthy(pod)
    # Built positionally: the view reads every pod change its fast path does not skip.
    if annotation is None:
        return Occupant(name, key, "", "", version, active)
    return Occupant(name, key, annotation.name, annotation.subset, version, active)


def pod_slot(
    ws: WorkloadSpread,
    pod: Pod,
    *,
    versioned_kinds: frozenset[str] = pod_state.DEFAULT_VERSIONED_KINDS,
) -> Slot | None:
    """The ``(version, subset)`` counter ``pod`` occupies in ``ws``, else None."""
    return occupant(pod, versioned_kinds).slot(ws.name, subset_names(ws))


def subset_names(ws: WorkloadSpread) -> frozenset[str]:
    return frozenset(s.name for s in ws.subsets)


class Occupied(Protocol):
    """One WorkloadSpread's pods as the rule counts them, in one namespace: built by a full scan
    (:class:`PodScan`) or kept by a cache of :func:`occupant` readings (the webhook's view)."""

    def keys(self) -> Container[str]:
        """The reservation keys of the pods present, in any state (:attr:`Occupant.key`)."""

    def slots(self) -> Mapping[Slot, Collection[str]]:
        """Names of the pods each ``(version, subset)`` claim holds (:attr:`Occupant.claim`);
        subsets the spec no longer has may be among them."""


def counted(
    ws: WorkloadSpread,
    occupied: Occupied,
    reservations: Iterable[Reservation],
    *,
    version: str | None = None,
) -> list[Reservation]:
    """The reservations in flight that still count in their slot (their expiry aside, which
    :class:`SubsetLoad` reads against the clock): a creating one until a pod with its key is
    seen, a deleting one while its pod still occupies that slot; only for ``ws`` and a subset
    of its spec. With ``version``, only the reservations of that version are asked about.

    One pass over many, what it reads of the WorkloadSpread and the pods looked up once: a
    ledger can hold a thousand reservations, and a count walks it whole.
    """
    key, subsets = ws.key, subset_names(ws)
    seen, slots = occupied.keys(), occupied.slots()
    return [
        r
        for r in reservations
        if (version is None or r.version == version)
        and r.workloadspread == key
        and r.subset in subsets
        and (
            r.pod not in seen
            if r.kind == "creating"
            else r.pod in slots.get((r.version, r.subset), ())
        )
    ]


def reservation_counts(ws: WorkloadSpread, reservation: Reservation, occupied: Occupied) -> bool:
    """Whether one reservation still counts (:func:`counted`)."""
    return bool(counted(ws, occupied, (reservation,)))


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


class PodScan:
    """:class:`Occupied` read from a list of pods: the full recount, for the offline commands
    and to check the caches against."""

    def __init__(
        self,
        ws: WorkloadSpread,
        pods: Iterable[Pod],
        versioned_kinds: frozenset[str] = pod_state.DEFAULT_VERSIONED_KINDS,
    ) -> None:
        self._keys: set[str] = set()
        self._slots: dict[Slot, list[str]] = {}
        for pod in pods:
            found = occupant(pod, versioned_kinds)
            self._keys.add(found.key)
            claim = found.claim
            if claim is not None and claim[0] == ws.name:
                self._slots.setdefault(claim[1], []).append(found.name)

    def keys(self) -> Container[str]:
        return self._keys

    def slots(self) -> Mapping[Slot, Collection[str]]:
        return self._slots


def count_loads(
    ws: WorkloadSpread,
    occupied: Occupied,
    reservations: Iterable[Reservation],
    *,
    version: str | None = None,
) -> Loads:
    """Every subset's load (of ``version`` only, when given): the active pods each slot holds
    and the reservations that still count there (:func:`counted`); a pod reserved twice
    in a slot counts once, from the earlier time."""
    subsets = subset_names(ws)
    active: dict[Slot, int] = {}
    for slot, names in occupied.slots().items():
        if names and slot[1] in subsets and (version is None or slot[0] == version):
            active[slot] = len(names)
    creating: dict[Slot, dict[str, datetime]] = {}
    deleting: dict[Slot, dict[str, datetime]] = {}
    for r in counted(ws, occupied, reservations, version=version):
        gathered = creating if r.kind == "creating" else deleting
        slot = (r.version, r.subset)
        entries = gathered.get(slot)
        if entries is None:
            entries = gathered[slot] = {}
        pod, at = r.pod, r.at
        if entries.setdefault(pod, at) is not at and at < entries[pod]:
            entries[pod] = at
    loads: Loads = {}
    for slot in dict.fromkeys([*active, *creating, *deleting]):
        slot_version, subset = slot
        loads.setdefault(slot_version, {})[subset] = SubsetLoad(
            active=active.get(slot, 0),
            creating=creating.get(slot, {}),
            deleting=deleting.get(slot, {}),
        )
    return loads


def loads_from_pods(
    ws: WorkloadSpread,
    pods: Iterable[Pod],
    reservations: Iterable[Reservation],
    *,
    versioned_kinds: frozenset[str] = pod_state.DEFAULT_VERSIONED_KINDS,
) -> Loads:
    """Recount every subset of every version from the pods and the reservations in flight."""
    return count_loads(ws, PodScan(ws, pods, versioned_kinds), reservations)


def apply_reservation(loads: Loads, reservation: Reservation) -> Loads:
    """Loads with one more reservation counted: the caller has checked it counts
    (:func:`reservation_counts`). Copies only the version map it touches."""
    load = loads.get(reservation.version, {}).get(reservation.subset, SubsetLoad())
    if reservation.kind == "creating":
        creating = {**load.creating, reservation.pod: reservation.at}
        new = SubsetLoad(load.active, creating, load.deleting)
    else:
        deleting = {**load.deleting, reservation.pod: reservation.at}
        new = SubsetLoad(load.active, load.creating, deleting)
    out = dict(loads)
    out[reservation.version] = {**loads.get(reservation.version, {}), reservation.subset: new}
    return out
