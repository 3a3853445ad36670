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

Subsets in other clusters. The planner runs one rule per cluster (:class:`~spreadbus.projection.
cluster_rules.EveryCluster`); the rules of one planner share a :class:`Fleet`. A UD's rule reads
its subsets' workloads in other clusters from those clusters' rules (each keeps its cluster's
workloads that name a UD elsewhere, :mod:`.member_index`, and follows their pods), hands them to
the reconcile marked with their cluster, and plans their writes for that cluster
(``Desired.cluster``). A change to such a workload or its pods reconciles the UD it names, in the
UD's cluster's rule. The cluster registry's objects of the UD's cluster say which targets take
pods. A UD with a subset in another cluster carries the finalizer :data:`MEMBER_FINALIZER`: once
it is being deleted, its workloads in other clusters (which no garbage collector reaches) are
deleted and then the finalizer is removed. A workload in another cluster naming a UD that is gone,
or a UD of another uid, is deleted. Writes to a cluster whose objects are not listed yet wait
until they are.

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
from kubesemantics.lenient_json import as_int, as_map, as_str
from spreadbus.clusterregistry.registry import CLUSTER_ANNOTATION, LOCAL, SERVED_KINDS
from spreadbus.features.uniteddeployment.core.member_workloads import (
    IDENTITY_ANNOTATION,
    Identity,
    identity_of,
    observed_in,
    subset_cluster,
)
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
from spreadbus.features.uniteddeployment.planning.member_index import (
    MemberIndex,
    UdName,
    ud_name,
)
from spreadbus.features.uniteddeployment.planning.workload_names import subset_workload_name
from spreadbus.projection.governor_pacing import GovernorPacing, PacedRule
from spreadbus.projection.kube_state import KubeProjection, object_key, resource_key
from spreadbus.projection.planning import Desired

log = logging.getLogger(__name__)

Key = tuple[str, str]
RETRY_SECONDS: Final = 5.0
"""How soon a UnitedDeployment whose reconcile raised is tried again."""
WAITING_SECONDS: Final = 5.0
"""How often a UnitedDeployment with a subset in a cluster not listed yet is looked at again."""
HANDLED_ANNOTATION: Final = "rebalance.spreadbus.io/handled"
SYNCED_METADATA: Final = ("labels", "annotations", "ownerReferences")
"""The metadata a subset workload's update writes; the rest belongs to the API server."""
_IDENTITY_BYTES: Final = IDENTITY_ANNOTATION.encode()
MEMBER_FINALIZER: Final = "uniteddeployment.spreadbus.io/member-workloads"
"""Holds a UD's deletion until its subset workloads in other clusters are gone."""


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
                 revisions: Sequence[Mapping[str, Any]], now: datetime,
                 home: str | None = None,
                 clusters: Sequence[Mapping[str, Any]] | None = None,
                 control_plane: bool = False) -> Reconciliation: ...


class Fleet:
    """The rules of one planner, one per cluster: how a UD's rule reaches its subsets in other
    clusters and a member's change reaches the UD it concerns."""

    def __init__(self) -> None:
        self.rules: dict[str, UnitedDeploymentRule] = {}
        self.waiting: dict[str, set[UdName]] = {}
        """Cluster not listed yet -> the UDs with a subset waiting for it."""

    def started(self, cluster: str) -> UnitedDeploymentRule | None:
        """The rule of ``cluster`` once its objects are listed and offered to it."""
        rule = self.rules.get(cluster)
        return rule if rule is not None and rule.started else None

    def member_workloads(self, ud: UdName) -> list[tuple[UnitedDeploymentRule, Node]]:
        """Every workload of any other cluster naming the UD, with its cluster's rule."""
        return [(rule, node) for cluster, rule in sorted(self.rules.items())
                if cluster != ud[0] for node in sorted(rule.members.workloads(ud))]


