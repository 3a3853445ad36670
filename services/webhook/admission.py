"""The webhook's decisions: what each review path answers, from the view and the ledger.

- Pod CREATE (``/mutate-pod``): steer the pod into a subset of the WorkloadSpread that targets
  its workload, reserving the slot in the ledger first, then patch the pod. Dry-run requests
  are answered without reserving anything, as Kruise skips them.
- Pod DELETE (``/validate-pod``): record that the pod's slot is being freed, so new pods may
  take it before the old one is seen terminating. ``pods/eviction`` CREATE records nothing: the
  API server checks the PodDisruptionBudget after admission, so a refused eviction would leave
  the pod running next to the replacement its freed slot let in; the slot frees once the view
  sees the pod terminating. Both are always allowed: a deletion is never blocked by spreading.
- WorkloadSpread CREATE/UPDATE (``/validate-workloadspread``): every validation rule, with
  the other WorkloadSpreads of the view for the conflict check.

When the view is not synced yet (the watcher has not finished its first list), pods are
admitted unchanged with a warning: a pod without a subset is still a valid pod, while a
decision from an incomplete view could overfill a subset. The same holds for a pod whose owner
chain reaches a workload kind the view does not observe (see :mod:`services.webhook.view`); an
owner of an observed kind that is missing fails the create, as upstream.

Deciding that no WorkloadSpread governs a pod needs as much care as steering it: an unsteered
pod runs wherever it is scheduled, the planner then matches it to that node's subset (as Kruise's
controller does, full or not) and the subset ends over its limit. A WorkloadSpread is created
before its workload, which is created before the pod's owner, so every pod CREATE first waits
(up to ``catch_up_timeout``) until the view holds the pod's owner, when its kind is followed,
and every WorkloadSpread this replica allowed on CREATE in that namespace. Both usually hold
already; the first pods of a new workload wait for a few stream messages. The stream alone does
not order a WorkloadSpread before its workload's owner (the watcher watches each resource on its
own, and a spread has been seen arriving 100 ms after the owner), so a replica that allows a
WorkloadSpread CREATE also tells the other replicas over core NATS (:class:`SpreadAllowed`,
flushed before the answer, hence before the API server stores the spread), and a replica that
finds no governing spread for a pod whose owner is younger than ``ANNOUNCED_SECONDS`` first hears
those announcements (one NATS round trip) and waits for an announced spread to reach its view.

Nothing on the answer path waits for anything but the view and the reservation ledger: the
``Admission`` audit event is published by a background task (bounded, drained on shutdown), and a
``replicasPathList`` that does not resolve becomes a warning in the answer instead of an error.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

import msgspec
from nats.aio.client import Client
from nats.aio.subscription import Subscription
from nats.errors import TimeoutError as NatsTimeoutError

from events import subjects
from events.codec import encode
from events.messages import Admission
from events.reservations import ledger_key
from services.webhook import review
from services.webhook.ledger import Ledger, LedgerStore, pruned
from services.webhook.review import AdmissionRequest
from services.webhook.view import POD_KEY, SPREAD_KEY, View
from spreadbus.core.field_errors import describe
from spreadbus.core.workload_kinds import replicas_path_problem
from spreadbus.core.workloadspread import pod_state
from spreadbus.core.workloadspread.admission import (
    AdmissionDecision,
    admit_create_for,
    admit_delete_for,
    spread_for_deletion,
)
from spreadbus.core.workloadspread.custom_workloads import Whitelist
from spreadbus.core.workloadspread.model import WorkloadSpread, api_group
from spreadbus.core.workloadspread.occupancy import Reservation, SubsetLoad
from spreadbus.core.workloadspread.target import (
    OwnerNotFound,
    ReplicasPathError,
    governing_workloadspread,
    workload_replicas,
)
from spreadbus.core.workloadspread.validation import validate_workloadspread

log = logging.getLogger(__name__)
T = TypeVar("T")

ANNOUNCED_SECONDS = 10.0
"""How long an allowed WorkloadSpread CREATE is expected in the view (the API may still fail it),
and how young a pod's owner must be for a missing spread to be asked of the other replicas."""


class SpreadAllowed(msgspec.Struct, frozen=True):
    """A WorkloadSpread CREATE one replica allowed, told to the others (core NATS, not stored).

    A hint between the live replicas of one webhook, not a bus event: a replica that misses it
    (not running yet) learns the spread from the observation stream like everything else.
    """

    namespace: str
    name: str


