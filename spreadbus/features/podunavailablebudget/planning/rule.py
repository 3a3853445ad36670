"""The PodUnavailableBudget rule: each budget's status, and the link annotation on its pods.

For every budget touched by a change (the budget itself; any pod or workload of its namespace; its
entry in the budget bucket) the rule hands the core's status computation the budget, the pods and
workloads of its namespace and ``now``, and turns the answer into:

- the status through the status subresource (``patch_status``), with the observed
  ``resourceVersion`` as precondition and one write in flight at a time (``serial``): a status
  computed from an older budget never lands, which the webhook's spending relies on
  (:mod:`spreadbus.features.podunavailablebudget.core.budget_ledger`);
- a ``kruise.io/related-pub`` patch for each of its pods that has none, as Kruise's controller
  stamps the pods created before the budget.

The webhook's records since the last written status come from the budget bucket
(:mod:`.budget_records`) and are merged into the budget's status maps before the computation, so
the written status counts those pods as disrupted; a record whose pod is already gone (the
computation drops it) is still listed until it expires, so every replica sees a status that
accounts for it and stops spending it twice.

A budget is planned at most once per ``min_interval``; changes in between are taken together.
The computation's earliest expiry (a record running out) wakes the rule without any event.

A budget in the host of member clusters over a template the host propagates counts the pods of
the template's copies in every member (:mod:`.member_copies`); since their changes are other
clusters' keys, such a budget is computed again every :data:`MEMBER_RECHECK_SECONDS`.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from datetime import UTC, datetime
from typing import Any, Final

from events.messages import ObjectRef, ResourceRef
from events.subjects import escape
from kubesemantics import pod_status
from kubesemantics.lenient_json import as_int
from spreadbus.features.podunavailablebudget.core.budget_ledger import BudgetEntry, reseeded
from spreadbus.features.podunavailablebudget.planning import status_inputs
from spreadbus.features.podunavailablebudget.planning.budget_records import (
    BUDGETS_RESOURCE,
    BudgetRecords,
)
from spreadbus.features.podunavailablebudget.planning.member_copies import member_inputs
from spreadbus.projection.bucket_entries import ClusterEntries
from spreadbus.projection.governor_pacing import GovernorPacing, PacedRule
from spreadbus.projection.kube_state import KubeProjection, resource_key, side_resource_key
from spreadbus.projection.planning import Desired

PUBS: Final = ResourceRef(group="policy.kruise.io", version="v1alpha1",
                          resource="podunavailablebudgets")
PODS: Final = ResourceRef(group="", version="v1", resource="pods")
WORKLOADS: Final = (
    ResourceRef(group="apps", version="v1", resource="deployments"),
    ResourceRef(group="apps", version="v1", resource="replicasets"),
    ResourceRef(group="apps", version="v1", resource="statefulsets"),
    ResourceRef(group="apps.kruise.io", version="v1alpha1", resource="clonesets"),
    ResourceRef(group="apps.kruise.io", version="v1beta1", resource="statefulsets"),
    ResourceRef(group="apps.kruise.io", version="v1alpha1", resource="uniteddeployments"),
)
RELATED: Final = "kruise.io/related-pub"
_AFTER_EXPIRY: Final = 0.5
MEMBER_RECHECK_SECONDS: Final = 0.5
"""How often a budget of the host over a propagated workload is computed again: the pods of
its member copies are in other clusters, whose changes reach other clusters' rules."""
"""A record is kept while its expiry is not before now: look again just after it."""

Key = tuple[str, str]