class UnitedDeploymentRule(PacedRule):
    name: str = "uniteddeployment"

    def __init__(self, cluster: str, *, reconcile: Reconcile,
                 min_interval_seconds: float = 0.25, fleet: Fleet | None = None,
                 control_plane: bool = False) -> None:
        self.cluster = cluster
        self.control_plane = control_plane
        """This cluster runs no workloads (the host, whose rule alone is told so)."""
        self.reconcile = reconcile
        self.fleet = fleet if fleet is not None else Fleet()
        self.fleet.rules[cluster] = self
        self.members = MemberIndex()
        """This cluster's workloads naming a UD in another cluster."""
        self.started = False
        self._with_targets: set[str] = set()
        """UDs of this cluster with a subset in another cluster: a Cluster's change concerns
        them."""
        self._registry_rkeys = frozenset(resource_key(cluster, k.group, k.plural)
                                         for k in SERVED_KINDS)
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
        elsewhere: set[UdName] = set()
        if not self.started:
            self.started = True
            elsewhere |= self.fleet.waiting.pop(self.cluster, set())
        for rkey, okey in changed:
            if rkey in self._registry_rkeys:
                affected |= self._with_targets
                continue
            if rkey == index.rk_uds:
                affected.add(okey)
            before, after = index.index(view, rkey, okey)
            affected |= before | after
            if rkey == index.rk_pods:
                self._pod_changed(view, rkey, okey, after)
            elif index.relinked:
                # A workload or ReplicaSet came, went or moved: its pods move with it.
                self._follow_below(view, rkey, okey, changed)
            if rkey in index.rkeys and rkey != index.rk_uds:
                elsewhere |= self._member_changed(view, rkey, okey, changed)
        out = self._paced(view, affected, now)
        for cluster, namespace, name in sorted(elsewhere):
            rule = self.fleet.started(cluster)
            if rule is not None:
                out.extend(rule._paced(view, {object_key(namespace, name)}, now))
        return out

    def _paced(self, view: KubeProjection, affected: set[str], now: float) -> list[Desired]:
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
        node = index.node(index.rk_uds, okey)
        assert node is not None
        elsewhere = self.fleet.member_workloads((self.cluster, node[2], node[3]))
        metadata = as_map(ud.get("metadata")) if ud is not None else {}
        if ud is None or pod_status.deleting_truthy(ud):
            self._schedule(okey, None)
            self._with_targets.discard(okey)
            if ud is None:
                self.pacing.forget(okey)
                return self._orphans(view, elsewhere, None, f"{node[2]}/{node[3]}")
            return self._finalize(view, ud, node, elsewhere)
        uid = as_str(metadata.get("uid"))
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
        for rule, member in elsewhere:
            obj = rule.index.decode(view, member)
            identity = identity_of(obj) if obj is not None else None
            if obj is None or identity is None or identity.uid != uid:
                continue
            workloads.append(observed_in(obj, rule.cluster))
            pod_groups.update(rule.pods.owned_by(member))
            for below in sorted(rule.index.family(member)):
                found = rule.index.decode(view, below)
                if found is not None:
                    workloads.append(observed_in(found, rule.cluster))
                    pod_groups.update(rule.pods.owned_by(below))
        targets = self._targets(ud)
        if targets:
            self._with_targets.add(okey)
        else:
            self._with_targets.discard(okey)
        waiting = False
        for target in targets:
            if self.fleet.started(target) is None:
                waiting = True
                self.fleet.waiting.setdefault(target, set()).add(
                    (self.cluster, node[2], node[3]))
        answer = self.reconcile(ud, workloads=workloads, pod_groups=pod_groups,
                                revisions=revisions, now=datetime.fromtimestamp(now, UTC),
                                home=self.cluster, clusters=self._registry(view),
                                control_plane=self.control_plane)
        requeue = answer.requeue_at
        wake = requeue.timestamp() if requeue is not None else None
        if waiting:
            # A round also makes the rule of a cluster listed since, which holds no object to
            # change: looking again now and then is what starts a quiet cluster's rule.
            wake = min(wake or now + WAITING_SECONDS, now + WAITING_SECONDS)
        self._schedule(okey, wake)
        out = self._orphans(view, elsewhere, uid, f"{node[2]}/{node[3]}")
        finalizers = metadata.get("finalizers")
        held = isinstance(finalizers, list) and MEMBER_FINALIZER in finalizers
        if targets and not held:
            listed = list(finalizers) if isinstance(finalizers, list) else []
            ud_ref = self._ud_ref(ud, node)
            out.append(Desired(
                verb="patch", target=ud_ref, governor=ud_ref, cluster=self.cluster,
                governor_generation=as_int(metadata.get("generation")) or 0,
                patch={"metadata": {"finalizers": [*listed, MEMBER_FINALIZER]}},
                reason=f"{node[2]}/{node[3]}: its subset workloads in other clusters are "
                       "deleted before it", precondition="resource_version"))
        out.extend(self.writes(view, ud, node, answer))
        return out

    def _targets(self, ud: Mapping[str, Any]) -> set[str]:
        """The other clusters the UD's subsets name."""
        subsets = as_map(as_map(ud.get("spec")).get("topology")).get("subsets")
        return {subset_cluster(as_str(as_map(as_map(s).get("targetCluster")).get("name")),
                               self.cluster)
                for s in (subsets if isinstance(subsets, list) else ())} - {LOCAL}

    def _registry(self, view: KubeProjection) -> list[dict[str, Any]]:
        """The cluster registry's objects in this cluster (both served kinds)."""
        out: list[dict[str, Any]] = []
        for rkey in sorted(self._registry_rkeys):
            for okey in sorted(view.state.objects.get(rkey, {})):
                obj = view.decoded(rkey, okey)
                if obj is not None:
                    out.append(obj)
        return out

    def _orphans(self, view: KubeProjection, elsewhere: list[tuple[UnitedDeploymentRule, Node]],
                 uid: str | None, key: str) -> list[Desired]:
        """Deletes of the workloads elsewhere naming this UD under another uid (``uid``: the
        UD's; None: the UD is gone)."""
        out: list[Desired] = []
        for rule, member in elsewhere:
            obj = rule.index.decode(view, member)
            identity = identity_of(obj) if obj is not None else None
            if obj is None or identity is None or identity.uid == uid:
                continue
            ref = _ref_of(obj)
            if ref is not None:
                out.append(Desired(verb="delete", target=ref, cluster=rule.cluster,
                                   governor=_member_governor(identity),
                                   governor_cluster=self.cluster,
                                   reason=f"{key}: its UnitedDeployment {identity.uid} is gone"))
        return out

    def _finalize(self, view: KubeProjection, ud: Mapping[str, Any], node: Node,
                  elsewhere: list[tuple[UnitedDeploymentRule, Node]]) -> list[Desired]:
        """A UD being deleted: its workloads elsewhere deleted, then its finalizer removed."""
        metadata = as_map(ud.get("metadata"))
        finalizers = metadata.get("finalizers")
        if not isinstance(finalizers, list) or MEMBER_FINALIZER not in finalizers:
            return []
        key = f"{node[2]}/{node[3]}"
        ud_ref = self._ud_ref(ud, node)
        generation = as_int(metadata.get("generation")) or 0
        out: list[Desired] = []
        for rule, member in elsewhere:
            obj = rule.index.decode(view, member)
            ref = _ref_of(obj) if obj is not None else None
            if ref is not None:
                out.append(Desired(verb="delete", target=ref, cluster=rule.cluster,
                                   governor=ud_ref, governor_generation=generation,
                                   governor_cluster=self.cluster,
                                   reason=f"{key}: being deleted"))
        if out:
            return out
        return [Desired(verb="patch", target=ud_ref, cluster=self.cluster,
                        patch={"metadata": {"finalizers": [
                            f for f in finalizers if f != MEMBER_FINALIZER]}},
                        governor=ud_ref, governor_generation=generation,
                        reason=f"{key}: its subset workloads in other clusters are gone",
                        precondition="resource_version")]

    def _ud_ref(self, ud: Mapping[str, Any], node: Node) -> ObjectRef:
        return ObjectRef(group=UNITED_DEPLOYMENTS.group,
                         version=_version(ud, UNITED_DEPLOYMENTS.version),
                         resource=UNITED_DEPLOYMENTS.resource, namespace=node[2], name=node[3],
                         uid=as_str(as_map(ud.get("metadata")).get("uid")))

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

    def _member_changed(self, view: KubeProjection, rkey: str, okey: str,
                        changed: Set[Key]) -> set[UdName]:
        """Keep this cluster's workloads naming a UD elsewhere and their pods followed; the UDs
        elsewhere the change concerns."""
        index = self.index
        key = (rkey, okey)
        node = index.node(rkey, okey)
        concerned: set[UdName] = set()
        if node is not None and (node[0], node[1]) in WORKLOADS:
            stored = view.stored(rkey, okey)
            # Only a workload carrying the annotation is decoded for it.
            marked = stored is not None and _IDENTITY_BYTES in stored.raw
            obj = view.decoded(rkey, okey) if marked else None
            identity = identity_of(obj) if obj is not None else None
            if identity is not None and identity.cluster == self.cluster:
                identity = None
            before, after = self.members.put(node, identity)
            concerned |= {ud_name(i) for i in (before, after) if i is not None}
            if before != after:
                for pod in index.pods_below(node):
                    if pod not in changed:
                        self._follow_member_pod(view, pod)
            return concerned
        if not self.members:
            return concerned  # no workload here names a UD elsewhere: no pod can be under one
        was, now_top = index.workload_of(key)
        for top in (was, now_top):
            identity = self.members.identity(top) if top is not None else None
            if identity is not None:
                concerned.add(ud_name(identity))
        if rkey == index.rk_pods:
            self._follow_member_pod(view, key)
        elif index.relinked and now_top is not None:
            for pod in index.pods_below(now_top):
                if pod not in changed:
                    self._follow_member_pod(view, pod)
        return concerned

    def _follow_member_pod(self, view: KubeProjection, key: Key) -> None:
        """Follow a pod under a workload naming a UD elsewhere (a pod under a UD of this cluster
        is followed by :meth:`_pod_changed`)."""
        if self.index.pod_under_ud(key):
            return
        _, top = self.index.workload_of(key)
        stored = view.stored(*key)
        if top is None or self.members.identity(top) is None or stored is None:
            if key[1] in self.pods:
                self.pods.put(key[1], None)
            return
        self.pods.put(key[1], facts_from_json(stored.raw))

    def writes(self, view: KubeProjection, ud: Mapping[str, Any], node: Node,
               answer: Reconciliation) -> list[Desired]:
        """Desired writes of one reconcile; ``ud`` is the UnitedDeployment it was made for."""
        metadata = ud.get("metadata") or {}
        key = f"{node[2]}/{node[3]}"
        out: list[Desired] = []
        where = {name: subset_cluster(target, self.cluster)
                 for name, target in _subset_targets(ud).items()}
        for subset, decision in answer.subsets.items():
            cluster = where.get(subset, LOCAL)
            rule = self if cluster == LOCAL else self.fleet.started(cluster)
            if rule is None:
                continue  # its cluster is not listed yet: decided once it is
            want: Desired | None = None
            if decision.action == "create":
                want = self._create(key, node[2], str(metadata.get("uid") or ""), subset,
                                    decision.workload)
            elif decision.action == "update":
                want = rule._update(view, key, subset, decision.workload)
            if want is not None:
                out.append(msgspec.structs.replace(want, cluster=rule.cluster))
        for workload in answer.deletes:
            ref = _ref_of(workload)
            annotations = as_map(as_map(workload.get("metadata")).get("annotations"))
            cluster = as_str(annotations.get(CLUSTER_ANNOTATION)) or self.cluster
            if ref is not None and self.fleet.started(cluster) is not None:
                out.append(Desired(verb="delete", target=ref, cluster=cluster,
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
        elsewhere = sorted({c for c in where.values() if c != LOCAL})
        for pod_key, labels in sorted(answer.pod_labels.items()):
            pod_namespace, _, pod_name = pod_key.partition("/")
            out.append(Desired(
                verb="patch",
                target=ObjectRef(group=PODS.group, version=PODS.version, resource=PODS.resource,
                                 namespace=pod_namespace, name=pod_name),
                patch={"metadata": {"labels": dict(labels)}},
                reason=f"{key}: pod labels {dict(labels)}",
                cluster=self._pod_cluster(view, elsewhere, pod_namespace, pod_name),
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
        return [msgspec.structs.replace(want, governor=ud_ref, governor_generation=generation,
                                        cluster=want.cluster or self.cluster,
                                        governor_cluster=self._elsewhere(want.cluster))
                for want in out]

    def _pod_cluster(self, view: KubeProjection, clusters: Sequence[str], namespace: str,
                     name: str) -> str:
        """The cluster holding a pod of the UD: this one, or one its subsets target."""
        okey = object_key(namespace, name)
        if view.stored(self.index.rk_pods, okey) is not None:
            return self.cluster
        for cluster in clusters:
            if view.stored(resource_key(cluster, PODS.group, PODS.resource), okey) is not None:
                return cluster
        return self.cluster

    def _elsewhere(self, cluster: str) -> str:
        """The governor's cluster for a write to ``cluster``: this one, when it is another."""
        return self.cluster if cluster and cluster != self.cluster else ""

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


def _subset_targets(ud: Mapping[str, Any]) -> dict[str, str]:
    subsets = as_map(as_map(ud.get("spec")).get("topology")).get("subsets")
    return {as_str(as_map(s).get("name")):
            as_str(as_map(as_map(s).get("targetCluster")).get("name"))
            for s in (subsets if isinstance(subsets, list) else ())}


def _member_governor(identity: Identity) -> ObjectRef:
    """The UD a workload elsewhere names, as the governor of its deletion."""
    return ObjectRef(group=UNITED_DEPLOYMENTS.group, version=UNITED_DEPLOYMENTS.version,
                     resource=UNITED_DEPLOYMENTS.resource, namespace=identity.namespace,
                     name=identity.name, uid=identity.uid)


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
