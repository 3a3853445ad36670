"""The WorkloadSpread rule: status, deletion costs, matched annotations and Adaptive evictions.

For each WorkloadSpread touched by a change it gathers what the core needs from the projection (the
target workload, the workload's pods, their nodes, the webhook's reservations in flight) and calls
:func:`spreadbus.features.workloadspread.core.reconcile.plan_workloadspread`, then turns the answer
into :class:`~spreadbus.projection.planning.Desired` writes:

- the status through the status subresource (``patch_status``), with the observed
  ``resourceVersion`` as precondition, because the status is derived from the spec
  (``observedGeneration``) and a write decided on an older spec must not land; one status plan
  is in flight at a time (``serial``), the next decided from the observation of the previous;
- one pod patch per pod holding its deletion cost and, for pods that existed before the
  WorkloadSpread, the matched annotation and the subset's metadata patch, as Kruise does
  (uid-only precondition: the values do not depend on the rest of the pod, and pods change often
  while they start; a late write of an older cost, after an actuator redelivery, is observed like
  any change and corrected by the next plan);
- an eviction (Eviction API) for every pod stuck longer than ``rescheduleCriticalSeconds``, once
  the observed status already shows its subset ``Schedulable=False``;
- while a rebalance is requested (``rebalance.spreadbus.io/request`` differs from ``.../handled``),
  evictions of pods that can move to a higher-priority subset, within the unavailability limit
  and the disruption budgets, and the ``handled`` annotation once nothing more can move
  (:mod:`spreadbus.features.workloadspread.core.rebalance`,
  :mod:`spreadbus.features.workloadspread.planning.rebalancing`).

Adaptive order. The core evicts a subset's stuck pods only once the observed status shows the subset
``Schedulable=False`` (see :mod:`spreadbus.features.workloadspread.core.reconcile`): a round plans
the status write, and the round that observes that status (the WorkloadSpread's own change through
the stream triggers it) plans the evictions, when every webhook following the same stream is about
to see the subset closed too.

Work per event is proportional to what changed. The rule keeps indexes over the projection that it
updates from ``changed`` alone (:mod:`spreadbus.features.workloadspread.planning.spread_index`):
every pod and workload by its controller owner, WorkloadSpreads by their ``targetRef``, pods by
node. A changed pod walks its owner chain up (pod -> ReplicaSet -> Deployment) to the
WorkloadSpreads targeting any of its ancestors, and only those are planned. Each WorkloadSpread
keeps a :class:`~spreadbus.features.workloadspread.planning.spread_tally.SpreadTally` of its pods,
told only about the pods that changed since its last plan; its plan costs those pods, the subsets,
the entries in flight, the pods pending in Adaptive subsets and those not annotated yet, and hands
out deletion costs only for pods whose observation or wanted value changed. The tally is built anew
from the target's descendants, once, when what decides which pods the WorkloadSpread governs changes
(its spec, the target's existence or scale to zero, an owner link below the target). The indexes and
tallies are derived data: fed every key of the projection (what the planner does after a restore or
on becoming leader) they are rebuilt exactly.

Coalescing. While hundreds of its pods start, a WorkloadSpread is planned at most once per
``min_interval`` (0.25 s by default): a change within the interval schedules a wake-up at its
end, and everything that changed until then is taken in one plan, so its status is rewritten a
few times per second rather than once per pod event.

Time. The core reports ``requeue_at``, the earliest moment something expires or times out
(creating/deleting entries, a pod reaching its Adaptive deadline, the ``Schedulable`` window).
The rule remembers it per WorkloadSpread; :meth:`WorkloadSpreadRule.due` hands back the keys whose
time has come, which the planner adds to ``changed`` (no new event is needed), and
:meth:`WorkloadSpreadRule.next_wake` tells the planner how long it may sleep.

The Adaptive window after which a subset turns ``Schedulable`` again is Kruise's 300 s by
default; ``recover_after_seconds`` is handed to the core as it is (shorter for tests and
impatient clusters, longer for cautious ones).

A WorkloadSpread whose reservation ledger was pruned at a stream position the projection has not
reached yet is deferred (see :mod:`spreadbus.features.workloadspread.planning.reservations`):
planning it now could count neither the reservation nor the pod that replaced it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import msgspec

from events.messages import ObjectRef, ResourceRef
from events.subjects import unescape
from kubesemantics.lenient_json import as_int, as_map
from spreadbus.features.workloadspread.core import pod_state, reconcile
from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.model import (
    DELETION_COST_ANNOTATION,
    Status,
    WorkloadSpread,
    from_object,
    status_to_json,
)
from spreadbus.features.workloadspread.core.rebalance import DEFAULT_MAX_UNAVAILABLE
from spreadbus.features.workloadspread.core.reschedule import RECOVER_AFTER
from spreadbus.features.workloadspread.core.reservation_contract import Ledger
from spreadbus.features.workloadspread.core.target import Lookup
from spreadbus.features.workloadspread.core.workload_kinds import workload_kinds
from spreadbus.features.workloadspread.planning.rebalancing import Rebalancing
from spreadbus.features.workloadspread.planning.reservations import (
    RESERVATIONS_RESOURCE,
    ReservationLedgers,
)
from spreadbus.features.workloadspread.planning.spread_index import (
    NODES,
    PODS,
    WORKLOADS,
    WORKLOADSPREADS,
    Key,
    OwnerKey,
    SpreadIndex,
)
from spreadbus.features.workloadspread.planning.spread_tally import SpreadTally, TallyPlan
from spreadbus.projection.bucket_entries import ClusterEntries
from spreadbus.projection.decision_log import DecisionLog
from spreadbus.projection.governor_pacing import GovernorPacing, PacedRule
from spreadbus.projection.kube_state import KubeProjection, side_resource_key
from spreadbus.projection.planning import Desired


def _merge(into: dict[str, Any], patch: Mapping[str, Any]) -> None:
    for key, value in patch.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        elif isinstance(value, Mapping):
            into[key] = {}
            _merge(into[key], value)
        else:
            into[key] = value


class WorkloadSpreadRule(PacedRule):
    name: str = "workloadspread"

    def __init__(
        self,
        cluster: str,
        *,
        reservations: ClusterEntries[Ledger] | None = None,
        whitelist: Whitelist | None = None,
        recover_after_seconds: float = RECOVER_AFTER.total_seconds(),
        min_interval_seconds: float = 0.25,
        max_unavailable: int | str = DEFAULT_MAX_UNAVAILABLE,
        repair_unsteered: bool = True,
    ) -> None:
        self.cluster = cluster
        self.reservations = reservations or ReservationLedgers().of(cluster)
        self.rk_reservations = side_resource_key(cluster, RESERVATIONS_RESOURCE)
        self.whitelist = whitelist or Whitelist()
        self.recover_after_seconds = recover_after_seconds
        self.rebalancing = Rebalancing(cluster, self.whitelist, max_unavailable,
                                       repair=repair_unsteered, rule=self.name)
        self._plans = DecisionLog()
        self.resources: tuple[ResourceRef, ...] = (WORKLOADSPREADS, PODS, NODES,
                                                   *WORKLOADS.values())
        self.index = SpreadIndex(cluster, workload_kinds(self.whitelist), self.whitelist)
        self.pacing = GovernorPacing(self.index.rk_spreads, min_interval_seconds)
        # Per WorkloadSpread: its pods' tally and what it was built for; the pods and whether
        # workloads changed since its last plan.
        self._tallies: dict[str, tuple[tuple[Any, ...], SpreadTally]] = {}
        self._pending: dict[str, _Pending] = {}

    # -- the planner's time seam ------------------------------------------------------------------

    def read_plans(self, log: DecisionLog) -> None:
        """The decision log the rounds read: which evictions are on their way."""
        self._plans = log

    # -- the rule -------------------------------------------------------------------------------

    def desired(self, view: KubeProjection, changed: Set[Key], now: float) -> list[Desired]:
        index = self.index
        index.follow(view)
        affected: set[str] = set()
        for rkey, okey in changed:
            if rkey == index.rk_spreads:
                if not index.index_spread(view, okey):
                    self._schedule(okey, None)
                affected.add(okey)
            elif rkey == index.rk_pods:
                above = index.index_member(view, rkey, okey)
                for spread in above:
                    self._pending_for(spread).pods.add(okey)
                affected |= above
            elif rkey in index.rk_workloads:
                above = index.index_member(view, rkey, okey)
                for spread in above:
                    self._pending_for(spread).workloads = True
                affected |= above
            elif rkey == index.rk_nodes:
                node = unescape(okey.split(".", 1)[1])
                for pod in index.pods_on(node):
                    above = index.spreads_above((index.rk_pods, pod))
                    for spread in above:
                        self._pending_for(spread).nodes.add(node)
                    affected |= above
            elif rkey == self.rk_reservations:
                affected.add(okey)
        out: list[Desired] = []
        for okey in self.pacing.paced(affected, now):
            out.extend(self._plan(view, okey, now))
        return out

    def _pending_for(self, okey: str) -> _Pending:
        pending = self._pending.get(okey)
        if pending is None:
            pending = self._pending[okey] = _Pending()
        return pending

    def _forget(self, okey: str) -> None:
        self._tallies.pop(okey, None)
        self._pending.pop(okey, None)

    # -- planning one WorkloadSpread ---------------------------------------------------------------

    def _plan(self, view: KubeProjection, okey: str, now: float) -> list[Desired]:
        obj = self.index.decode(view, (self.index.rk_spreads, okey))
        if obj is None:
            self._schedule(okey, None)
            self.pacing.forget(okey)
            self._forget(okey)
            return []
        if self.reservations.get(okey).floor > view.last_seq:
            self._schedule(okey, now)  # the projection has not reached the ledger's floor yet
            return []
        ws = from_object(obj)
        target = self.index.target_of(okey)
        if (ws.deleting or ws.target_ref is None or target is None
                or not self.index.follows(target[1], target[2])):
            # Nothing to plan, or a target kind not streamed (not built in, not whitelisted):
            # its replicas are unknown, and a status counted against 0 would be wrong.
            self._schedule(okey, None)
            self._forget(okey)
            return []
        lookup = self.index.lookup(view)
        workload = lookup(*target)
        tally = self._tally(view, okey, obj, ws, target, workload, lookup)
        replicasets = [
            rs for rs in (self.index.decode(view, k)
                          for k, _ in self.index.workload_descendants(target)
                          if self.index.rk_workloads[k[0]] == ("apps", "ReplicaSet"))
            if rs is not None
        ]

        def nodes(pods: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
            found: dict[str, Mapping[str, Any]] = {}
            for pod in pods:
                node = pod_state.node_name(pod)
                if node and node not in found:
                    obj = view.get(self.cluster, NODES.group, NODES.resource, "", node)
                    if obj is not None:
                        found[node] = obj
            return found

        plan = tally.plan(
            ws,
            workload=workload,
            latest=reconcile.latest_version(ws, workload, replicasets=replicasets),
            reservations=self.reservations.get(okey).reservations(),
            now=datetime.fromtimestamp(now, UTC),
            whitelist=self.whitelist,
            nodes=nodes,
            recover_after_seconds=self.recover_after_seconds,
        )
        step = self.rebalancing.step(view, ws, status=plan.status, tally=tally,
                                     workload=workload, now=now,
                                     busy={e.pod for e in plan.evictions}, plans=self._plans)
        wakes = [t for t in (plan.requeue_at.timestamp() if plan.requeue_at else None,
                             step.wake_at) if t is not None]
        self._schedule(okey, min(wakes) if wakes else None)
        governor = self._ref(self._spread_resource(obj), obj)
        wanted = [
            self._status_desired(ws, obj, plan.status),
            *self._pod_desired(ws.key, plan, tally),
            *(self._eviction(e, pod) for e in plan.evictions
              if (pod := tally.pod(e.pod)) is not None),
            *(Desired(verb="evict", target=self._ref(PODS, pod), reason=move.reason)
              for move in step.evictions if (pod := tally.pod(move.pod)) is not None),
            *([Desired(verb="patch", target=self._ref(self._spread_resource(obj), obj),
                       patch=step.handled, reason=f"rebalance of {ws.key} handled")]
              if step.handled is not None else []),
        ]
        generation = as_int(as_map(obj.get("metadata")).get("generation")) or 0
        return [msgspec.structs.replace(want, governor=governor, governor_generation=generation)
                for want in wanted]

    def _spread_resource(self, obj: Mapping[str, Any]) -> ResourceRef:
        api_version = str(obj.get("apiVersion") or WORKLOADSPREADS.group + "/v1alpha1")
        return ResourceRef(group=WORKLOADSPREADS.group, version=api_version.split("/", 1)[-1],
                           resource=WORKLOADSPREADS.resource)

    def _tally(
        self,
        view: KubeProjection,
        okey: str,
        obj: Mapping[str, Any],
        ws: WorkloadSpread,
        target: OwnerKey,
        workload: Mapping[str, Any] | None,
        lookup: Lookup,
    ) -> SpreadTally:
        """The WorkloadSpread's tally, told about the pods that changed since its last plan.

        It is built anew (every pod of the target, once) when what decides which pods it governs
        changed: its spec or annotations, the target's existence or scale to zero, or an owner
        link among the workloads below the target.
        """
        pending = self._pending.pop(okey, None) or _Pending()
        metadata = obj.get("metadata") or {}
        spec = workload.get("spec") if workload is not None else None
        scaled_to_zero = isinstance(spec, Mapping) and spec.get("replicas") == 0
        current = self._tallies.get(okey)
        links = (current[0][-1] if current is not None and not pending.workloads
                 else tuple(sorted(self.index.workload_descendants(target))))
        built_for = (
            metadata.get("uid"), obj.get("spec"), metadata.get("annotations"),
            None if workload is None else (workload.get("metadata") or {}).get("uid"),
            scaled_to_zero, links,
        )
        if current is not None and current[0] == built_for:
            tally = current[1]
            changed = [(k, self.index.decode(view, (self.index.rk_pods, k))) for k in pending.pods]
            for pod_key, pod in self._governed(ws, workload, changed, lookup):
                tally.apply(pod_key, pod)
            for node in pending.nodes:
                tally.node_changed(node)
            return tally
        tally = SpreadTally(ws)
        below = [(k[1], self.index.decode(view, k)) for k in self.index.pods_below(target)]
        tally.reset((k, p) for k, p in self._governed(ws, workload, below, lookup)
                    if p is not None)
        self._tallies[okey] = (built_for, tally)
        return tally

    def _governed(
        self,
        ws: WorkloadSpread,
        workload: Mapping[str, Any] | None,
        pods: Sequence[tuple[str, Mapping[str, Any] | None]],
        lookup: Lookup,
    ) -> list[tuple[str, Mapping[str, Any] | None]]:
        """Each (key, pod) with the pod kept if ``ws`` governs it, else None; one pass of the
        core's filter for them all (their owners are looked up once)."""
        kept = {id(p) for p in reconcile.workload_pods(
            ws, workload, [p for _, p in pods if p is not None], lookup=lookup,
            whitelist=self.whitelist)}
        return [(k, p if id(p) in kept else None) for k, p in pods]

    def _ref(self, resource: ResourceRef, obj: Mapping[str, Any]) -> ObjectRef:
        metadata = obj.get("metadata") or {}
        return ObjectRef(group=resource.group, version=resource.version,
                         resource=resource.resource,
                         namespace=str(metadata.get("namespace") or ""),
                         name=str(metadata.get("name") or ""), uid=str(metadata.get("uid") or ""))

    def _status_desired(self, ws: WorkloadSpread, obj: Mapping[str, Any],
                        status: Status) -> Desired:
        api_version = str(obj.get("apiVersion") or WORKLOADSPREADS.group + "/v1alpha1")
        body: dict[str, Any] = status_to_json(status, api_version=api_version)
        old = (obj.get("status") or {}).get("versionedSubsetStatuses")
        if isinstance(old, Mapping):
            wanted = body.get("versionedSubsetStatuses")
            if not wanted:
                body["versionedSubsetStatuses"] = None
            else:
                for version in old:
                    wanted.setdefault(version, None)
        version = api_version.split("/", 1)[-1]
        ref = ResourceRef(group=WORKLOADSPREADS.group, version=version,
                          resource=WORKLOADSPREADS.resource)
        return Desired(verb="patch_status", target=self._ref(ref, obj), patch={"status": body},
                       reason=f"status of {ws.key} at generation {ws.generation}",
                       precondition="resource_version", serial=True)

    def _pod_desired(self, spread: str, plan: TallyPlan, tally: SpreadTally) -> list[Desired]:
        out: list[Desired] = []
        for key in sorted(set(plan.updates) | set(plan.pod_patches)):
            pod = tally.pod(key)
            if pod is None:
                continue
            patch: dict[str, Any] = {}
            reasons: list[str] = []
            if key in plan.pod_patches:
                _merge(patch, plan.pod_patches[key])
                reasons.append(f"matched to {spread}")
            # A match is planned again until it is observed; it carries the cost not observed
            # yet, as when it was first planned, so it repeats that write (which the decision
            # log holds back) rather than becoming a second one found already true.
            value = (plan.updates[key] if key in plan.updates
                     else tally.cost_to_carry(key) if key in plan.pod_patches else None)
            if value is not None:
                cost = {DELETION_COST_ANNOTATION: value}
                _merge(patch, {"metadata": {"annotations": cost}})
                reasons.append(f"deletion cost {value}")
            out.append(Desired(verb="patch", target=self._ref(PODS, pod), patch=patch,
                               reason="; ".join(reasons)))
        return out

    def _eviction(self, eviction: reconcile.Eviction, pod: Mapping[str, Any]) -> Desired:
        return Desired(verb="evict", target=self._ref(PODS, pod), reason=eviction.reason)


@dataclass
class _Pending:
    """What changed below one WorkloadSpread since its last plan."""

    pods: set[str] = field(default_factory=set)
    workloads: bool = False
    nodes: set[str] = field(default_factory=set)
    """Nodes that changed under its pods (pods not annotated yet are matched by them)."""