class BudgetRule(PacedRule):
    name: str = "podunavailablebudget"

    def __init__(self, cluster: str, *, records: ClusterEntries[BudgetEntry] | None = None,
                 min_interval_seconds: float = 0.02) -> None:
        self.cluster = cluster
        self.records = records or BudgetRecords().of(cluster)
        self.rk_budgets = side_resource_key(cluster, BUDGETS_RESOURCE)
        self.resources: tuple[ResourceRef, ...] = (PUBS, PODS, *WORKLOADS)
        self.rk_pubs = resource_key(cluster, PUBS.group, PUBS.resource)
        self.rk_pods = resource_key(cluster, PODS.group, PODS.resource)
        self.rk_workloads = {resource_key(cluster, w.group, w.resource): w for w in WORKLOADS}
        self.pacing = GovernorPacing(self.rk_pubs, min_interval_seconds)
        self._members: dict[str, dict[str, set[str]]] = {}
        """Resource key -> escaped namespace -> object keys: pods and workloads by namespace,
        kept from ``changed`` (after a restore every key is changed once)."""

    # -- time ---------------------------------------------------------------------------------


    def _schedule(self, okey: str, at: float | None) -> None:
        """The earliest wake-up asked for wins; ``None`` cancels."""
        self.pacing.wake_by(okey, at)

    # -- the rule -----------------------------------------------------------------------------

    def desired(self, view: KubeProjection, changed: Set[Key], now: float) -> list[Desired]:
        affected: set[str] = set()
        namespaces: set[str] = set()
        for rkey, okey in changed:
            if rkey in (self.rk_pubs, self.rk_budgets):
                affected.add(okey)
            elif rkey == self.rk_pods or rkey in self.rk_workloads:
                namespace = okey.split(".", 1)[0]
                namespaces.add(namespace)
                members = self._members.setdefault(rkey, {})
                if view.stored(rkey, okey) is None:
                    keys = members.get(namespace)
                    if keys is not None:
                        keys.discard(okey)
                        if not keys:
                            del members[namespace]
                else:
                    members.setdefault(namespace, set()).add(okey)
        if namespaces:
            for okey in view.objects(self.cluster, PUBS.group, PUBS.resource):
                if okey.split(".", 1)[0] in namespaces:
                    affected.add(okey)
        out: list[Desired] = []
        for okey in self.pacing.paced(affected, now):
            out.extend(self._plan(view, okey, now))
        return out

    def _plan(self, view: KubeProjection, okey: str, now: float) -> list[Desired]:
        budget = view.decoded(self.rk_pubs, okey)
        if budget is None:
            self.pacing.forget(okey)
            self._schedule(okey, None)
            return []
        if pod_status.deleting_truthy(budget):
            return []
        metadata = budget.get("metadata") or {}
        namespace = str(metadata.get("namespace") or "")
        escaped = escape(namespace)
        pods = self._in_namespace(view, self.rk_pods, escaped)
        workloads = [obj for rkey in self.rk_workloads
                     for obj in self._in_namespace(view, rkey, escaped)]
        at = datetime.fromtimestamp(now, UTC)
        entry = self.records.get(okey)
        members = member_inputs(view, self.cluster, namespace)
        if members is not None:
            pods, workloads = pods + members.pods, workloads + members.workloads
        computed = status_inputs.compute(budget, pods, workloads, _records(entry, at), at)
        self._schedule(okey, None if computed.requeue_at is None
                       else computed.requeue_at.timestamp() + _AFTER_EXPIRY)
        if members is not None:
            # The members' pods change no key of this cluster: look again after a while.
            self._schedule(okey, now + MEMBER_RECHECK_SECONDS)
        governor = _ref(PUBS, budget)
        generation = as_int(metadata.get("generation")) or 0
        out = [Desired(
            verb="patch_status",
            target=governor,
            governor=governor,
            governor_generation=generation,
            patch={"status": _status_patch(budget.get("status"), computed.status)},
            reason=f"status of {namespace}/{metadata.get('name')}",
            precondition="resource_version",
            serial=True,
        )] if _differs(budget.get("status"), computed.status) else []
        name = str(metadata.get("name") or "")
        elsewhere = members.pod_uids if members is not None else set()
        for pod in computed.unlinked:
            if str((pod.get("metadata") or {}).get("uid") or "") in elsewhere:
                continue  # a member's pod: linked there, by that member's planning
            out.append(Desired(verb="patch", target=_ref(PODS, pod), governor=governor,
                               governor_generation=generation,
                               patch={"metadata": {"annotations": {RELATED: name}}},
                               reason=f"protected by PodUnavailableBudget {namespace}/{name}"))
        return out

    def _in_namespace(self, view: KubeProjection, rkey: str,
                      namespace: str) -> list[dict[str, Any]]:
        """The namespace's objects of one resource, in key order."""
        out: list[dict[str, Any]] = []
        for okey in sorted(self._members.get(rkey, {}).get(namespace, ())):
            obj = view.decoded(rkey, okey)
            if obj is not None:
                out.append(obj)
        return out


def _records(entry: BudgetEntry, now: datetime) -> dict[str, dict[str, str]]:
    """The webhook's live records not yet in a written status."""
    live = reseeded(entry, None, 0, now)
    return {"disruptedPods": dict(live.disrupted), "unavailablePods": dict(live.unavailable)}


def _differs(observed: object, wanted: Mapping[str, Any]) -> bool:
    """A whole status is replaced: any difference, including a map entry to drop."""
    return observed != wanted


def _status_patch(observed: object, wanted: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON merge patch from ``observed`` to exactly ``wanted``: what it drops is nulled."""
    old = observed if isinstance(observed, Mapping) else {}
    patch: dict[str, Any] = {key: None for key in old if key not in wanted}
    for key, value in wanted.items():
        previous = old.get(key)
        if isinstance(value, Mapping) and isinstance(previous, Mapping):
            patch[key] = {**{k: None for k in previous if k not in value}, **value}
        else:
            patch[key] = value
    return patch


def _ref(resource: ResourceRef, obj: Mapping[str, Any]) -> ObjectRef:
    metadata = obj.get("metadata") or {}
    return ObjectRef(group=resource.group, version=resource.version, resource=resource.resource,
                     namespace=str(metadata.get("namespace") or ""),
                     name=str(metadata.get("name") or ""), uid=str(metadata.get("uid") or ""))
