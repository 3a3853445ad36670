"""The UnitedDeployment rule: one reconcile per changed UD, turned into plans.

For each UnitedDeployment a change concerns, it gathers the UD's family from the projection (its
subset workloads, their ReplicaSets and pods, its ControllerRevisions: see
:mod:`.family`), calls the pure reconcile
(:func:`spreadbus.features.uniteddeployment.core.reconcile.reconcile`) and turns the answer into
:class:`~spreadbus.projection.planning.Desired` writes:

- a subset workload to create: ``create`` under a name derived from the UD's uid and the subset
  (:mod:`.workload_names`), so every planner decides the same create and a repeated decision
  finds the workload instead of making a second one;
- a subset workload to update: a merge patch of the difference between the observed workload and
  the rendered one (labels, annotations, owner references and the whole spec; ``null`` for what
  the rendered one drops), on the observed ``resourceVersion``, since it was computed from it;
- subset workloads to delete (a subset removed from the spec, a duplicate, another template
  kind): ``delete`` with the observed uid;
- ControllerRevisions to create, to renumber (a rollback to an older template) and to delete
  (history beyond ``revisionHistoryLimit``);
- pod labels (reservation mode's ``united-deployment-reserved-pod``), uid precondition;
- the status through the status subresource, on the observed ``resourceVersion`` and one plan at a
  time (``serial``), like the WorkloadSpread status;
- ``rebalance.spreadbus.io/handled`` on the UD once a requested rebalance is done.

Nothing is planned for a UD being deleted: the garbage collector removes its workloads and
revisions through their owner references.

Work per change. A changed object is linked to its controller owner and walks up to the one UD it
concerns (:mod:`.family`); only those UDs are reconciled. The pods under any UD are kept between
rounds as facts counted per controller owner (:mod:`.followed_pods`), each replaced as its pod
changes; a pod starts or stops being followed when it or an owner above it is linked or unlinked.
The reconcile takes the counts of the UD's owners
(:func:`~spreadbus.features.uniteddeployment.core.reconcile.reconcile_grouped`), so a round costs
what changed and the pods it must judge one by one, not the size of the UD.

Coalescing and time work as in the WorkloadSpread rule: a UD is reconciled at most once per
``min_interval`` (changes in between are taken in one round), and the reconcile's ``requeue_at``
(a pending pod's reschedule deadline, the end of an unschedulable window) is kept per UD and
handed back by :meth:`UnitedDeploymentRule.due`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence, Set
from datetime import UTC, datetime
from typing import Any, Final, Literal, Protocol

import msgspec

from events.messages import ObjectRef, ResourceRef
from kubesemantics import merge_patch, pod_status
from kubesemantics.group_version import api_group
from kubesemantics.lenient_json import as_int
from spreadbus.features.uniteddeployment.core.pod_groups import OwnerKey, OwnerPods
from spreadbus.features.uniteddeployment.planning.family import (
    CONTROLLER_REVISIONS,
    KINDS,
    PODS,
    UD_KIND,
    UNITED_DEPLOYMENTS,
    WORKLOADS,
    FamilyIndex,
    Node,
)
from spreadbus.features.uniteddeployment.planning.followed_pods import (
    FollowedPods,
    facts_from_json,
)
from spreadbus.features.uniteddeployment.planning.workload_names import subset_workload_name
from spreadbus.projection.governor_pacing import GovernorPacing, PacedRule
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.projection.planning import Desired

log = logging.getLogger(__name__)

Key = tuple[str, str]
RETRY_SECONDS: Final = 5.0
"""How soon a UnitedDeployment whose reconcile raised is tried again."""
HANDLED_ANNOTATION: Final = "rebalance.spreadbus.io/handled"
SYNCED_METADATA: Final = ("labels", "annotations", "ownerReferences")
"""The metadata a subset workload's update writes; the rest belongs to the API server."""


class SubsetDecision(Protocol):
    @property
    def replicas(self) -> int: ...
    @property
    def partition(self) -> int | None: ...
    @property
    def action(self) -> Literal["create", "update", "none"]: ...
    @property
    def workload(self) -> Mapping[str, Any]: ...