_ALLOWED_ENCODER: Final = msgspec.json.Encoder()
_ALLOWED_DECODER: Final = msgspec.json.Decoder(SpreadAllowed)


def allowed_subject(cluster: str) -> str:
    return f"webhook.spreads.{subjects.escape(cluster)}"


@dataclass(frozen=True)
class Behind:
    """The ledger reflects observations this view has not folded yet."""

    floor: int


@dataclass(frozen=True)
class _Tally:
    ledger: Ledger
    seq: int
    spread: WorkloadSpread
    version: str
    loads: dict[str, SubsetLoad]


class ViewProgress:
    """Lets a request wait until the view has folded a given stream sequence.

    Each :meth:`notify` sets the current event and replaces it: waiters wake, re-check the
    view's position, and wait on the new event if they need more. Nothing is scheduled per
    notification, so a follower may call it after every message.
    """

    def __init__(self, view: View) -> None:
        self.view = view
        self._changed = asyncio.Event()

    def notify(self) -> None:
        """Called by the follower after it folded messages."""
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def wait_for(self, seq: int, timeout: float) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.view.seq < seq:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                return self.view.seq >= seq
        return True


class SpreadAdmission:
    """Implements :class:`services.webhook.server.Policy` over a view and a ledger store."""

    def __init__(
        self,
        *,
        view: View,
        ledger: LedgerStore,
        progress: ViewProgress,
        nc: Client | None = None,
        whitelist: Whitelist | None = None,
        catch_up_timeout: float = 1.0,
        clock: Callable[[], float] = time.time,
        stream_drained: Callable[[], bool] = lambda: False,
        max_announcing: int = 1000,
    ) -> None:
        self.view = view
        self.ledger = ledger
        self.progress = progress
        self.nc = nc
        self.whitelist = whitelist or Whitelist()
        self.catch_up_timeout = catch_up_timeout
        self.clock = clock
        self.stream_drained = stream_drained
        """Whether the follower has nothing pending: the view holds the whole stream."""
        self.steered = 0
        self.max_announcing = max_announcing
        """Admission events being published at most; beyond, new ones are dropped (counted)."""
        self.announcing: set[asyncio.Task[None]] = set()
        self.announcements_dropped = 0
        self.allowed_unseen: dict[tuple[str, str], float] = {}
        """WorkloadSpreads allowed on CREATE and not yet in the view: (namespace, name) -> when."""
        self._tallies: dict[tuple[str, str], _Tally] = {}
        """Per spread: the last ledger a decision returned and the loads it counted."""
        self._allowed: Subscription | None = None
        self._listening: asyncio.Future[None] | None = None
        if nc is not None:
            self._listening = asyncio.get_running_loop().create_task(
                self._listen_for_allowed(nc)
            )
            self._listening.add_done_callback(_report_listen_failure)

    @property
    def synced(self) -> bool:
        return {POD_KEY, SPREAD_KEY} <= self.view.synced

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)

    # -- pod CREATE ---------------------------------------------------------------------------

    async def mutate_pod(self, request: AdmissionRequest) -> dict[str, Any]:
        allow = review.allow(request.uid, api_version=request.api_version)
        if (request.resource, request.sub_resource, request.operation) != ("pods", "", "CREATE"):
            return allow
        if request.dry_run or request.object is None:
            return allow
        pod = _with_namespace(request.object, request.namespace)
        if not self.synced:
            return review.allow(
                request.uid,
                api_version=request.api_version,
                warnings=["spreadbus webhook still syncing: pod admitted without a subset"],
            )
        unfollowed: list[str] = []
        spread = await self._spread_of(pod, unfollowed)
        if isinstance(spread, str):
            return review.deny(
                request.uid,
                spread,
                code=500,
                reason="InternalError",
                api_version=request.api_version,
            )
        if spread is None:
            log.debug(
                "pod admitted unsteered: no WorkloadSpread governs it",
                extra={"namespace": request.namespace, "view_seq": self.view.seq},
            )
            if not unfollowed:
                return allow
            return review.allow(
                request.uid,
                api_version=request.api_version,
                warnings=[
                    f"spreadbus: owner {unfollowed[0]} is of a kind this webhook does not "
                    "observe: pod admitted without a subset"
                ],
            )
        generated_uid = str(uuid.uuid4())
        now = self.now()
        namespace = request.namespace
        workload = self._workload_of(spread)
        replicas, warnings = self._replicas(spread, workload)

        version = pod_state.version(pod)

        def decide(ledger: Ledger) -> tuple[AdmissionDecision, Ledger | None]:
            current, loads = self._tally(spread, version, ledger, now)
            decision = admit_create_for(
                spread,
                pod,
                replicas=replicas,
                loads=loads,
                now=now,
                generated_uid=generated_uid,
            )
            if log.isEnabledFor(logging.DEBUG):
                self._trace("create", pod, decision, loads, current, now)
            return decision, self._record(spread, version, current, loads, decision.reservation)

        decision = await self.transact(namespace, spread.name, decide)
        if not decision.allowed:
            return review.deny(
                request.uid, decision.message, code=400, api_version=request.api_version
            )
        if decision.subset is not None:
            self.steered += 1
            key = decision.reservation.pod if decision.reservation else pod_state.name(pod)
            self.announce(request, spread.name, decision.subset, key)
        return review.allow(
            request.uid, api_version=request.api_version, patch=decision.patch, warnings=warnings
        )

    def _replicas(
        self, spread: WorkloadSpread, workload: Mapping[str, Any] | None
    ) -> tuple[int, list[str]]:
        """The workload's replicas for percentages; a broken replicasPathList is reported.

        Kruise's controller fails on such a path; an admission cannot fail a pod for it, so the
        pod is decided with 0 replicas (what a missing workload gives) and the answer says why.
        """
        try:
            return workload_replicas(spread, workload, whitelist=self.whitelist), []
        except ReplicasPathError as exc:
            paths = spread.target_filter.replicas_path_list if spread.target_filter else ()
            problem = replicas_path_problem(paths, workload)
            detail = str(problem) if problem else f"spec.targetFilter.replicasPathList: {exc}"
            field = problem.field if problem else "spec.targetFilter.replicasPathList"
            log.warning(
                "replicasPathList does not resolve; percentages scale against 0",
                extra={
                    "workloadspread": f"{spread.namespace}/{spread.name}",
                    "field": field,
                    "error": detail,
                },
            )
            return 0, [
                f"spreadbus: WorkloadSpread {spread.namespace}/{spread.name} {detail}; "
                "percentages scale against 0 replicas"
            ]

    async def _spread_of(
        self, pod: Mapping[str, Any], unfollowed: list[str]
    ) -> WorkloadSpread | str | None:
        """The governing spread, decided only once the view can be trusted to know it.

        When the view finds none for the pod of a workload created moments ago, the
        WorkloadSpreads other replicas allowed are heard first (:meth:`_hear_allowed`), since
        one may have been created just before the workload and not be in the view yet.
        """
        await self._catch_up_with(pod)
        spread = await self._governing_in_view(pod, unfollowed)
        namespace = pod_state.namespace(pod)
        if spread is None and self._owner_is_new(pod) and await self._hear_allowed(namespace):
            await self._catch_up_with(pod)
            unfollowed.clear()
            spread = await self._governing_in_view(pod, unfollowed)
        return spread

    async def _governing_in_view(
        self, pod: Mapping[str, Any], unfollowed: list[str]
    ) -> WorkloadSpread | str | None:
        if not self.view.spreads_in(pod_state.namespace(pod)):
            return None
        return await self._governing(pod, unfollowed)

    def _owner_is_new(self, pod: Mapping[str, Any]) -> bool:
        """The pod's owner (of a followed kind) was created within ``ANNOUNCED_SECONDS``."""
        owner = pod_state.controller_ref(pod)
        if owner is None:
            return False
        group = api_group(str(owner.get("apiVersion") or ""))
        kind, name = owner.get("kind"), owner.get("name")
        if not isinstance(kind, str) or not isinstance(name, str):
            return False
        found = self.view.lookup(pod_state.namespace(pod), group, kind, name)
        if found is None:
            return False
        created = (found.get("metadata") or {}).get("creationTimestamp")
        try:
            moment = datetime.fromisoformat(str(created)).timestamp()
        except ValueError:
            return True
        return self.clock() - moment <= ANNOUNCED_SECONDS

    async def listening(self) -> None:
        """Return once the server routes other replicas' allowed WorkloadSpreads to this one."""
        if self._listening is not None and self.nc is not None:
            await self._listening
            await self.nc.flush()

    async def _listen_for_allowed(self, nc: Client) -> None:
        """Subscribe to the WorkloadSpreads other replicas allow (see :meth:`_hear_allowed`)."""
        self._allowed = await nc.subscribe(allowed_subject(self.view.cluster))

    async def _hear_allowed(self, namespace: str) -> bool:
        """Take in every allowed WorkloadSpread announced so far; whether one here is unseen.

        A flush is a round trip on this connection: every announcement the server routed to us
        before answering it is then queued on the subscription, and is read here.
        """
        if self.nc is None or not self.nc.is_connected or self._listening is None:
            return False
        try:
            await asyncio.wait_for(asyncio.shield(self._listening), self.catch_up_timeout)
            await asyncio.wait_for(self.nc.flush(), self.catch_up_timeout)
        except Exception as exc:
            log.warning("allowed WorkloadSpreads not heard: %r", exc)
            return False
        sub = self._allowed
        while sub is not None and sub.pending_msgs > 0:
            try:
                msg = await sub.next_msg(timeout=0.1)
                heard = _ALLOWED_DECODER.decode(msg.data)
            except (TimeoutError, NatsTimeoutError):
                break
            except msgspec.DecodeError:
                continue
            if (heard.namespace, heard.name) not in self.view.spreads:
                self.allowed_unseen[(heard.namespace, heard.name)] = self.clock()
        return self._announced_unseen(namespace)

    async def _announce_allowed(self, namespace: str, name: str) -> None:
        """Tell the other replicas, before the API server stores it, that a spread is coming."""
        self.allowed_unseen[(namespace, name)] = self.clock()
        if self.nc is None or not self.nc.is_connected:
            return
        data = _ALLOWED_ENCODER.encode(SpreadAllowed(namespace=namespace, name=name))
        try:
            await self.nc.publish(allowed_subject(self.view.cluster), data)
            await asyncio.wait_for(self.nc.flush(), self.catch_up_timeout)
        except Exception as exc:
            log.warning("allowed WorkloadSpread not announced: %r", exc)

    async def _catch_up_with(self, pod: Mapping[str, Any]) -> None:
        """Wait briefly until the view can tell that no WorkloadSpread governs the pod.

        An unsteered pod is not harmless: once it runs, the planner matches it to the subset
        whose nodes it landed on (Kruise's controller does the same) and that subset ends over
        its limit. A WorkloadSpread is created before its workload, and the workload before the
        pod's owner, so the view is asked to hold the pod's owner (when its kind is followed)
        and every WorkloadSpread this replica allowed in the namespace before deciding. Both
        normally hold already; a new workload's first pods wait a few milliseconds. After
        ``catch_up_timeout`` the pod is decided from the view as it is.
        """
        namespace = pod_state.namespace(pod)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.catch_up_timeout
        while self._owner_unseen(pod) or self._announced_unseen(namespace):
            remaining = deadline - loop.time()
            if remaining <= 0:
                log.debug(
                    "view did not catch up with the pod's owner or an allowed WorkloadSpread",
                    extra={"namespace": namespace, "view_seq": self.view.seq},
                )
                return
            await self.progress.wait_for(self.view.seq + 1, min(remaining, 0.05))

    def _owner_unseen(self, pod: Mapping[str, Any]) -> bool:
        owner = pod_state.controller_ref(pod)
        if owner is None:
            return False
        group = api_group(str(owner.get("apiVersion") or ""))
        kind, name = owner.get("kind"), owner.get("name")
        if not isinstance(kind, str) or not isinstance(name, str):
            return False
        if not self.view.follows(group, kind):
            return False
        return self.view.lookup(pod_state.namespace(pod), group, kind, name) is None

    def _announced_unseen(self, namespace: str) -> bool:
        """Whether a WorkloadSpread this replica allowed here is not in the view yet."""
        if not self.allowed_unseen:
            return False
        oldest = self.clock() - ANNOUNCED_SECONDS
        for key, at in list(self.allowed_unseen.items()):
            if at < oldest or key in self.view.spreads:
                del self.allowed_unseen[key]
        return any(ns == namespace for ns, _ in self.allowed_unseen)

    async def _governing(
        self, pod: Mapping[str, Any], unfollowed: list[str]
    ) -> WorkloadSpread | str | None:
        """The spread governing the pod; an owner the view lacks yet is waited for briefly.

        A ReplicaSet's first pods are created moments after the ReplicaSet itself, possibly
        before its observation reached this view; Kruise fails the create when the owner is
        unknown, which is right only once the view has had a chance to catch up. An owner of a
        kind the view does not follow ends the chain instead (see :mod:`services.webhook.view`)
        and is named in ``unfollowed``.
        """
        namespace = pod_state.namespace(pod)
        deadline = asyncio.get_running_loop().time() + self.catch_up_timeout

        def record(namespace: str, group: str, kind: str, name: str) -> None:
            owner = f"{kind}.{group} {namespace}/{name}" if group else f"{kind} {namespace}/{name}"
            if owner not in unfollowed:
                unfollowed.append(owner)

        lookup = self.view.owner_lookup(record)
        while True:
            try:
                return governing_workloadspread(
                    pod,
                    self.view.spreads_in(namespace),
                    lookup=lookup,
                    whitelist=self.whitelist,
                )
            except OwnerNotFound as exc:
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    return str(exc)
                await self.progress.wait_for(self.view.seq + 1, min(remaining, 0.05))

    def _workload_of(self, spread: WorkloadSpread) -> Mapping[str, Any] | None:
        ref = spread.target_ref
        if ref is None:
            return None
        return self.view.lookup(spread.namespace, ref.group, ref.kind, ref.name)

    def _loads(self, spread: WorkloadSpread, version: str, ledger: Ledger) -> dict[str, SubsetLoad]:
        """Subset loads of one version: active pods from the view, reservations not yet seen."""
        namespace, name = spread.namespace, spread.name
        active: dict[str, int] = {}
        for (slot_version, subset), names in self.view.slots_of(namespace, name).items():
            if slot_version == version and names:
                active[subset] = len(names)
        # Gathered in place: rebuilding a subset's load per reservation is O(ledger^2).
        creating: dict[str, dict[str, datetime]] = {}
        deleting: dict[str, dict[str, datetime]] = {}
        for reservation in ledger.reservations():
            if reservation.version != version:
                continue
            if reservation.kind == "creating":
                if self.view.seen(namespace, reservation.pod):
                    continue
                creating.setdefault(reservation.subset, {})[reservation.pod] = reservation.at
            else:
                slot = (version, reservation.subset)
                if reservation.pod not in self.view.active_in(namespace, name, slot):
                    continue
                deleting.setdefault(reservation.subset, {})[reservation.pod] = reservation.at
        subsets = [*active, *(s for s in creating if s not in active)]
        subsets += [s for s in deleting if s not in active and s not in creating]
        loads = {
            subset: SubsetLoad(
                active=active.get(subset, 0),
                creating=creating.get(subset, {}),
                deleting=deleting.get(subset, {}),
            )
            for subset in subsets
        }
        return loads

    def _tally(
        self, spread: WorkloadSpread, version: str, ledger: Ledger, now: datetime
    ) -> tuple[Ledger, dict[str, SubsetLoad]]:
        """The pruned ledger and one version's loads, carried over from the previous decision.

        Group commit hands each decision of a batch the ledger the previous one returned, with
        no await in between, so while the view has not moved the previous count plus the
        reservation it added is exact; only the first decision of a batch (or one after the
        view moved, a retry, another version) prunes and counts the whole ledger.
        """
        known = self._tallies.get((spread.namespace, spread.name))
        if (
            known is not None
            and known.ledger is ledger
            and known.seq == self.view.seq
            and known.spread is spread
            and known.version == version
        ):
            return ledger, known.loads
        current = self._prune(ledger, spread.namespace, now)
        return current, self._loads(spread, version, current)

    def _record(
        self,
        spread: WorkloadSpread,
        version: str,
        current: Ledger,
        loads: dict[str, SubsetLoad],
        reservation: Reservation | None,
    ) -> Ledger:
        """The ledger after a decision, with its tally remembered for the next one."""
        if reservation is not None:
            current = current.with_reservation(reservation)
            loads = self._counted(spread, loads, reservation)
        self._tallies[(spread.namespace, spread.name)] = _Tally(
            current, self.view.seq, spread, version, loads
        )
        return current

    def _counted(
        self, spread: WorkloadSpread, loads: dict[str, SubsetLoad], reservation: Reservation
    ) -> dict[str, SubsetLoad]:
        """``loads`` with one more reservation, by :meth:`_loads`'s rules."""
        namespace, subset = spread.namespace, reservation.subset
        load = loads.get(subset, SubsetLoad())
        if reservation.kind == "creating":
            if self.view.seen(namespace, reservation.pod):
                return loads
            creating = {**load.creating, reservation.pod: reservation.at}
            new = SubsetLoad(active=load.active, creating=creating, deleting=load.deleting)
        else:
            slot = (reservation.version, subset)
            if reservation.pod not in self.view.active_in(namespace, spread.name, slot):
                return loads
            deleting = {**load.deleting, reservation.pod: reservation.at}
            new = SubsetLoad(active=load.active, creating=load.creating, deleting=deleting)
        return {**loads, subset: new}

    # -- pod DELETE and eviction --------------------------------------------------------------

    async def record_pod_removal(self, request: AdmissionRequest) -> dict[str, Any]:
        allow = review.allow(request.uid, api_version=request.api_version)
        if request.resource != "pods" or request.dry_run:
            return allow
        if request.operation != "DELETE" or request.sub_resource != "":
            # An eviction frees no slot (admit_delete_for): the PodDisruptionBudget is checked
            # after admission and may keep the pod running. Nothing to record.
            return allow
        pod = request.old_object or self.view.get("", "pods", request.namespace, request.name)
        if pod is None:
            return allow
        pod = _with_namespace(pod, request.namespace)
        spread = spread_for_deletion(pod, self.view.spreads_in(request.namespace))
        if spread is None:
            return allow
        now = self.now()
        namespace = request.namespace

        version = pod_state.version(pod)

        def decide(ledger: Ledger) -> tuple[AdmissionDecision, Ledger | None]:
            current, loads = self._tally(spread, version, ledger, now)
            decision = admit_delete_for(spread, pod, loads=loads, now=now)
            if log.isEnabledFor(logging.DEBUG):
                self._trace(request.operation.lower(), pod, decision, loads, current, now)
            return decision, self._record(spread, version, current, loads, decision.reservation)

        await self.transact(namespace, spread.name, decide)
        return allow

    def _trace(
        self,
        operation: str,
        pod: Mapping[str, Any],
        decision: AdmissionDecision,
        loads: Mapping[str, SubsetLoad],
        ledger: Ledger,
        now: datetime,
    ) -> None:
        """One debug line per decision (a retried batch logs again): what it counted."""
        metadata = pod.get("metadata") or {}
        log.debug(
            "pod admission decided",
            extra={
                "operation": operation,
                "pod": metadata.get("name") or metadata.get("generateName") or "",
                "workloadspread": decision.workloadspread,
                "subset": decision.subset,
                "reserved": decision.reservation.pod if decision.reservation else None,
                "loads": {
                    name: [load.active, load.live_creating(now), load.live_deleting(now)]
                    for name, load in sorted(loads.items())
                },
                "ledger_creating": len(ledger.creating),
                "ledger_deleting": len(ledger.deleting),
                "ledger_floor": ledger.floor,
                "view_seq": self.view.seq,
            },
        )

    # -- ledger plumbing ----------------------------------------------------------------------

    def _prune(self, ledger: Ledger, namespace: str, now: datetime) -> Ledger:
        return pruned(
            ledger,
            now=now,
            seen=lambda key: self.view.seen(namespace, key),
            active=lambda name: self.view.active(namespace, name),
            view_seq=self.view.seq,
        )

    async def transact(
        self, namespace: str, spread: str, decide: Callable[[Ledger], tuple[T, Ledger | None]]
    ) -> T:
        """A ledger transaction that first lets the view catch up with the ledger's floor.

        A floor the view cannot reach even though its follower reports the stream drained can
        only come from an earlier incarnation of the observation stream (deleted and created
        again); it is lowered to the view's position instead of blocking spreading for good.
        """
        key = ledger_key(self.view.cluster, namespace, spread)
        unreachable = -1

        def guarded(ledger: Ledger) -> tuple[T | Behind, Ledger | None]:
            if self.view.seq < ledger.floor:
                if ledger.floor != unreachable:
                    return Behind(ledger.floor), None
                ledger = Ledger(creating=ledger.creating, deleting=ledger.deleting, floor=0)
            return decide(ledger)

        while True:
            result = await self.ledger.transact(key, guarded)
            if not isinstance(result, Behind):
                return result
            if await self.progress.wait_for(result.floor, self.catch_up_timeout):
                continue
            if not self.stream_drained():
                raise TimeoutError(f"view behind the reservation ledger at {result.floor}")
            log.warning(
                "reservation ledger ahead of a drained observation stream; lowering its floor",
                extra={"ledger": key, "floor": result.floor, "view_seq": self.view.seq},
            )
            unreachable = result.floor

    def announce(self, request: AdmissionRequest, spread: str, subset: str, key: str) -> None:
        """Publish the admission on the bus for audit in the background; never delays the answer.

        Best effort, as the reservation bucket is the record (:mod:`events.reservations`): at
        most ``max_announcing`` publications are in flight, beyond that they are dropped and
        counted, and :meth:`drain` waits for the rest on shutdown.
        """
        if self.nc is None or not self.nc.is_connected:
            return
        if len(self.announcing) >= self.max_announcing:
            self.announcements_dropped += 1
            return
        metadata = (request.object or {}).get("metadata") or {}
        workload = f"WorkloadSpread/{spread}"
        event = Admission(
            cluster=self.view.cluster,
            namespace=request.namespace,
            request_uid=request.uid,
            pod_name=str(metadata.get("name") or key),
            generate_name=str(metadata.get("generateName") or ""),
            workload=workload,
            subset=subset,
            ts=self.clock(),
        )
        subject = subjects.admission(self.view.cluster, request.namespace, workload)
        task = asyncio.get_running_loop().create_task(self._publish(subject, encode(event)))
        self.announcing.add(task)
        task.add_done_callback(self.announcing.discard)

    async def _publish(self, subject: str, data: bytes) -> None:
        assert self.nc is not None
        try:
            await self.nc.publish(subject, data)
        except Exception as exc:
            log.warning("admission event not published: %r", exc)

    async def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` for admission events being published, then cancel the rest."""
        pending = set(self.announcing)
        if not pending:
            return
        _, late = await asyncio.wait(pending, timeout=timeout)
        for task in late:
            task.cancel()
        if late:
            await asyncio.wait(late)
            log.warning("admission events not published at shutdown", extra={"count": len(late)})

    # -- WorkloadSpread validation -------------------------------------------------------------

    async def validate_workloadspread(self, request: AdmissionRequest) -> dict[str, Any]:
        allow = review.allow(request.uid, api_version=request.api_version)
        if request.operation not in ("CREATE", "UPDATE") or request.sub_resource:
            return allow
        obj = request.object
        if obj is None:
            return review.deny(
                request.uid, "request.object: required", api_version=request.api_version
            )
        namespace = request.namespace or str((obj.get("metadata") or {}).get("namespace") or "")
        others = self.view.spread_objects_in(namespace)
        errors = validate_workloadspread(
            obj,
            others=others,
            old=request.old_object if request.operation == "UPDATE" else None,
            whitelist=self.whitelist,
            workload=self._target_workload(obj, namespace),
        )
        name = str((obj.get("metadata") or {}).get("name") or "")
        if not errors:
            if request.operation == "CREATE" and not request.dry_run and name:
                await self._announce_allowed(namespace, name)
            return allow
        lines = "; ".join(describe(e) for e in errors)
        message = f'WorkloadSpread.apps.kruise.io "{name}" is invalid: {lines}'
        causes = [
            {"field": e.field, "reason": f"Field{e.type}", "message": e.message} for e in errors
        ]
        return review.deny(
            request.uid,
            message,
            code=422,
            reason="Invalid",
            api_version=request.api_version,
            causes=causes,
        )

    def _target_workload(self, obj: Mapping[str, Any], namespace: str) -> Mapping[str, Any] | None:
        ref = (obj.get("spec") or {}).get("targetRef")
        if not isinstance(ref, Mapping):
            return None
        api_version, kind, name = ref.get("apiVersion"), ref.get("kind"), ref.get("name")
        if not (isinstance(api_version, str) and isinstance(kind, str) and isinstance(name, str)):
            return None
        return self.view.lookup(namespace, api_group(api_version), kind, name)


def _report_listen_failure(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("not listening for allowed WorkloadSpreads: %r", task.exception())


def _with_namespace(pod: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """The pod as the API server will store it: a create body may omit its namespace."""
    metadata = pod.get("metadata")
    metadata = dict(metadata) if isinstance(metadata, Mapping) else {}
    if namespace and not metadata.get("namespace"):
        metadata["namespace"] = namespace
    return {**pod, "metadata": metadata}
