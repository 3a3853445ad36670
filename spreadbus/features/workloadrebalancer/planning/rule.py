"""The WorkloadRebalancer rule: status, requests on the governing objects, deletion after the TTL.

For every WorkloadRebalancer touched by a change (and every unfinished one whenever anything else
changed: the governing object may have just been seen carrying the request), the rule runs
:func:`~spreadbus.features.workloadrebalancer.core.status.sync` over the projection and turns
the answer into writes:

- the status through the status subresource (``patch_status``), as the difference from the
  status held (a key the new status leaves out is removed), with the observed
  ``resourceVersion`` as precondition (it is derived from the spec and the previous status, and
  ``finishTime`` is now: a write decided on an older object must not land), one at a time;
- ``rebalance.spreadbus.io/request: <uid>`` on each governing UnitedDeployment or WorkloadSpread
  that does not carry this request yet (uid precondition: the value stands by itself); the entry
  waits without a result until the object is seen carrying it, then turns ``Successful``;
- for a workload neither governs (or a UnitedDeployment that a binding propagates as a
  resource template), Karmada's ``spec.rescheduleTriggeredAt`` on its
  ResourceBinding (a ClusterResourceBinding for a cluster-scoped resource such as a
  ClusterRole) in the planner's cluster (:mod:`..core.binding_trigger`; resourceVersion
  precondition: a newer rebalancer's trigger landed meanwhile must not be moved back); the entry
  turns ``Successful`` once the binding holds this trigger or a later one, and is
  ``Failed``/``ReferencedBindingNotFound`` when there is no such binding;
- a ``delete`` of the rebalancer once ``finishTime + ttlSecondsAfterFinished`` has passed, read
  from the status this very round decides, and a wake-up at that time otherwise
  (:class:`~spreadbus.projection.planning.Timed`), so no event is needed to expire it.

The named object is looked up in the projection by API group, namespace, name and kind, among
every resource of its group the watcher streams (a whitelisted custom workload included).

Under planner shards every shard sees every rebalancer (a cluster-scoped object) and decides the
entries of the workloads in its own namespaces (``shards``; see
:mod:`~spreadbus.features.workloadrebalancer.core.status` for how the status stays right).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence, Set
from datetime import UTC, datetime
from typing import Any, Final

from events.messages import ObjectRef, ResourceRef
from events.shards import ONE, Shards
from events.subjects import escape
from kubesemantics import merge_patch
from kubesemantics.group_version import api_group
from kubesemantics.karmada_binding import WORK_GROUP, binding_name
from kubesemantics.lenient_json import as_map, as_str
from spreadbus.features.workloadrebalancer.core.binding_trigger import (
    CLUSTER_RESOURCE_BINDING,
    RESOURCE_BINDING,
    delivered,
    trigger_patch,
)
from spreadbus.features.workloadrebalancer.core.model import (
    GROUP,
    REQUEST_ANNOTATION,
    RESOURCE,
    WorkloadRebalancer,
    WorkloadRef,
    from_object,
)
from spreadbus.features.workloadrebalancer.core.placement import (
    KRUISE_GROUP,
    UNITED_DEPLOYMENT,
    Holds,
    governing,
    holds_request,
    is_united_deployment,
)
from spreadbus.features.workloadrebalancer.core.status import Placement, Sync, sync
from spreadbus.projection.kube_state import KubeProjection, object_key, resource_key
from spreadbus.projection.planning import Desired
from spreadbus.projection.wake_schedule import WakeSchedule

Key = tuple[str, str]

REBALANCERS: Final = ResourceRef(group=GROUP, version="v1alpha1", resource=RESOURCE)
WORKLOADSPREADS: Final = ResourceRef(group=KRUISE_GROUP, version="v1alpha1",
                                     resource="workloadspreads")
UNITEDDEPLOYMENTS: Final = ResourceRef(group=KRUISE_GROUP, version="v1alpha1",
                                       resource="uniteddeployments")
BINDINGS: Final = ResourceRef(group=WORK_GROUP, version="v1alpha2", resource="resourcebindings")
"""Read when present: a cluster without Karmada's API holds none, and nothing waits for it."""
CLUSTER_BINDINGS: Final = ResourceRef(group=WORK_GROUP, version="v1alpha2",
                                      resource="clusterresourcebindings")
