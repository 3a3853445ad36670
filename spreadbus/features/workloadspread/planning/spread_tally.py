"""One WorkloadSpread's pods, kept bucketed pod by pod, and what the planner writes for them.

:func:`spreadbus.features.workloadspread.core.reconcile.plan_workloadspread` is the definition: a
pure function of the whole state (the WorkloadSpread, its workload, all its pods, reservations,
now). Calling it on every change costs every pod of the workload, and while a thousand pods start
that is a thousand pods per round. :class:`SpreadTally` computes the same answer from what changed:

- :meth:`SpreadTally.apply` takes one changed pod (or its disappearance) and moves it between
  buckets (version, subset), keeping per bucket the count of active pods, the keys the webhook
  records creations under, the active pods' keys in key order and in scale-in order, and the pods
  pending unschedulable ordered by since when; its cost is one pod (a pod that stays in its
  bucket, as while it starts, is moved only in the ordered sets where its place changed);
- :meth:`SpreadTally.plan` builds the status from those counters (subsets x versions, plus the
  reservations and previous entries in flight, never the pods) and the deletion costs bucket by
  bucket. A subset's bucket in scale-in order (Kubernetes' ``ActivePods.Less``, then key, as the
  core's stable sort of a key-ordered bucket) is cut in two places: the pods beyond its limit
  come first (negative value), the ``minReplicas`` protected ones last. A pod that did not change
  keeps its place, so its value changes only when a cut moves across it; a plan reads the pods
  that changed and those between each cut's old and new place (as many as values change), and a
  whole bucket only when its values themselves change (the workload's latest version moved on).

A pod is read once per observation by the core's counting rule
(:func:`~spreadbus.features.workloadspread.core.occupancy.occupant`): the bucket its annotation
puts it in, its version, whether it is active and the reservation key it settles, the reading the
webhook's view and the offline recount count from; the property tests check the active pods the
tally holds per version and subset against that recount as well.

Deletions in flight. Kruise's ``missingReplicas`` loop walks a bucket's active pods in order:
each takes one off (floored at 0) and one whose deletion is in flight gives it back (capped at
the maximum). Composed, the result is a closed form of three counts (see :func:`_missing`): the
active pods, those being deleted, and the active pods that come *after the last one being
deleted* in the full computation's order. That order is key order within a version, and for the
top-level list the versions one after the other in the order a key-ordered pass first meets them.
Each bucket's active keys are kept in a :class:`~spreadbus.projection.sorted_set.SortedSet` (and
each version's keys, for its first one), so the count is a rank query: a plan reads the pods the
entries in flight name, never the others.

Adaptive rescheduling. Only a pod pending, unbound and ``Unschedulable`` can be stuck; each
bucket keeps those ordered by the time they became so. A plan reads, per bucket, whether the
first one has passed ``rescheduleCriticalSeconds`` (the subset's ``Schedulable`` condition), the
first one still ahead (the next wake-up), and, for the top-level list, the stuck pods themselves
(the evictions, in the full computation's order). The condition's recovery window is a function
of the previous status and ``now``, so time passing needs no pod at all.

Pods not annotated for this WorkloadSpread (made before it, or annotated for another one) are
matched to a subset by their node, as the full computation does. Whether a subset still has quota
for one (a point of its score) depends on the pods of its version matched before it in key order,
so the matches are a chain through the unannotated pods of a version that fit some subset, which
each plan walks (:meth:`SpreadTally._place`): a plan costs those pods, never the annotated ones
(they count through their buckets' sizes). Matched pods are annotated by the plan's
``pod_patches``, so the chain shortens as those writes are observed. A pod that fits no subset
takes no quota and depends on nothing but itself and its node; it is placed again only when it
changes or the caller reports its node changed (:meth:`SpreadTally.node_changed`). A pod whose
place changed moves between buckets as a changed pod does.

The answer equals the full computation over the pods in key order (property tests replay random
event sequences against it, Adaptive spreads, deletions in flight and unannotated pods included).
:meth:`SpreadTally.plan` calls the full computation itself (``everything`` is then set) only for
a ``replicasPathList`` that does not resolve, which keeps the status whatever the pods: it is
given no pod.

Deletion costs are handed out as ``updates``: the pods touched since the last plan and the pods
whose wanted value changed, each with the annotation value when it differs from what the pod
carries. A pod whose value and observation did not change is not handed out again: its write is
in flight or done, and a failed write comes back as a change of that pod.

The tally is bound to one WorkloadSpread spec (name and subsets); the caller builds a new one when
the spec changes, as it does for any change in which pods the WorkloadSpread governs.

Signatures::

    SpreadTally(ws: WorkloadSpread)
        .reset(pods: Iterable[tuple[str, Pod]]) -> None      # (key, pod): every governed pod
        .apply(key: str, pod: Pod | None) -> None           # one pod changed, or left
        .node_changed(name: str) -> None                     # a node changed, came or went
        .plan(ws, *, workload, latest, reservations, now, whitelist, nodes,
              recover_after_seconds) -> TallyPlan
        .pod(key) -> Pod | None ; .pods() -> list[Pod]       # in key order
        .differing() -> dict[str, str]                       # every annotation to change (a check)
        .examined: int                                       # pods read so far (work, counted)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple, TypeVar

import msgspec

from spreadbus.features.workloadspread.core import pod_state, reconcile
from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.deletion_cost import (
    applies_to,
    cost_to_write,
    cut_points,
    subset_values,
    unmatched_value,
)
from spreadbus.features.workloadspread.core.existing_pods import (
    best_subset,
    initial_quota,
    matched_pod,
)
from spreadbus.features.workloadspread.core.model import (
    DELETION_COST_ANNOTATION,
    FAKE_SUBSET,
    JSON,
    Status,
    SubsetStatus,
    WorkloadSpread,
)
from spreadbus.features.workloadspread.core.occupancy import (
    CREATE_TIMEOUT,
    DELETE_TIMEOUT,
    Reservation,
    expired,
    minimum_within,
    occupant,
    subset_limit,
    subset_names,
)
from spreadbus.features.workloadspread.core.pod_state import Pod
from spreadbus.features.workloadspread.core.reschedule import RECOVER_AFTER, schedulable_condition
from spreadbus.features.workloadspread.core.subset_choice import unschedulable_subsets
from spreadbus.features.workloadspread.core.target import ReplicasPathError, workload_replicas
from spreadbus.projection.sorted_set import SortedSet

_K = TypeVar("_K")
_T = TypeVar("_T", bound=Any)

Bucket = tuple[str, str]
"""(version, subset name or :data:`FAKE_SUBSET`)."""
Nodes = Callable[[Sequence[Pod]], Mapping[str, Mapping[str, Any]]]


class _Facts(NamedTuple):
    """What the plan reads of one pod, read once per observation."""

    key: str  # "namespace/name"
    obj: Pod
    version: str
    bucket: str | None  # None: not annotated for this WorkloadSpread (matched by its node)
    active: bool
    creating_key: str
    cost: str | None  # the deletion-cost annotation it carries
    unschedulable_since: datetime | None  # pending, unbound and Unschedulable: the clock's origin
    order: tuple[Any, ...]  # its place in the scale-in order (deletion_order_key, then key)


@dataclass
class TallyPlan:
    status: Status
    updates: dict[str, str]
    """Pod key -> deletion-cost annotation to write (see the module docstring)."""
    pod_patches: dict[str, JSON] = field(default_factory=dict)
    evictions: list[reconcile.Eviction] = field(default_factory=list)
    requeue_at: datetime | None = None
    everything: bool = False
    """The full computation answered (a ``replicasPathList`` that does not resolve)."""


class _Placement(NamedTuple):
    """Where the plan puts a pod not annotated for this WorkloadSpread, and what it writes."""

    subset: str | None  # None: the fake bucket (no subset fits its node)
    patch: JSON | None  # the matched annotation (and subset metadata) to write
    facts: _Facts  # the pod as the plan counts it: annotated when matched, in its version


_Cuts = tuple[tuple[Any, ...] | None, tuple[Any, ...] | None]
"""Places in a bucket's scale-in order: the first pod within the limit, the first protected
pod; None is past the last pod."""
_NO_CUTS: _Cuts = (None, None)


def _below(a: tuple[Any, ...] | None, b: tuple[Any, ...] | None) -> bool:
    """``a < b`` with None past every place."""
    return a is not None and (b is None or a < b)


def _cost(order: tuple[Any, ...], values: tuple[int, int, int], cuts: _Cuts) -> int:
    """A pod's cost from where it stands against the cuts: beyond the limit, within, protected."""
    within, protected = cuts
    if _below(order, within):
        return values[0]
    if protected is not None and not _below(order, protected):
        return values[2]
    return values[1]