class Reconciliation(Protocol):
    """What :func:`~spreadbus.features.uniteddeployment.core.reconcile.reconcile` answers."""

    @property
    def subsets(self) -> Mapping[str, SubsetDecision]: ...
    @property
    def deletes(self) -> Sequence[Mapping[str, Any]]: ...
    @property
    def status(self) -> Mapping[str, Any]: ...
    @property
    def error(self) -> str | None: ...
    @property
    def requeue_at(self) -> datetime | None: ...
    @property
    def pod_labels(self) -> Mapping[str, Mapping[str, str]]: ...
    @property
    def revision_creates(self) -> Sequence[Mapping[str, Any]]: ...
    @property
    def revision_updates(self) -> Sequence[tuple[str, int]]: ...
    @property
    def revision_deletes(self) -> Sequence[str]: ...
    @property
    def rebalance_handled(self) -> str | None: ...


class Reconcile(Protocol):
    def __call__(self, ud: Mapping[str, Any], *, workloads: Sequence[Mapping[str, Any]],
                 pod_groups: Mapping[OwnerKey, OwnerPods],
                 revisions: Sequence[Mapping[str, Any]], now: datetime) -> Reconciliation: ...


class UnitedDeploymentRule(PacedRule):
    name: str = "uniteddeployment"

    def __init__(self, cluster: str, *, reconcile: Reconcile,
                 min_interval_seconds: float = 0.25) -> None:
        self.cluster = cluster
        self.reconcile = reconcile
        self.resources: tuple[ResourceRef, ...] = tuple(KINDS.values())
        self.index = FamilyIndex(cluster)
        self.pacing = GovernorPacing(self.index.rk_uds, min_interval_seconds)
        self.pods = FollowedPods()
        """Every pod under some UD, counted per controller owner."""

    @property
    def min_interval(self) -> float:
        return self.pacing.min_interval

    @min_interval.setter
    def min_interval(self, seconds: float) -> None:
        self.pacing.min_interval = seconds

    # -- the planner's time seam ------------------------------------------------------------------


    # -- the rule -------------------------------------------------------------------------------

    def desired(self, view: KubeProjection, changed: Set[Key], now: float) -> list[Desired]:
        index = self.index
        index.follow(view)
        affected: set[str] = set()
        for rkey, okey in changed:
            if rkey == index.rk_uds:
                affected.add(okey)
            before, after = index.index(view, rkey, okey)
            affected |= before | after
            if rkey == index.rk_pods:
                self._pod_changed(view, rkey, okey, after)
            elif index.relinked:
                # A workload or ReplicaSet came, went or moved: its pods move with it.
                self._follow_below(view, rkey, okey, changed)
        out: list[Desired] = []
        for okey in self.pacing.paced(affected, now):
            try:
                out.extend(self.plan(view, okey, now))
            except Exception:
                # One UnitedDeployment the reconcile cannot handle must not hold back the
                # others: it is logged and looked at again a little later.
                log.exception("reconcile failed", extra={"uniteddeployment": okey})
                self._schedule(okey, now + RETRY_SECONDS)
        return out

    def plan(self, view: KubeProjection, okey: str, now: float) -> list[Desired]:
        """Reconcile one UnitedDeployment (by its object key) and say what to write."""
        index = self.index
        ud = view.decoded(index.rk_uds, okey)
        if ud is None or pod_status.deleting_truthy(ud):
            self._schedule(okey, None)
            if ud is None:
                self.pacing.forget(okey)
            return []
        node = index.node(index.rk_uds, okey)
        assert node is not None
        workloads: list[dict[str, Any]] = []
        revisions: list[dict[str, Any]] = []
        pod_groups: dict[OwnerKey, OwnerPods] = {}
        for member in sorted(index.family(node)):
            kind = (member[0], member[1])
            obj = index.decode(view, member)
            if obj is None:
                continue
            if kind == ("apps", "ControllerRevision"):
                revisions.append(obj)
            else:
                workloads.append(obj)
                pod_groups.update(self.pods.owned_by(member))
        answer = self.reconcile(ud, workloads=workloads, pod_groups=pod_groups,
                                revisions=revisions, now=datetime.fromtimestamp(now, UTC))
        requeue = answer.requeue_at
        self._schedule(okey, requeue.timestamp() if requeue is not None else None)
        return self.writes(view, ud, node, answer)

    def _pod_changed(self, view: KubeProjection, rkey: str, okey: str,
                     after: set[str]) -> None:
        stored = view.stored(rkey, okey) if after else None
        self.pods.put(okey, None if stored is None else facts_from_json(stored.raw))

    def _follow_below(self, view: KubeProjection, rkey: str, okey: str,
                      changed: Set[Key]) -> None:
        """Follow the pods below a relinked owner that are now under a UD, and stop following
        those that no longer are; a pod that changed itself is followed from its own key."""
        node = self.index.node(rkey, okey)
        if node is None:
            return
        for key in self.index.pods_below(node):
            if key in changed:
                continue
            pod = key[1]
            if not self.index.pod_under_ud(key):
                self.pods.put(pod, None)
            elif pod not in self.pods:
                stored = view.stored(*key)
                if stored is not None:
                    self.pods.put(pod, facts_from_json(stored.raw))

    def writes(self, view: KubeProjection, ud: Mapping[str, Any], node: Node,
               answer: Reconciliation) -> list[Desired]:
        """Desired writes of one reconcile; ``ud`` is the UnitedDeployment it was made for."""
        metadata = ud.get("metadata") or {}
        key = f"{node[2]}/{node[3]}"
        out: list[Desired] = []
        for subset, decision in answer.subsets.items():
            if decision.action == "create":
                out.append(self._create(key, node[2], str(metadata.get("uid") or ""), subset,
                                        decision.workload))
            elif decision.action == "update":
                update = self._update(view, key, subset, decision.workload)
                if update is not None:
                    out.append(update)
        for workload in answer.deletes:
            ref = _ref_of(workload)
            if ref is not None:
                out.append(Desired(verb="delete", target=ref,
                                   reason=f"{key}: no longer a subset workload"))
        namespace = node[2]
        for revision in answer.revision_creates:
            name = str((revision.get("metadata") or {}).get("name") or "")
            out.append(Desired(verb="create", target=self._revision(namespace, name),
                               object=dict(revision), reason=f"{key}: revision {name}"))
        for name, number in answer.revision_updates:
            out.append(Desired(verb="patch", target=self._revision(namespace, name),
                               patch={"revision": number},
                               reason=f"{key}: revision {name} is again the newest"))
        for name in answer.revision_deletes:
            out.append(Desired(verb="delete", target=self._revision(namespace, name),
                               reason=f"{key}: revision {name} beyond the history limit"))
        for pod_key, labels in sorted(answer.pod_labels.items()):
            pod_namespace, _, pod_name = pod_key.partition("/")
            out.append(Desired(
                verb="patch",
                target=ObjectRef(group=PODS.group, version=PODS.version, resource=PODS.resource,
                                 namespace=pod_namespace, name=pod_name),
                patch={"metadata": {"labels": dict(labels)}},
                reason=f"{key}: pod labels {dict(labels)}",
            ))
        ud_ref = ObjectRef(group=UNITED_DEPLOYMENTS.group,
                           version=_version(ud, UNITED_DEPLOYMENTS.version),
                           resource=UNITED_DEPLOYMENTS.resource, namespace=node[2], name=node[3],
                           uid=str(metadata.get("uid") or ""))
        if answer.error is not None:
            log.warning("uniteddeployment not reconciled",
                        extra={"uniteddeployment": key, "reason": answer.error})
        # An empty answer never wipes a written status.
        status_patch = (merge_patch.diff(ud.get("status") or {}, answer.status)
                        if answer.status else {})
        if status_patch:
            out.append(Desired(verb="patch_status", target=ud_ref,
                               patch={"status": status_patch},
                               reason=f"status of {key} at generation "
                                      f"{metadata.get('generation')}",
                               precondition="resource_version", serial=True))
        if answer.rebalance_handled is not None:
            out.append(Desired(
                verb="patch", target=ud_ref,
                patch={"metadata": {"annotations": {HANDLED_ANNOTATION:
                                                    answer.rebalance_handled}}},
                reason=f"{key}: rebalance {answer.rebalance_handled} done",
            ))
        generation = as_int(metadata.get("generation")) or 0
        return [msgspec.structs.replace(want, governor=ud_ref, governor_generation=generation)
                for want in out]

    def _create(self, key: str, namespace: str, uid: str, subset: str,
                workload: Mapping[str, Any]) -> Desired:
        metadata = workload.get("metadata") or {}
        name = str(metadata.get("name") or "") or subset_workload_name(
            str(metadata.get("generateName") or ""), uid, subset)
        ref = _resource_of(workload)
        target = ObjectRef(group=ref.group, version=ref.version, resource=ref.resource,
                           namespace=str(metadata.get("namespace") or namespace), name=name)
        return Desired(verb="create", target=target, object=dict(workload),
                       reason=f"{key}: workload of subset {subset}")

    def _update(self, view: KubeProjection, key: str, subset: str,
                workload: Mapping[str, Any]) -> Desired | None:
        target = _ref_of(workload)
        if target is None:
            return None
        observed = self._observed(view, target)
        if observed is None:
            return None  # gone meanwhile: the next round creates it again
        patch = workload_patch(observed, workload)
        if not patch:
            return None
        return Desired(verb="patch", target=target, patch=patch,
                       reason=f"{key}: workload of subset {subset}",
                       precondition="resource_version")

    def _observed(self, view: KubeProjection, target: ObjectRef) -> dict[str, Any] | None:
        gk = next((gk for gk, ref in WORKLOADS.items()
                   if ref.group == target.group and ref.resource == target.resource), None)
        if gk is None:
            return None
        return self.index.decode(view, (gk[0], gk[1], target.namespace, target.name))

    def _revision(self, namespace: str, name: str) -> ObjectRef:
        return ObjectRef(group=CONTROLLER_REVISIONS.group, version=CONTROLLER_REVISIONS.version,
                         resource=CONTROLLER_REVISIONS.resource, namespace=namespace, name=name)