"""A cluster-scoped resource's binding (a ClusterRole's): read when present, as above."""
APPS: Final = tuple(ResourceRef(group="apps", version="v1", resource=r)
                    for r in ("deployments", "replicasets", "statefulsets"))


class WorkloadRebalancerRule:
    name: str = "workloadrebalancer"

    def __init__(self, cluster: str, shards: Shards = ONE) -> None:
        self.cluster = cluster
        self.shards = shards
        self.resources: tuple[ResourceRef, ...] = (REBALANCERS, WORKLOADSPREADS,
                                                   UNITEDDEPLOYMENTS, *APPS)
        self.rk_rebalancers = resource_key(cluster, GROUP, RESOURCE)
        self.rk_spreads = resource_key(cluster, KRUISE_GROUP, WORKLOADSPREADS.resource)
        self._unfinished: set[str] = set()
        self._wakes = WakeSchedule()

    # -- the planner's time seam ------------------------------------------------------------------

    def due(self, now: float) -> set[Key]:
        return {(self.rk_rebalancers, okey) for okey in self._wakes.due(now)}

    def next_wake(self) -> float | None:
        return self._wakes.next_wake()

    def _schedule(self, okey: str, at: datetime | None) -> None:
        self._wakes.set(okey, None if at is None else at.timestamp())

    # -- the rule ---------------------------------------------------------------------------------

    def desired(self, view: KubeProjection, changed: Set[Key], now: float) -> list[Desired]:
        names = {okey for rkey, okey in changed if rkey == self.rk_rebalancers}
        if any(rkey != self.rk_rebalancers for rkey, _ in changed):
            names |= self._unfinished
        if not names:
            return []
        rebalancers = {okey: from_object(obj)
                       for okey, obj in view.iter_decoded(self.cluster, GROUP, RESOURCE)}
        requests = {wr.uid: (wr.created, wr.uid) for wr in rebalancers.values() if wr.uid}
        spreads = [obj for _, obj in view.iter_decoded(self.cluster, KRUISE_GROUP,
                                                       WORKLOADSPREADS.resource)]
        at = datetime.fromtimestamp(now, UTC)
        out: list[Desired] = []
        for okey in sorted(names):
            wr = rebalancers.get(okey)
            if wr is None or wr.deleting:
                self._unfinished.discard(okey)
                self._schedule(okey, None)
                continue
            holds = holds_request(wr.uid, wr.created, requests)
            resolve = functools.partial(self._governing, view, spreads, holds, wr.created)
            outcome = sync(wr, resolve, at, self.shards.owns)
            if outcome.finished:
                self._unfinished.discard(okey)
            else:
                self._unfinished.add(okey)
            self._schedule(okey, outcome.requeue_at)
            out.extend(self._writes(view, wr, okey, outcome))
        return out

    def _writes(self, view: KubeProjection, wr: WorkloadRebalancer, okey: str,
                outcome: Sync) -> Iterator[Desired]:
        obj = view.decoded(self.rk_rebalancers, okey) or {}
        target = ObjectRef(group=GROUP, version=as_str(obj.get("apiVersion")).split("/")[-1]
                           or REBALANCERS.version, resource=RESOURCE, name=wr.name,
                           uid=wr.uid)
        # The difference from the status held, not the whole: a JSON merge patch removes a key
        # only when it names it as null, so one the new status leaves out would stay.
        status_patch = (merge_patch.diff(as_map(obj.get("status")), outcome.status.to_json())
                        if outcome.write else {})
        if status_patch:
            yield Desired(verb="patch_status", target=target, governor=target,
                          governor_generation=wr.generation,
                          patch={"status": status_patch},
                          reason=f"status of WorkloadRebalancer {wr.name} at generation "
                                 f"{wr.generation}",
                          precondition="resource_version", serial=True)
        for trigger in outcome.triggers:
            if trigger.placement.kind in (RESOURCE_BINDING, CLUSTER_RESOURCE_BINDING):
                binding = self._binding_ref(view, trigger.placement)
                if binding is not None and wr.created is not None:
                    yield Desired(
                        verb="patch", target=binding, governor=target,
                        governor_generation=wr.generation, patch=trigger_patch(wr.created),
                        precondition="resource_version",
                        reason=f"WorkloadRebalancer {wr.name} triggers a fresh schedule of "
                               f"{trigger.workload.describe()}")
                continue
            placement = self._governor_ref(view, trigger.placement)
            if placement is not None:
                yield Desired(
                    verb="patch", target=placement, governor=target,
                    governor_generation=wr.generation,
                    patch={"metadata": {"annotations": {REQUEST_ANNOTATION: wr.uid}}},
                    reason=f"WorkloadRebalancer {wr.name} asks a fresh placement of "
                           f"{trigger.workload.describe()}")
        if outcome.delete:
            yield Desired(verb="delete", target=target, governor=target,
                          governor_generation=wr.generation,
                          reason=f"WorkloadRebalancer {wr.name}: ttlSecondsAfterFinished passed")

    def _governor_ref(self, view: KubeProjection, placement: Placement) -> ObjectRef | None:
        resource = UNITEDDEPLOYMENTS if placement.kind == UNITED_DEPLOYMENT else WORKLOADSPREADS
        obj = view.get(self.cluster, resource.group, resource.resource, placement.namespace,
                       placement.name)
        if obj is None:
            return None
        metadata = as_map(obj.get("metadata"))
        version = as_str(obj.get("apiVersion")).split("/")[-1] or resource.version
        return ObjectRef(group=resource.group, version=version, resource=resource.resource,
                         namespace=placement.namespace, name=placement.name,
                         uid=as_str(metadata.get("uid")))

    def _binding_ref(self, view: KubeProjection, placement: Placement) -> ObjectRef | None:
        ref = CLUSTER_BINDINGS if placement.kind == CLUSTER_RESOURCE_BINDING else BINDINGS
        obj = view.get(self.cluster, ref.group, ref.resource, placement.namespace,
                       placement.name)
        if obj is None:
            return None
        return ObjectRef(group=ref.group, version=ref.version,
                         resource=ref.resource, namespace=placement.namespace,
                         name=placement.name,
                         uid=as_str(as_map(obj.get("metadata")).get("uid")))

    def _governing(self, view: KubeProjection, spreads: Sequence[Mapping[str, Any]],
                   holds: Holds, created: datetime | None,
                   ref: WorkloadRef) -> Placement | None:
        binding = self._binding_placement(view, ref, created)
        if binding is not None and is_united_deployment(ref):
            # A UnitedDeployment a Karmada binding propagates is a resource template: the
            # rebalance reschedules its binding, as Karmada's; each member's copy spreads its
            # share over its own subsets.
            return binding
        placement = governing(ref, self._find(view, ref), spreads, holds)
        return placement if placement is not None else binding

    def _binding_placement(self, view: KubeProjection, ref: WorkloadRef,
                           created: datetime | None) -> Placement | None:
        # Karmada's binding: a ClusterResourceBinding for a resource named without namespace.
        bindings = BINDINGS if ref.namespace else CLUSTER_BINDINGS
        binding = view.get(self.cluster, bindings.group, bindings.resource, ref.namespace,
                           binding_name(ref.kind, ref.name))
        if binding is None:
            return None
        return Placement(kind=RESOURCE_BINDING if ref.namespace else CLUSTER_RESOURCE_BINDING,
                         namespace=ref.namespace,
                         name=binding_name(ref.kind, ref.name),
                         delivered=delivered(binding, created))

    def _find(self, view: KubeProjection, ref: WorkloadRef) -> Mapping[str, Any] | None:
        """The object ``ref`` names, in any streamed resource of its group."""
        if not ref.namespace:
            return None  # cluster-scoped: nothing spreadbus places
        prefix = f"{escape(self.cluster)}.{escape(api_group(ref.api_version))}."
        okey = object_key(ref.namespace, ref.name)
        for rkey, bucket in view.state.objects.items():
            if rkey.startswith(prefix) and okey in bucket:
                obj = view.decoded(rkey, okey)
                if obj is not None and obj.get("kind") == ref.kind:
                    return obj
        return None