@dataclass
class _Clock:
    """One plan's time: ``now``, the Adaptive recovery window, and the wake-ups collected."""

    now: datetime
    recover_after: timedelta
    wake: list[datetime]


def _facts(ws: WorkloadSpread, names: frozenset[str], pod: Pod) -> _Facts:
    """The pod as the plan counts it: the counting rule's reading (:func:`occupant`), and what
    the status and the deletion costs read besides."""
    found = occupant(pod)
    key = pod_state.key(pod)
    return _Facts(
        key=key,
        obj=pod,
        version=found.version,
        bucket=found.bucket(ws.name, names),
        active=found.active,
        creating_key=found.key,
        cost=pod_state.annotation(pod, DELETION_COST_ANNOTATION),
        unschedulable_since=pod_state.unschedulable_deadline(pod, timedelta(0)),
        order=(pod_state.deletion_order_key(pod), key),
    )


def _sorted_in(table: dict[_K, SortedSet[_T]], key: _K) -> SortedSet[_T]:
    """``table[key]``, made empty if missing (``setdefault`` would build one on every call)."""
    found = table.get(key)
    if found is None:
        found = table[key] = SortedSet()
    return found


def _missing(maximum: int, active: int, kept: int, after_last_kept: int | None,
             creating: int) -> int:
    """Kruise's ``missingReplicas`` loop over one bucket, in closed form.

    The loop walks the active pods in order: each pod takes one off ``missing`` (floored at 0)
    and a pod whose deletion is in flight gives it back (capped at the maximum), so for a
    positive maximum a plain pod maps ``x`` to ``max(x - 1, 0)`` and a deleting one to
    ``max(x, 1)``. Composed, that is ``max(maximum - plain, 0 if any plain, 1 - plain pods after
    the last deleting one)``: the only thing the order decides is how many plain pods follow
    the last deleting pod (``after_last_kept``, None when none is deleting). Creating entries
    left then take one each, floored at 0. A maximum of 0 or -1 (unlimited) never moves.
    """
    if maximum <= 0:
        return maximum
    plain = active - kept
    missing = maximum - plain
    if plain:
        missing = max(missing, 0)
    if after_last_kept is not None:
        missing = max(missing, 1 - after_last_kept)
    return max(missing - creating, 0) if missing > 0 else missing


