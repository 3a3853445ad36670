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

Work per event is proportional to what changed. The rule keeps indexes over the projection that
it updates from ``changed`` alone: every pod and workload by its controller owner, WorkloadSpreads
by their ``targetRef``, pods by node. A changed pod walks its owner chain up (pod -> ReplicaSet ->
Deployment) to the WorkloadSpreads targeting any of its ancestors, and only those are planned; a
planned WorkloadSpread walks its target's descendants down to its pods, so its cost is its own
pods, never the cluster's. The indexes are derived data: fed every key of the projection (what
the planner does after a restore or on becoming leader) they are rebuilt exactly.

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
    api_group,
    from_object,
    status_to_json,
)
from spreadbus.core.workloadspread.reschedule import RECOVER_AFTER
from spreadbus.projection.kube_state import (
    KubeProjection,
    StoredObject,
    decode_object,
    object_key,
    resource_key,
)
from spreadbus.projection.planning import Desired
from spreadbus.projection.reservations import RESERVATIONS_RESOURCE, ReservationLedgers

WORKLOADSPREADS: Final = ResourceRef(group="apps.kruise.io", version="v1alpha1",
                                     resource="workloadspreads")
PODS: Final = ResourceRef(group="", version="v1", resource="pods")
NODES: Final = ResourceRef(group="", version="v1", resource="nodes")
WORKLOADS: Final = {
    ("apps", "Deployment"): ResourceRef(group="apps", version="v1", resource="deployments"),
    ("apps", "ReplicaSet"): ResourceRef(group="apps", version="v1", resource="replicasets"),
    ("apps", "StatefulSet"): ResourceRef(group="apps", version="v1", resource="statefulsets"),
}
"""(group, kind) -> resource of the workloads an owner chain may pass through; decisions wait for
these to be listed (every cluster serves them)."""
OPTIONAL_WORKLOADS: Final = {
    ("apps.kruise.io", "CloneSet"): ResourceRef(group="apps.kruise.io", version="v1alpha1",
                                                resource="clonesets"),
    ("apps.kruise.io", "StatefulSet"): ResourceRef(group="apps.kruise.io", version="v1beta1",
                                                   resource="statefulsets"),
    ("batch", "Job"): ResourceRef(group="batch", version="v1", resource="jobs"),
}
"""Kinds used when the watcher streams them (Kruise's CRDs exist only where Kruise is installed):
indexed and looked up like the others, but decisions do not wait for their listing."""
DELETION_COST: Final = "controller.kubernetes.io/pod-deletion-cost"
_MAX_CHAIN: Final = 8

OwnerKey = tuple[str, str, str, str]
"""(namespace, group, kind, name) of a workload."""
Key = tuple[str, str]
"""(resource key, object key) as in :attr:`KubeProjection.changed`."""