def workload_patch(observed: Mapping[str, Any], rendered: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch that makes ``observed`` what ``rendered`` says: its labels, annotations,
    owner references and spec; ``{}`` when it already is."""
    old_meta = observed.get("metadata") or {}
    new_meta = rendered.get("metadata") or {}
    old = {"metadata": {k: old_meta[k] for k in SYNCED_METADATA if k in old_meta},
           "spec": observed.get("spec") or {}}
    new = {"metadata": {k: new_meta[k] for k in SYNCED_METADATA if k in new_meta},
           "spec": rendered.get("spec") or {}}
    return merge_patch.diff(old, new)


def _version(obj: Mapping[str, Any], default: str) -> str:
    api_version = str(obj.get("apiVersion") or "")
    return api_version.rpartition("/")[2] if api_version else default


def _resource_of(workload: Mapping[str, Any]) -> ResourceRef:
    """The resource of a workload of one of the four kinds (its apiVersion names the group)."""
    gk = (api_group(str(workload.get("apiVersion") or "")), str(workload.get("kind") or ""))
    ref = WORKLOADS.get(gk)
    if ref is None:
        raise ValueError(f"apiVersion/kind: {gk} is not a subset workload kind")
    return ResourceRef(group=ref.group, version=_version(workload, ref.version),
                       resource=ref.resource)


def _ref_of(workload: Mapping[str, Any]) -> ObjectRef | None:
    metadata = workload.get("metadata") or {}
    name = metadata.get("name")
    if not name:
        return None
    ref = _resource_of(workload)
    return ObjectRef(group=ref.group, version=ref.version, resource=ref.resource,
                     namespace=str(metadata.get("namespace") or ""), name=str(name),
                     uid=str(metadata.get("uid") or ""))


__all__ = ["UD_KIND", "Reconcile", "Reconciliation", "UnitedDeploymentRule", "workload_patch"]