class SpreadTally:
    def __init__(self, ws: WorkloadSpread) -> None:
        self._ws = ws
        self._names = subset_names(ws)
        self._pods: dict[str, _Facts] = {}
        self._by_key: dict[str, str] = {}  # pod "namespace/name" -> caller's key
        self._buckets: dict[Bucket, dict[str, _Facts]] = {}
        self._active: Counter[Bucket] = Counter()
        self._active_keys: dict[Bucket, SortedSet[str]] = {}  # pod keys of the active pods
        self._order: dict[Bucket, SortedSet[tuple[Any, ...]]] = {}  # active, in scale-in order
        self._unschedulable: dict[Bucket, SortedSet[tuple[datetime, str]]] = {}  # (since, key)
        self._creating: dict[Bucket, Counter[str]] = {}
        self._versions: dict[str, SortedSet[str]] = {}  # version -> pod keys (any bucket)
        self._annotated: Counter[Bucket] = Counter()  # pods annotated into each bucket
        self._loose: dict[str, _Facts] = {}  # caller key -> a pod not annotated for ws
        self._placed: dict[str, _Placement] = {}  # caller key -> where the last plan put it
        self._unsettled: set[str] = set()  # loose pods to place again (not known to fit nowhere)
        self._loose_on: dict[str, set[str]] = {}  # node name -> loose pods on it
        self._touched: set[str] = set()  # caller keys
        self._costs: dict[str, int] = {}  # pod "namespace/name" -> wanted cost
        self._regime: dict[Bucket, tuple[Any, ...]] = {}
        self.examined = 0
        """Pods read so far (one per observation applied, one per pod a plan looks at): the
        work a plan costs, counted the same on every machine."""

    # -- pods ------------------------------------------------------------------------------------

    def reset(self, pods: Iterable[tuple[str, Pod]]) -> None:
        for key in list(self._pods):
            self.apply(key, None)
        for key, pod in pods:
            self.apply(key, pod)

    def apply(self, key: str, pod: Pod | None) -> None:
        facts = _facts(self._ws, self._names, pod) if pod is not None else None
        old = self._pods.pop(key, None)  # put back at the end, as a pod observed again goes
        self._touched.add(key)
        if facts is None:
            if old is not None:
                self._remove(key, old)
            return
        self.examined += 1
        if (old is not None and old.bucket is not None and facts.bucket == old.bucket
                and facts.version == old.version and facts.key == old.key):
            # It stays in its bucket: only what moved in it is updated (its key, so its entry in
            # the key index and the version's keys, is the same).
            self._costs.pop(old.key, None)
            self._pods[key] = facts
            self._shift((old.version, old.bucket), key, old, facts)
            return
        if old is not None:
            self._remove(key, old)
        self._add(key, facts)

    def _remove(self, key: str, old: _Facts) -> None:
        self._by_key.pop(old.key, None)
        keys = self._versions[old.version]
        keys.discard(old.key)
        if not keys:
            del self._versions[old.version]
        if old.bucket is None:
            del self._loose[key]
            self._unsettled.discard(key)
            node = pod_state.node_name(old.obj)
            if node:
                self._loose_on[node].discard(key)
                if not self._loose_on[node]:
                    del self._loose_on[node]
            self._unplace(key)
        else:
            self._annotated[(old.version, old.bucket)] -= 1
            self._leave((old.version, old.bucket), key, old)
        self._costs.pop(old.key, None)

    def _add(self, key: str, facts: _Facts) -> None:
        self._pods[key] = facts
        self._by_key[facts.key] = key
        _sorted_in(self._versions, facts.version).add(facts.key)
        if facts.bucket is None:
            self._loose[key] = facts
            self._unsettled.add(key)
            node = pod_state.node_name(facts.obj)
            if node:
                self._loose_on.setdefault(node, set()).add(key)
        else:
            self._annotated[(facts.version, facts.bucket)] += 1
            self._enter((facts.version, facts.bucket), key, facts)

    def _shift(self, bucket: Bucket, key: str, old: _Facts, new: _Facts) -> None:
        """:meth:`_leave` of ``old`` then :meth:`_enter` of ``new``, for a pod that stays in its
        bucket: its key stays in the bucket's and the version's key sets, and the ordered sets
        change only where the pod moved in them. The bucket is kept even when the pod is its
        only member, so its scale-in regime too: the next plan reads the touched pod anyway."""
        members = self._buckets[bucket]
        del members[key]
        members[key] = new
        if old.creating_key != new.creating_key:
            creating = self._creating[bucket]
            creating[old.creating_key] -= 1
            if not creating[old.creating_key]:
                del creating[old.creating_key]
            creating[new.creating_key] += 1
        if old.active and new.active:
            if old.order != new.order:
                order = self._order[bucket]
                order.discard(old.order)
                order.add(new.order)
        elif old.active:
            self._active[bucket] -= 1
            self._active_keys[bucket].discard(old.key)
            self._order[bucket].discard(old.order)
        elif new.active:
            self._active[bucket] += 1
            _sorted_in(self._active_keys, bucket).add(new.key)
            _sorted_in(self._order, bucket).add(new.order)
        if old.unschedulable_since != new.unschedulable_since:
            if old.unschedulable_since is not None:
                pending = self._unschedulable[bucket]
                pending.discard((old.unschedulable_since, old.key))
                if not pending:
                    del self._unschedulable[bucket]
            if new.unschedulable_since is not None:
                _sorted_in(self._unschedulable, bucket).add(
                    (new.unschedulable_since, new.key))

    def _enter(self, bucket: Bucket, key: str, facts: _Facts) -> None:
        members = self._buckets.get(bucket)
        if members is None:
            members = self._buckets[bucket] = {}
            self._creating[bucket] = Counter()
        members[key] = facts
        self._creating[bucket][facts.creating_key] += 1
        if facts.active:
            self._active[bucket] += 1
            _sorted_in(self._active_keys, bucket).add(facts.key)
            _sorted_in(self._order, bucket).add(facts.order)
        if facts.unschedulable_since is not None:
            _sorted_in(self._unschedulable, bucket).add(
                (facts.unschedulable_since, facts.key))

    def _leave(self, bucket: Bucket, key: str, facts: _Facts) -> None:
        members = self._buckets[bucket]
        del members[key]
        creating = self._creating[bucket]
        creating[facts.creating_key] -= 1
        if not creating[facts.creating_key]:
            del creating[facts.creating_key]
        if facts.active:
            self._active[bucket] -= 1
            self._active_keys[bucket].discard(facts.key)
            self._order[bucket].discard(facts.order)
        if facts.unschedulable_since is not None:
            pending = self._unschedulable[bucket]
            pending.discard((facts.unschedulable_since, facts.key))
            if not pending:
                del self._unschedulable[bucket]
        if not members:
            del self._buckets[bucket]
            del self._creating[bucket]
            self._active.pop(bucket, None)
            self._active_keys.pop(bucket, None)
            self._order.pop(bucket, None)
            self._regime.pop(bucket, None)

    def node_changed(self, name: str) -> None:
        """The node ``name`` changed (or came, or went): its pods not annotated for this
        WorkloadSpread are placed again at the next plan."""
        self._unsettled |= self._loose_on.get(name, set())

    def _current(self, caller: str) -> _Facts:
        """The pod as plans count it (a pod not annotated: as the last plan placed it)."""
        placed = self._placed.get(caller)
        return placed.facts if placed is not None else self._pods[caller]

    def pod(self, key: str) -> Pod | None:
        """The pod named ``namespace/name``, if governed."""
        caller = self._by_key.get(key)
        return None if caller is None else self._pods[caller].obj

    def cost_to_carry(self, key: str) -> str | None:
        """The deletion cost the pod ``namespace/name`` does not carry yet, handed out or not.

        A write that is repeated until observed (a match's ``pod_patches``) carries it too, so
        it repeats the write that was handed out instead of becoming a second, different one.
        """
        caller = self._by_key.get(key)
        if caller is None:
            return None
        return cost_to_write(self._current(caller).cost, self._costs.get(key))

    def pods(self) -> list[Pod]:
        """Every governed pod, in key order (the order the full computation is given)."""
        return [f.obj for f in sorted(self._pods.values(), key=lambda f: f.key)]

    def differing(self) -> dict[str, str]:
        """Every pod whose annotation differs from its wanted cost (as of the last fast plan).

        A full pass, for checks; planning hands out only what changed (``updates``).
        """
        out: dict[str, str] = {}
        for caller in self._pods:
            facts = self._current(caller)
            value = cost_to_write(facts.cost, self._costs.get(facts.key))
            if value is not None:
                out[facts.key] = value
        return out

    # -- the plan --------------------------------------------------------------------------------

    def plan(
        self,
        ws: WorkloadSpread,
        *,
        workload: Mapping[str, Any] | None,
        latest: str | None,
        reservations: Sequence[Reservation],
        now: datetime,
        whitelist: Whitelist,
        nodes: Nodes,
        recover_after_seconds: float = RECOVER_AFTER.total_seconds(),
    ) -> TallyPlan:
        mine = [r for r in reservations if r.workloadspread == ws.key]
        try:
            replicas: int | None = workload_replicas(ws, workload, whitelist=whitelist)
        except ReplicasPathError:
            replicas = None
        if replicas is None:
            # A ``replicasPathList`` that does not resolve: the full computation keeps the status
            # and reads no pod, so it is given none. The tally is left as it is: the next plan
            # that can count hands out everything that changed since the last one.
            full = reconcile.plan_workloadspread(
                ws, workload=workload, pods=(), nodes={}, reservations=mine, now=now,
                whitelist=whitelist, latest=latest, recover_after_seconds=recover_after_seconds,
            )
            return TallyPlan(status=full.status, updates=dict(full.deletion_costs),
                             pod_patches=dict(full.pod_patches), evictions=list(full.evictions),
                             requeue_at=full.requeue_at, everything=True)
        patches = self._place(ws, replicas, nodes)
        wake: list[datetime] = []
        clock = _Clock(now, timedelta(seconds=recover_after_seconds), wake)
        stuck: dict[str, list[_Facts]] = {}
        status = Status(
            observed_generation=ws.generation,
            subset_statuses=self._statuses(ws, None, ws.status.subset_statuses, (), replicas,
                                           clock, stuck),
            versioned_subset_statuses=self._versioned(ws, mine, replicas, clock),
        )
        closed = unschedulable_subsets(ws)
        seconds = ws.schedule_strategy.reschedule_critical_seconds
        evictions = [
            reconcile.Eviction(
                pod=facts.key, subset=name,
                reason=f"unschedulable for more than {seconds}s in subset {name}",
            )
            for name, pods in stuck.items() if name in closed for facts in pods
        ]
        changed = self._update_costs(ws, replicas, latest)
        updates: dict[str, str] = {}
        for key in self._touched:
            facts = self._pods.get(key)
            if facts is not None:
                changed.add(facts.key)
        for pod_key in changed:
            caller = self._by_key.get(pod_key)
            if caller is None:
                continue
            value = cost_to_write(self._current(caller).cost, self._costs.get(pod_key))
            if value is not None:
                updates[pod_key] = value
        self._touched.clear()
        future = [t for t in wake if t >= now]
        return TallyPlan(status=status, updates=updates, pod_patches=patches,
                         evictions=evictions, requeue_at=min(future) if future else None)

    def _place(self, ws: WorkloadSpread, replicas: int, nodes: Nodes) -> dict[str, JSON]:
        """Match the pods not annotated for ``ws`` to subsets by their nodes, as the full
        computation does; the annotations to write (pod key -> patch).

        A pod scores one point more in a subset with quota left, and the quota is what the
        version's annotated pods leave minus the pods matched before it in key order, so the
        matches are a chain through the version's unannotated pods that fit a subset: every plan
        walks that chain (those pods only; the annotated ones count through their buckets'
        sizes). A pod that fits no subset takes no quota and its place depends on itself and its
        node only: it stays settled until it or its node changes (:meth:`node_changed`). A pod
        whose place changed moves between buckets like a changed pod.
        """
        if not self._unsettled:
            return {}
        limits = initial_quota(ws, replicas)
        by_version: dict[str, list[tuple[str, str]]] = {}
        for caller in self._unsettled:
            facts = self._loose[caller]
            by_version.setdefault(facts.version, []).append((facts.key, caller))
        found = nodes([self._loose[caller].obj for caller in self._unsettled])
        patches: dict[str, JSON] = {}
        for version, members in by_version.items():
            quota = {name: limit - self._annotated.get((version, name), 0)
                     for name, limit in limits.items()}
            for pod_key, caller in sorted(members):
                facts = self._loose[caller]
                self.examined += 1
                node_name = pod_state.node_name(facts.obj)
                best = best_subset(ws, facts.obj, found.get(node_name) if node_name else None,
                                   quota)
                placed = self._placed.get(caller)
                if placed is None or placed.subset != (best.name if best else None):
                    if best is None:
                        placed = _Placement(None, None, facts._replace(bucket=FAKE_SUBSET))
                    else:
                        patch, updated = matched_pod(ws, facts.obj, best)
                        counted = _facts(ws, self._names, updated)
                        placed = _Placement(best.name, patch, counted._replace(
                            version=version, bucket=best.name))
                    self._move(caller, placed)
                if best is None:
                    self._unsettled.discard(caller)
                elif placed.patch is not None:
                    quota[best.name] -= 1
                    patches[pod_key] = placed.patch
        return patches

    def _move(self, caller: str, placed: _Placement) -> None:
        self._unplace(caller)
        self._placed[caller] = placed
        new = placed.facts
        self._enter((new.version, new.bucket or FAKE_SUBSET), caller, new)
        self._touched.add(caller)

    def _unplace(self, caller: str) -> None:
        """Take a pod not annotated out of the bucket the last plan put it in, if any."""
        placed = self._placed.pop(caller, None)
        if placed is not None:
            old = placed.facts
            self._leave((old.version, old.bucket or FAKE_SUBSET), caller, old)

    # -- status ----------------------------------------------------------------------------------

    def _first_seen(self) -> list[str]:
        """The versions in the order a key-ordered pass over the pods meets them (the order the
        full computation concatenates a subset's versions in for the top-level status)."""
        return sorted(self._versions, key=lambda v: self._versions[v].first())

    def _statuses(
        self,
        ws: WorkloadSpread,
        version: str | None,
        old: Sequence[SubsetStatus],
        reservations: Sequence[Reservation],
        replicas: int,
        clock: _Clock,
        stuck_out: dict[str, list[_Facts]] | None = None,
    ) -> tuple[SubsetStatus, ...]:
        """One status list (top-level when ``version`` is None).

        Costs the subsets, the entries in flight and the pods stuck in Adaptive rescheduling
        (for the top-level list only, and only their count elsewhere), never the other pods.
        """
        now, wake = clock.now, clock.wake
        in_flight: dict[str, tuple[dict[str, datetime], dict[str, datetime]]] = {
            s.name: (dict(s.creating_pods), dict(s.deleting_pods)) for s in old
        }
        for r in reservations:
            creating, deleting = in_flight.setdefault(r.subset, ({}, {}))
            entries = creating if r.kind == "creating" else deleting
            entries[r.pod] = min(r.at, entries.get(r.pod, r.at))
        versions = self._first_seen() if version is None else [version]
        rank = {v: i for i, v in enumerate(versions)}
        strategy = ws.schedule_strategy
        cutoff = now - timedelta(seconds=strategy.reschedule_critical_seconds or 0)
        old_by_name = {s.name: s for s in old}
        out: list[SubsetStatus] = []
        for position, subset in enumerate(ws.subsets):
            buckets = [(v, subset.name) for v in versions]
            active = sum(self._active.get(b, 0) for b in buckets)
            creating, deleting = in_flight.get(subset.name, ({}, {}))
            seen = [self._creating[b] for b in buckets if b in self._creating]
            kept_creating: dict[str, datetime] = {}
            for key, at in creating.items():
                if any(key in keys for keys in seen) or expired(at, CREATE_TIMEOUT, now):
                    continue
                kept_creating[key] = at
                wake.append(at + CREATE_TIMEOUT)
            kept_deleting: dict[str, datetime] = {}
            last_kept: tuple[int, str] | None = None
            for name, at in deleting.items():
                facts = self._deleting_pod(ws, name, subset.name, version)
                if facts is None or expired(at, DELETE_TIMEOUT, now):
                    continue  # gone, inactive or elsewhere: dropped; past due: a failed delete
                kept_deleting[name] = at
                wake.append(at + DELETE_TIMEOUT)
                place = (rank[facts.version], facts.key)
                if last_kept is None or place > last_kept:
                    last_kept = place
            after: int | None = None
            if last_kept is not None:
                at_rank, key = last_kept
                after = self._active_keys[(versions[at_rank], subset.name)].count_above(key)
                after += sum(self._active.get(b, 0) for b in buckets[at_rank + 1:])
            limit = subset_limit(subset, replicas)
            status = SubsetStatus(
                name=subset.name,
                replicas=active,
                missing_replicas=_missing(-1 if limit is None else limit, active,
                                          len(kept_deleting), after, len(kept_creating)),
                creating_pods=kept_creating,
                deleting_pods=kept_deleting,
            )
            if strategy.reschedule_enabled:
                last = position == len(ws.subsets) - 1
                has_stuck = False
                if not last:
                    has_stuck = self._stuck(buckets, cutoff, rank, subset.name, stuck_out, clock)
                condition, revisit = schedulable_condition(
                    old_by_name.get(subset.name), has_stuck=has_stuck, last=last, now=now,
                    recover_after=clock.recover_after,
                )
                if revisit is not None:
                    wake.append(revisit)
                status = msgspec.structs.replace(status, conditions=(condition,))
            out.append(status)
        return tuple(out)

    def _deleting_pod(
        self, ws: WorkloadSpread, name: str, subset: str, version: str | None
    ) -> _Facts | None:
        """The active pod of ``subset`` (and ``version``) a deleting entry names, if any."""
        caller = self._by_key.get(f"{ws.namespace}/{name}")
        if caller is None:
            return None
        facts = self._current(caller)
        self.examined += 1
        if not facts.active or facts.bucket != subset:
            return None
        if version is not None and facts.version != version:
            return None
        return facts

    def _stuck(
        self,
        buckets: Sequence[Bucket],
        cutoff: datetime,
        rank: Mapping[str, int],
        subset: str,
        stuck_out: dict[str, list[_Facts]] | None,
        clock: _Clock,
    ) -> bool:
        """Whether the subset has pods unschedulable since before ``cutoff``; their deadlines
        ahead go to the wake-ups, and (top level) the stuck pods, in the full computation's
        order, to ``stuck_out``. Reads the stuck pods and one pending pod per bucket."""
        has_stuck = False
        found: list[tuple[int, str]] = []
        for bucket in buckets:
            pending = self._unschedulable.get(bucket)
            if not pending:
                continue
            self.examined += 1
            if pending.first()[0] < cutoff:
                has_stuck = True
                if stuck_out is not None:
                    for _, key in pending.below((cutoff, "")):
                        self.examined += 1
                        found.append((rank[bucket[0]], key))
            ahead = pending.first_from((cutoff, ""))
            if ahead is not None:
                clock.wake.append(ahead[0] + (clock.now - cutoff))
        if stuck_out is not None:
            stuck_out[subset] = [self._current(self._by_key[key]) for _, key in sorted(found)]
        return has_stuck

    def _versioned(
        self,
        ws: WorkloadSpread,
        mine: Sequence[Reservation],
        replicas: int,
        clock: _Clock,
    ) -> dict[str, tuple[SubsetStatus, ...]]:
        old = ws.status.versioned_subset_statuses
        by_version: dict[str, list[Reservation]] = {}
        for r in mine:
            by_version.setdefault(r.version, []).append(r)
        out: dict[str, tuple[SubsetStatus, ...]] = {}
        for version in [*self._first_seen(), *sorted(old), *sorted(by_version)]:
            if version in out:
                continue
            statuses = self._statuses(ws, version, old.get(version, ()),
                                      by_version.get(version, ()), replicas, clock)
            if version in self._versions or any(
                s.replicas or s.creating_pods or s.deleting_pods for s in statuses
            ):
                out[version] = statuses
        return out

    # -- deletion costs --------------------------------------------------------------------------

    def _update_costs(self, ws: WorkloadSpread, replicas: int, latest: str | None) -> set[str]:
        """Bring the wanted costs up to date; the pod keys whose wanted cost changed.

        In a subset's bucket the scale-in order puts the pods beyond its limit first (negative
        value), then the unprotected ones, then the ``minReplicas`` protected last: two cuts in
        the bucket's order. A pod that did not change keeps its place, so its value changes only
        if a cut moved across it: a plan reads the pods that changed and those between each
        cut's old and new place, and the whole bucket only when the values themselves changed
        (the latest version moved on).
        """
        changed: set[str] = set()
        if latest is None or not applies_to(ws):
            changed.update(self._costs)
            self._costs.clear()
            self._regime.clear()
            return changed
        n = len(ws.subsets)
        positions = {s.name: i for i, s in enumerate(ws.subsets)}
        touched: dict[Bucket, list[_Facts]] = {}
        for key in self._touched:
            facts = self._current(key) if key in self._pods else None
            if facts is not None and facts.bucket is not None:
                touched.setdefault((facts.version, facts.bucket), []).append(facts)
        for bucket, members in self._buckets.items():
            version, name = bucket
            if name == FAKE_SUBSET:
                fake = unmatched_value(n)
                values, cuts = (fake, fake, fake), _NO_CUTS
            else:
                position = positions[name]
                subset = ws.subsets[position]
                values = subset_values(n, position, latest=version == latest)
                limit = subset_limit(subset, replicas)
                cuts = self._cuts(bucket, limit, minimum_within(subset, limit))
            previous = self._regime.get(bucket)
            self._regime[bucket] = (values, cuts)
            look: Iterable[_Facts]
            if previous is None or previous[0] != values:
                look = list(members.values())
            else:
                look = [*touched.get(bucket, ()), *self._crossed(bucket, previous[1], cuts)]
            for facts in look:
                self.examined += 1
                cost = _cost(facts.order, values, cuts) if facts.active else None
                self._set_cost(facts.key, cost, changed)
        return changed

    def _cuts(self, bucket: Bucket, limit: int | None, minimum: int) -> _Cuts:
        """The first pod within the limit and the first protected pod, in scale-in order."""
        active = self._active.get(bucket, 0)
        excess, protected_from = cut_points(active, limit, minimum)
        order = self._order.get(bucket)
        if order is None:
            return _NO_CUTS
        return (order.at(excess) if excess < active else None,
                order.at(protected_from) if protected_from < active else None)

    def _crossed(self, bucket: Bucket, old: _Cuts, new: _Cuts) -> list[_Facts]:
        """The pods between each cut's old and new place."""
        order = self._order.get(bucket)
        if order is None:
            return []
        out: list[_Facts] = []
        for before, after in zip(old, new, strict=True):
            if before == after:
                continue
            low, high = (before, after) if _below(before, after) else (after, before)
            if low is None:
                continue
            for _, key in order.between(low, high):
                out.append(self._current(self._by_key[key]))
        return out

    def _set_cost(self, key: str, cost: int | None, changed: set[str]) -> None:
        if self._costs.get(key) == cost:
            return
        changed.add(key)
        if cost is None:
            self._costs.pop(key, None)
        else:
            self._costs[key] = cost
