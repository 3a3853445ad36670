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

The placement rules themselves are the core's
(:mod:`spreadbus.features.workloadspread.core.admission`); this module gathers their inputs and
turns their answers into reviews. Its collaborators, one module each: :mod:`.governing_spread` finds
the spread that governs a pod once the view can tell, :mod:`.reservation_tally` counts subset loads
from the view and the ledger, :mod:`.ledger_transactions` decides inside a ledger transaction once
the view has caught up with the ledger, :mod:`.spread_hints` tells and hears the WorkloadSpreads
replicas allow, and :mod:`.announcements` publishes the audit events.

When the view is not synced yet (the watcher has not finished its first list), pods are admitted
unchanged with a warning: a pod without a subset is still a valid pod, while a decision from an
incomplete view could overfill a subset. The same holds for a pod whose owner chain reaches a
workload kind the view does not observe (see
:mod:`spreadbus.features.workloadspread.admission.view`); an owner of an observed kind that is
missing fails the create, as upstream. Which spread governs a pod is decided only once the view can
tell (:mod:`.governing_spread`).

A steered pod's patch also carries the deletion cost the planner will want on it, when that is
known from the view (:func:`spreadbus.features.workloadspread.core.admission.cost_version`: for a
Deployment, one lookup of the pod's ReplicaSet), so the actuator has no annotation to patch on
each new pod.

Nothing on the answer path waits for anything but the view, the reservation ledger and the
hints' single NATS round trip (telling an allowed WorkloadSpread CREATE; hearing, for the pod of
a new owner no spread governs); the audit events are published in the background, and a
``replicasPathList`` that does not resolve becomes a warning in the answer instead of an error.
"""

from __future__ import annotations

import itertools
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from nats.aio.client import Client

from events.buckets import entry_key
from kubesemantics.field_errors import describe
from spreadbus.engine.admission_chain import ALLOW, Verdict, deny
from spreadbus.engine.review import AdmissionRequest
from spreadbus.features.workloadspread.admission.announcements import Announcements, Evidence
from spreadbus.features.workloadspread.admission.governing_spread import GoverningSpread
from spreadbus.features.workloadspread.admission.ledger_transactions import transact
from spreadbus.features.workloadspread.admission.reservation_tally import ReservationTally
from spreadbus.features.workloadspread.admission.spread_hints import SpreadHints
from spreadbus.features.workloadspread.admission.view import POD_KEY, SPREAD_KEY, View
from spreadbus.features.workloadspread.admission.view_progress import ViewProgress
from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.admission import (
    AdmissionDecision,
    admit_create_for,
    admit_delete_for,
    cost_version,
    spread_for_deletion,
)
from spreadbus.features.workloadspread.core.admission_reasons import (
    admission_reason,
    subsets_seen,
)
from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.model import WorkloadSpread, api_group
from spreadbus.features.workloadspread.core.occupancy import (
    SubsetLoad,
    expiry_clock,
    without_expired_deletions,
)
from spreadbus.features.workloadspread.core.reservation_contract import Ledger
from spreadbus.features.workloadspread.core.target import ReplicasPathError, workload_replicas
from spreadbus.features.workloadspread.core.validation import validate_workloadspread
from spreadbus.features.workloadspread.core.workload_kinds import replicas_path_problem
from spreadbus.runtime.ledger import LedgerStore

log = logging.getLogger(__name__)


class SpreadAdmission:
    """The WorkloadSpread handlers' decisions, over a view and a ledger store."""

    def __init__(
        self,
        *,
        view: View,
        ledger: LedgerStore[Ledger],
        progress: ViewProgress,
        nc: Client | None = None,
        whitelist: Whitelist | None = None,
        catch_up_timeout: float = 1.0,
        clock: Callable[[], float] = time.time,
        stream_drained: Callable[[], bool] = lambda: False,
        max_announcing: int = 1000,
        replica: str | None = None,
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
        self._view_current_at: datetime | None = None
        self.steered = 0
        self._generated_uids = generated_uids()
        self.tally = ReservationTally(view)
        self.hints = SpreadHints(view=view, nc=nc, clock=clock)
        self.governing = GoverningSpread(
            progress=progress, hints=self.hints, whitelist=self.whitelist
        )
        self.announcements = Announcements(
            nc=nc, cluster=view.cluster, clock=clock, max_pending=max_announcing, replica=replica
        )

    @property
    def synced(self) -> bool:
        return {POD_KEY, SPREAD_KEY} <= self.view.synced

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)

    def judged_at(self, now: datetime) -> datetime:
        """The clock reservations expire by in a decision made ``now``: the view's time, the
        last moment the follower was known drained (:func:`~.occupancy.expiry_clock`)."""
        if self.stream_drained() and (
            self._view_current_at is None or now > self._view_current_at
        ):
            self._view_current_at = now
        return expiry_clock(now, self._view_current_at)

    # -- pod CREATE ---------------------------------------------------------------------------

    async def mutate_pod(self, request: AdmissionRequest) -> Verdict:
        if (request.resource, request.sub_resource, request.operation) != ("pods", "", "CREATE"):
            return ALLOW
        if request.dry_run or request.object is None:
            return ALLOW
        pod = _with_namespace(request.object, request.namespace)
        if not self.synced:
            return Verdict(
                warnings=["spreadbus webhook still syncing: pod admitted without a subset"]
            )
        unfollowed: list[str] = []
        spread = await self.governing.find(pod, unfollowed, timeout=self.catch_up_timeout)
        if isinstance(spread, str):
            return deny(spread, code=500, reason="InternalError")
        if spread is None:
            log.debug(
                "pod admitted unsteered: no WorkloadSpread governs it",
                extra={"namespace": request.namespace, "view_seq": self.view.seq},
            )
            if not unfollowed:
                return ALLOW
            return Verdict(
                warnings=[
                    f"spreadbus: owner {unfollowed[0]} is of a kind this webhook does not "
                    "observe: pod admitted without a subset"
                ],
            )
        generated_uid = next(self._generated_uids)
        now = self.now()
        workload = self._workload_of(spread)
        replicas, warnings = self._replicas(spread, workload)
        latest = cost_version(spread, workload, pod, lookup=self.view.lookup)
        version = pod_state.version(pod)
        counted: list[Mapping[str, SubsetLoad]] = [{}]
        judged = [now]

        def admit(loads: dict[str, SubsetLoad], judged_at: datetime) -> AdmissionDecision:
            counted[0], judged[0] = loads, judged_at  # the last run is the one recorded
            return admit_create_for(
                spread,
                pod,
                replicas=replicas,
                loads=loads,
                now=now,
                generated_uid=generated_uid,
                latest=latest,
                version=version,
                judged_at=judged_at,
            )

        decision = await self._decide("create", spread, pod, version, now, admit)
        if not decision.allowed:
            return deny(decision.message, code=400, reason="BadRequest")
        if decision.subset is not None:
            self.steered += 1
        key = decision.reservation.pod if decision.reservation else pod_state.name(pod)
        loads, judged_at = counted[0], judged[0]
        revision = self.ledger.revision(
            entry_key(self.view.cluster, spread.namespace, spread.name))

        def evidence() -> Evidence:
            """What the decision saw, worked out by the publisher after the answer is sent
            from what the decision kept (none of which changes after it)."""
            seen = subsets_seen(
                spread, replicas=replicas, loads=loads, now=judged_at, version=version
            )
            held = decision.subset is not None and decision.reservation is None and bool(
                pod_state.name(pod)) and any(load.holds(key) for load in loads.values())
            ref = spread.target_ref
            return Evidence(
                reason=admission_reason(spread, seen, decision.subset, held=held),
                subsets=seen,
                target=f"{ref.kind}/{ref.name}" if ref is not None else "",
                replicas=replicas,
                version=version,
                ledger_revision=revision,
            )

        self.announcements.announce(request, spread.name, decision.subset or "", key, evidence)
        return Verdict(patch=decision.patch, warnings=warnings,
                       patched=decision.pod if decision.patch else None)

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

    def _workload_of(self, spread: WorkloadSpread) -> Mapping[str, Any] | None:
        ref = spread.target_ref
        if ref is None:
            return None
        return self.view.lookup(spread.namespace, ref.group, ref.kind, ref.name)

    # -- pod DELETE and eviction --------------------------------------------------------------

    async def record_pod_removal(self, request: AdmissionRequest) -> Verdict:
        """Always allows; the freed slot is recorded once every handler on the path allowed."""
        if request.resource != "pods" or request.dry_run:
            return ALLOW
        if request.operation != "DELETE" or request.sub_resource != "":
            # An eviction frees no slot (admit_delete_for): the PodDisruptionBudget is checked
            # after admission and may keep the pod running. Nothing to record.
            return ALLOW
        pod = request.old_object or self.view.get("", "pods", request.namespace, request.name)
        if pod is None:
            return ALLOW
        pod = _with_namespace(pod, request.namespace)
        spread = spread_for_deletion(pod, self.view.spreads_in(request.namespace))
        if spread is None:
            return ALLOW
        governed = spread
        now = self.now()

        async def record() -> None:
            await self._decide(
                "delete",
                governed,
                pod,
                pod_state.version(pod),
                now,
                lambda loads, _: admit_delete_for(governed, pod, loads=loads, now=now),
            )

        return Verdict(then=record)

    # -- one decision in a ledger transaction -------------------------------------------------

    async def _decide(
        self,
        operation: str,
        spread: WorkloadSpread,
        pod: Mapping[str, Any],
        version: str,
        now: datetime,
        admit: Callable[[dict[str, SubsetLoad], datetime], AdmissionDecision],
    ) -> AdmissionDecision:
        """``admit`` on the loads of the pod's ``version``, its reservation recorded in the same
        compare-and-set; a conflict or a batch runs it again on the ledger as it then is.
        Creating reservations expire by the view's time (:meth:`judged_at`), read once the view
        has caught up with the ledger; deleting ones by the wall clock."""

        def decide(ledger: Ledger) -> tuple[AdmissionDecision, Ledger | None]:
            judged = self.judged_at(now)
            current, loads = self.tally.tally(spread, version, ledger, judged)
            decision = admit(without_expired_deletions(loads, now), judged)
            if log.isEnabledFor(logging.DEBUG):
                self._trace(operation, pod, decision, loads, current, judged)
            reservation = decision.reservation
            return decision, self.tally.record(spread, version, current, loads, reservation)

        return await transact(
            self.ledger,
            entry_key(self.view.cluster, spread.namespace, spread.name),
            decide,
            progress=self.progress,
            catch_up_timeout=self.catch_up_timeout,
            stream_drained=self.stream_drained,
        )

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

    # -- WorkloadSpread validation -------------------------------------------------------------

    async def validate_workloadspread(self, request: AdmissionRequest) -> Verdict:
        if request.operation not in ("CREATE", "UPDATE") or request.sub_resource:
            return ALLOW
        obj = request.object
        if obj is None:
            return deny("request.object: required", code=400, reason="BadRequest")
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

                async def tell() -> None:
                    await self.hints.tell_allowed(namespace, name, timeout=self.catch_up_timeout)

                return Verdict(then=tell)
            return ALLOW
        lines = "; ".join(describe(e) for e in errors)
        message = f'WorkloadSpread.apps.kruise.io "{name}" is invalid: {lines}'
        causes = [
            {"field": e.field, "reason": f"Field{e.type}", "message": e.to_dict()["message"]}
            for e in errors
        ]
        return deny(message, code=422, reason="Invalid", causes=causes)

    def _target_workload(self, obj: Mapping[str, Any], namespace: str) -> Mapping[str, Any] | None:
        ref = (obj.get("spec") or {}).get("targetRef")
        if not isinstance(ref, Mapping):
            return None
        api_version, kind, name = ref.get("apiVersion"), ref.get("kind"), ref.get("name")
        if not (isinstance(api_version, str) and isinstance(kind, str) and isinstance(name, str)):
            return None
        return self.view.lookup(namespace, api_group(api_version), kind, name)


def generated_uids() -> Iterator[str]:
    """Reservation uids for pods admitted without a name, in the UUID v4 text form.

    Each must differ from every other replica's and every earlier run's, as a random UUID would;
    a random UUID's first 80 bits (version and variant included) per sequence, then a 48-bit
    counter, do that for a tenth of the cost of drawing a UUID per pod.
    """
    prefix = str(uuid.uuid4())[:24]
    return (f"{prefix}{n:012x}" for n in itertools.count())


def _with_namespace(pod: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """The pod as the API server will store it: a create body may omit its namespace."""
    metadata = pod.get("metadata")
    metadata = dict(metadata) if isinstance(metadata, Mapping) else {}
    if namespace and not metadata.get("namespace"):
        metadata["namespace"] = namespace
    return {**pod, "metadata": metadata}
