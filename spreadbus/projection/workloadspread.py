"""The WorkloadSpread rule: status, deletion costs, matched annotations and Adaptive evictions.

For each WorkloadSpread touched by a change it gathers what the core needs from the projection
(the target workload, the workload's pods, their nodes, the webhook's reservations in flight) and
calls :func:`spreadbus.core.workloadspread.reconcile.plan_workloadspread`, then turns the answer
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
- an eviction (Eviction API) for every pod stuck longer than ``rescheduleCriticalSeconds``.

Work per event is proportional to what changed. The rule keeps indexes over the projection that it
updates from ``changed`` alone (:mod:`spreadbus.projection.spread_index`): every pod and workload
by its controller owner, WorkloadSpreads by their ``targetRef``, pods by node. A changed pod walks
its owner chain up (pod -> ReplicaSet -> Deployment) to the WorkloadSpreads targeting any of its
ancestors, and only those are planned; a planned WorkloadSpread walks its target's descendants down
to its pods, so its cost is its own pods, never the cluster's. The indexes are derived data: fed
every key of the projection (what the planner does after a restore or on becoming leader) they are
rebuilt exactly.

Coalescing. Planning one WorkloadSpread costs its pods, so while hundreds of its pods start, a
WorkloadSpread is planned at most once per ``min_interval`` (0.25 s by default): a change
within the interval schedules a wake-up at its end, and everything that changed until then is
taken in one plan. The work of a burst is then bounded by its duration, not its event count.

Time. The core reports ``requeue_at``, the earliest moment something expires or times out
(creating/deleting entries, a pod reaching its Adaptive deadline, the ``Schedulable`` window).
The rule remembers it per WorkloadSpread; :meth:`WorkloadSpreadRule.due` hands back the keys whose
time has come, which the planner adds to ``changed`` (no new event is needed), and
:meth:`WorkloadSpreadRule.next_wake` tells the planner how long it may sleep.

The Adaptive window after which a subset turns ``Schedulable`` again is Kruise's 300 s by
default; ``recover_after_seconds`` is handed to the core as it is (shorter for tests and
impatient clusters, longer for cautious ones).

A WorkloadSpread whose reservation ledger was pruned at a stream position the projection has not
reached yet is deferred (see :mod:`spreadbus.projection.reservations`): planning it now could count
neither the reservation nor the pod that replaced it.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Set
from datetime import UTC, datetime
from typing import Any, Final

from events.messages import ObjectRef, ResourceRef
from events.subjects import unescape
from spreadbus.core.workloadspread import pod_state, reconcile
from spreadbus.core.workloadspread.custom_workloads import Whitelist
from spreadbus.core.workloadspread.model import (
    Status,
    WorkloadSpread,
    from_object,
    status_to_json,
)
from spreadbus.core.workloadspread.reschedule import RECOVER_AFTER
from spreadbus.projection.kube_state import (
    KubeProjection,
)
from spreadbus.projection.planning import Desired
from spreadbus.projection.reservations import RESERVATIONS_RESOURCE, ReservationLedgers
from spreadbus.projection.spread_index import (
    NODES,
    OPTIONAL_WORKLOADS,
    PODS,
    WORKLOADS,
    WORKLOADSPREADS,
    Key,
    SpreadIndex,
)

__all__ = ["DELETION_COST", "NODES", "OPTIONAL_WORKLOADS", "PODS", "WORKLOADS", "WORKLOADSPREADS",
           "WorkloadSpreadRule"]

DELETION_COST: Final = "controller.kubernetes.io/pod-deletion-cost"

def _merge(into: dict[str, Any], patch: Mapping[str, Any]) -> None:
    for key, value in patch.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        elif isinstance(value, Mapping):
            into[key] = {}
            _merge(into[key], value)
        else:
            into[key] = value


def _timestamp(value: datetime) -> float:
    return value.timestamp()


class WorkloadSpreadRule:
    name: str = "workloadspread"

    def __init__(
        self,
        cluster: str,
        *,
        reservations: ReservationLedgers | None = None,
        whitelist: Whitelist | None = None,
        recover_after_seconds: float = RECOVER_AFTER.total_seconds(),
        min_interval_seconds: float = 0.25,
    ) -> None:
        self.cluster = cluster
        self.reservations = reservations or ReservationLedgers(cluster)
        self.whitelist = whitelist or Whitelist()
        self.recover_after_seconds = recover_after_seconds
        self.min_interval = min_interval_seconds
        self.resources: tuple[ResourceRef, ...] = (WORKLOADSPREADS, PODS, NODES,
                                                   *WORKLOADS.values())
        self.index = SpreadIndex(cluster)
        # Wake-ups: WorkloadSpread key -> time, and a heap of (time, key) with stale entries.
        self._wake: dict[str, float] = {}
        self._heap: list[tuple[float, str]] = []
        self._planned_at: dict[str, float] = {}

    # -- the planner's time seam ------------------------------------------------------------------

    def due(self, now: float) -> set[Key]:
        """Keys to re-plan because their time has come; each is handed out once."""
        out: set[Key] = set()
        while self._heap and self._heap[0][0] <= now:
            at, okey = heapq.heappop(self._heap)
            if self._wake.get(okey) == at:
                del self._wake[okey]
                out.add((self.index.rk_spreads, okey))
        return out

    def next_wake(self) -> float | None:
        while self._heap and self._wake.get(self._heap[0][1]) != self._heap[0][0]:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def _schedule(self, okey: str, at: float | None) -> None:
        if at is None:
            self._wake.pop(okey, None)
            return
        if self._wake.get(okey) == at:
            return
        self._wake[okey] = at
        heapq.heappush(self._heap, (at, okey))

    # -- the rule -------------------------------------------------------------------------------

    def desired(self, view: KubeProjection, changed: Set[Key], now: float) -> list[Desired]:
        index = self.index
        affected: set[str] = set()
        for rkey, okey in changed:
            if rkey == index.rk_spreads:
                if not index.index_spread(view, okey):
                    self._schedule(okey, None)
                affected.add(okey)
            elif rkey == index.rk_pods or rkey in index.rk_workloads:
                affected |= index.index_member(view, rkey, okey)
            elif rkey == index.rk_nodes:
                for pod in index.pods_on(unescape(okey.split(".", 1)[1])):
                    affected |= index.spreads_above((index.rk_pods, pod))
            elif rkey == RESERVATIONS_RESOURCE:
                affected.add(okey)
        out: list[Desired] = []
        for okey in sorted(affected):
            last = self._planned_at.get(okey)
            if last is not None and now - last < self.min_interval:
                # Planned moments ago: the changes since are taken in one go a little later.
                soon = last + self.min_interval
                current = self._wake.get(okey)
                self._schedule(okey, soon if current is None else min(current, soon))
                continue
            self._planned_at[okey] = now
            out.extend(self._plan(view, okey, now))
        return out

    # -- planning one WorkloadSpread ---------------------------------------------------------------

    def _plan(self, view: KubeProjection, okey: str, now: float) -> list[Desired]:
        obj = self.index.decode(view, (self.index.rk_spreads, okey))
        if obj is None:
            self._schedule(okey, None)
            self._planned_at.pop(okey, None)
            return []
        if self.reservations.floor(okey) > view.last_seq:
            self._schedule(okey, now)  # the projection has not reached the ledger's floor yet
            return []
        ws = from_object(obj)
        target = self.index.target_of(okey)
        if ws.deleting or ws.target_ref is None or target is None:
            self._schedule(okey, None)
            return []
        lookup = self.index.lookup(view)
        workload = lookup(*target)
        pod_keys, workload_keys = self.index.descendants(target)
        pods = [p for p in (self.index.decode(view, k) for k in pod_keys) if p is not None]
        governed = reconcile.workload_pods(ws, workload, pods, lookup=lookup,
                                           whitelist=self.whitelist)
        replicasets = [
            rs for rs in (self.index.decode(view, k) for k in workload_keys
                          if self.index.rk_workloads[k[0]] == ("apps", "ReplicaSet"))
            if rs is not None
        ]
        nodes: dict[str, Mapping[str, Any]] = {}
        for pod in governed:
            node = pod_state.node_name(pod)
            if node and node not in nodes:
                found = view.get(self.cluster, NODES.group, NODES.resource, "", node)
                if found is not None:
                    nodes[node] = found
        moment = datetime.fromtimestamp(now, UTC)
        plan = reconcile.plan_workloadspread(
            ws,
            workload=workload,
            pods=governed,
            nodes=nodes,
            reservations=self.reservations.reservations(okey),
            now=moment,
            whitelist=self.whitelist,
            latest=reconcile.latest_version(ws, workload, replicasets=replicasets),
            recover_after_seconds=self.recover_after_seconds,
        )
        requeue = plan.requeue_at
        self._schedule(okey, _timestamp(requeue) if requeue is not None else None)
        by_key = {pod_state.key(p): p for p in governed}
        return [
            self._status_desired(ws, obj, plan.status),
            *self._pod_desired(plan, by_key),
            *(self._eviction(e, by_key) for e in plan.evictions if e.pod in by_key),
        ]

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

    def _pod_desired(self, plan: reconcile.Plan,
                     pods: Mapping[str, Mapping[str, Any]]) -> list[Desired]:
        out: list[Desired] = []
        for key in sorted(set(plan.deletion_costs) | set(plan.pod_patches)):
            pod = pods.get(key)
            if pod is None:
                continue
            patch: dict[str, Any] = {}
            reasons: list[str] = []
            if key in plan.pod_patches:
                _merge(patch, plan.pod_patches[key])
                reasons.append(f"matched to {plan.workloadspread}")
            if key in plan.deletion_costs:
                _merge(patch, {"metadata": {"annotations": {
                    DELETION_COST: plan.deletion_costs[key]}}})
                reasons.append(f"deletion cost {plan.deletion_costs[key]}")
            out.append(Desired(verb="patch", target=self._ref(PODS, pod), patch=patch,
                               reason="; ".join(reasons)))
        return out

    def _eviction(self, eviction: reconcile.Eviction,
                  pods: Mapping[str, Mapping[str, Any]]) -> Desired:
        return Desired(verb="evict", target=self._ref(PODS, pods[eviction.pod]),
                       reason=eviction.reason)