def _owner_of(obj: Mapping[str, Any], namespace: str) -> OwnerKey | None:
    ref = pod_state.controller_ref(obj)
    if ref is None:
        return None
    return (namespace, api_group(str(ref.get("apiVersion") or "")), str(ref.get("kind") or ""),
            str(ref.get("name") or ""))


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
        self._rk_spreads = resource_key(cluster, WORKLOADSPREADS.group, WORKLOADSPREADS.resource)
        self._rk_pods = resource_key(cluster, PODS.group, PODS.resource)
        self._rk_nodes = resource_key(cluster, NODES.group, NODES.resource)
        kinds = {**WORKLOADS, **OPTIONAL_WORKLOADS}
        self._rk_workloads = {
            resource_key(cluster, ref.group, ref.resource): gk for gk, ref in kinds.items()
        }
        self._rk_of_kind = {gk: resource_key(cluster, ref.group, ref.resource)
                            for gk, ref in kinds.items()}
        # Indexes, all derived from the projection (see the module docstring).
        self._owner: dict[Key, OwnerKey] = {}
        self._children: dict[OwnerKey, set[Key]] = {}
        self._spreads_by_target: dict[OwnerKey, set[str]] = {}
        self._target_of: dict[str, OwnerKey] = {}
        self._pod_node: dict[str, str] = {}
        self._node_pods: dict[str, set[str]] = {}
        self._decoded: dict[Key, tuple[int, dict[str, Any]]] = {}
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
                out.add((self._rk_spreads, okey))
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
        affected: set[str] = set()
        for rkey, okey in changed:
            if rkey == self._rk_spreads:
                self._index_spread(view, okey)
                affected.add(okey)
            elif rkey == self._rk_pods or rkey in self._rk_workloads:
                affected |= self._index_member(view, rkey, okey)
            elif rkey == self._rk_nodes:
                for pod in self._node_pods.get(unescape(okey.split(".", 1)[1]), ()):
                    affected |= self._spreads_above((self._rk_pods, pod))
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

    # -- indexes --------------------------------------------------------------------------------

    def _stored(self, view: KubeProjection, rkey: str, okey: str) -> StoredObject | None:
        return view.state.objects.get(rkey, {}).get(okey)

    def _decode(self, view: KubeProjection, key: Key) -> dict[str, Any] | None:
        stored = self._stored(view, *key)
        if stored is None:
            self._decoded.pop(key, None)
            return None
        cached = self._decoded.get(key)
        if cached is not None and cached[0] == stored.seq:
            return cached[1]
        obj = decode_object(stored)
        if key[0] == self._rk_pods:
            self._decoded[key] = (stored.seq, obj)  # pods are read on every plan of their spread
        return obj

    def _index_spread(self, view: KubeProjection, okey: str) -> None:
        old = self._target_of.pop(okey, None)
        if old is not None:
            self._spreads_by_target.get(old, set()).discard(okey)
        obj = self._decode(view, (self._rk_spreads, okey))
        if obj is None:
            self._schedule(okey, None)
            return
        ref = (obj.get("spec") or {}).get("targetRef")
        if not isinstance(ref, Mapping):
            return
        namespace = str((obj.get("metadata") or {}).get("namespace") or "")
        target = (namespace, api_group(str(ref.get("apiVersion") or "")),
                  str(ref.get("kind") or ""), str(ref.get("name") or ""))
        self._target_of[okey] = target
        self._spreads_by_target.setdefault(target, set()).add(okey)

    def _index_member(self, view: KubeProjection, rkey: str, okey: str) -> set[str]:
        """Re-index one pod or workload; the WorkloadSpreads above it, before and after."""
        key = (rkey, okey)
        affected = self._spreads_above(key)
        old = self._owner.pop(key, None)
        if old is not None:
            siblings = self._children.get(old)
            if siblings is not None:
                siblings.discard(key)
                if not siblings:
                    del self._children[old]
        obj = self._decode(view, key)
        is_pod = rkey == self._rk_pods
        if is_pod:
            node = self._pod_node.pop(okey, None)
            if node is not None:
                self._node_pods.get(node, set()).discard(okey)
        if obj is None:
            return affected
        metadata = obj.get("metadata") or {}
        namespace = str(metadata.get("namespace") or "")
        owner = _owner_of(obj, namespace)
        if owner is not None:
            self._owner[key] = owner
            self._children.setdefault(owner, set()).add(key)
        if is_pod:
            node = pod_state.node_name(obj)
            if node:
                self._pod_node[okey] = node
                self._node_pods.setdefault(node, set()).add(okey)
            matched = pod_state.matched(obj)
            if matched is not None and matched.name:
                spread = object_key(namespace, matched.name)
                if spread in self._target_of:
                    affected.add(spread)
        else:
            group, kind = self._rk_workloads[rkey]
            affected |= self._spreads_by_target.get(
                (namespace, group, kind, str(metadata.get("name") or "")), set()
            )
        return affected | self._spreads_above(key)

    def _spreads_above(self, key: Key) -> set[str]:
        found: set[str] = set()
        owner = self._owner.get(key)
        for _ in range(_MAX_CHAIN):
            if owner is None:
                break
            found |= self._spreads_by_target.get(owner, set())
            rkey = self._rk_of_kind.get((owner[1], owner[2]))
            if rkey is None:
                break
            owner = self._owner.get((rkey, object_key(owner[0], owner[3])))
        return found

    def _descendants(self, target: OwnerKey) -> tuple[list[Key], list[Key]]:
        """(pods, workloads) below ``target`` in the owner index."""
        pods: list[Key] = []
        workloads: list[Key] = []
        frontier = [target]
        for _ in range(_MAX_CHAIN):
            nxt: list[OwnerKey] = []
            for owner in frontier:
                for child in self._children.get(owner, ()):
                    if child[0] == self._rk_pods:
                        pods.append(child)
                        continue
                    workloads.append(child)
                    group, kind = self._rk_workloads[child[0]]
                    namespace, name = owner[0], child[1].split(".", 1)[1]
                    nxt.append((namespace, group, kind, unescape(name)))
            if not nxt:
                break
            frontier = nxt
        return pods, workloads

    # -- planning one WorkloadSpread ---------------------------------------------------------------

    def _lookup(self, view: KubeProjection) -> Any:
        cache: dict[OwnerKey, Mapping[str, Any] | None] = {}

        def lookup(namespace: str, group: str, kind: str, name: str) -> Mapping[str, Any] | None:
            key = (namespace, group, kind, name)
            if key not in cache:
                rkey = self._rk_of_kind.get((group, kind))
                cache[key] = (
                    None if rkey is None
                    else self._decode(view, (rkey, object_key(namespace, name)))
                )
            return cache[key]

        return lookup

    def _plan(self, view: KubeProjection, okey: str, now: float) -> list[Desired]:
        obj = self._decode(view, (self._rk_spreads, okey))
        if obj is None:
            self._schedule(okey, None)
            self._planned_at.pop(okey, None)
            return []
        if self.reservations.floor(okey) > view.last_seq:
            self._schedule(okey, now)  # the projection has not reached the ledger's floor yet
            return []
        ws = from_object(obj)
        target = self._target_of.get(okey)
        if ws.deleting or ws.target_ref is None or target is None:
            self._schedule(okey, None)
            return []
        lookup = self._lookup(view)
        workload = lookup(*target)
        pod_keys, workload_keys = self._descendants(target)
        pods = [p for p in (self._decode(view, k) for k in pod_keys) if p is not None]
        governed = reconcile.workload_pods(ws, workload, pods, lookup=lookup,
                                           whitelist=self.whitelist)
        replicasets = [
            rs for rs in (self._decode(view, k) for k in workload_keys
                          if self._rk_workloads[k[0]] == ("apps", "ReplicaSet"))
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
