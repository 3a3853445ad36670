"""Which observed workloads are a UnitedDeployment's subsets, and which pods each one runs.

A subset workload is found as Kruise finds it: its controller owner reference names the UD and it
carries the ``apps.kruise.io/subset-name`` label; everything else in the namespace is ignored. A
workload observed in another cluster (:mod:`.member_workloads`) is the UD's when it names the UD
by its identity labels and annotation instead. Only workloads of the template's kind are subsets.
The others are sorted out for deletion:

- a second workload of the same subset (the first by name is kept, as the API server lists them);
- a workload whose subset is no longer in ``spec.topology.subsets``;
- a workload of one of the other three kinds owned by the UD (the template kind was switched);
- a workload in another cluster than its subset's (the subset's ``targetCluster`` changed).

A workload no longer in spec still counts in the status of the round that deletes it (Kruise sums
over every subset it found). Pods belong to a workload through their controller owner reference;
a Deployment's pods through the ReplicaSets it owns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesemantics.group_version import api_group
from kubesemantics.lenient_json import as_map, as_str
from kubesemantics.owner_refs import controller_ref
from spreadbus.clusterregistry.registry import LOCAL
from spreadbus.features.uniteddeployment.core.member_workloads import (
    identity_of,
    in_member,
    observed_cluster,
    subset_cluster,
)
from spreadbus.features.uniteddeployment.core.model import KIND, UnitedDeployment

JSON = Mapping[str, Any]

SUBSET_NAME_LABEL = "apps.kruise.io/subset-name"


@dataclass(frozen=True)
class WorkloadKind:
    api_version: str
    kind: str

    @property
    def group(self) -> str:
        return api_group(self.api_version)

    def holds(self, obj: JSON) -> bool:
        return (
            as_str(obj.get("kind")) == self.kind
            and api_group(as_str(obj.get("apiVersion"))) == self.group
        )


STATEFUL_SET = WorkloadKind("apps/v1", "StatefulSet")
ADVANCED_STATEFUL_SET = WorkloadKind("apps.kruise.io/v1beta1", "StatefulSet")
CLONE_SET = WorkloadKind("apps.kruise.io/v1alpha1", "CloneSet")
DEPLOYMENT = WorkloadKind("apps/v1", "Deployment")
REPLICA_SET = WorkloadKind("apps/v1", "ReplicaSet")

KIND_OF_TEMPLATE: Mapping[str, WorkloadKind] = {
    "statefulSetTemplate": STATEFUL_SET,
    "advancedStatefulSetTemplate": ADVANCED_STATEFUL_SET,
    "cloneSetTemplate": CLONE_SET,
    "deploymentTemplate": DEPLOYMENT,
}


def template_key(ud: UnitedDeployment) -> str | None:
    """The template the UD uses: the first one given, in Kruise's order of the four."""
    kinds = ud.template_kinds
    return kinds[0] if kinds else None


def workload_kind(ud: UnitedDeployment) -> WorkloadKind | None:
    key = template_key(ud)
    return None if key is None else KIND_OF_TEMPLATE[key]


def name_of(obj: JSON) -> str:
    return as_str(as_map(obj.get("metadata")).get("name"))


def namespace_of(obj: JSON) -> str:
    return as_str(as_map(obj.get("metadata")).get("namespace")) or "default"


def labels_of(obj: JSON) -> Mapping[str, str]:
    labels = as_map(as_map(obj.get("metadata")).get("labels"))
    return {k: v for k, v in labels.items() if isinstance(v, str)}


def label_of(obj: JSON, key: str) -> str | None:
    """One label's value, None when absent or not a string."""
    value = as_map(as_map(obj.get("metadata")).get("labels")).get(key)
    return value if isinstance(value, str) else None


def controlled_by(obj: JSON, owner: JSON) -> bool:
    """``obj``'s controller reference names ``owner`` (by uid when both have one)."""
    ref = controller_ref(obj)
    if ref is None:
        return False
    owner_meta = as_map(owner.get("metadata"))
    uid, ref_uid = as_str(owner_meta.get("uid")), as_str(ref.get("uid"))
    if uid and ref_uid:
        return uid == ref_uid
    return (
        as_str(ref.get("kind")) == as_str(owner.get("kind"))
        and as_str(ref.get("name")) == as_str(owner_meta.get("name"))
        and api_group(as_str(ref.get("apiVersion"))) == api_group(as_str(owner.get("apiVersion")))
    )


def owned_by_ud(obj: JSON, ud: UnitedDeployment, home: str = LOCAL) -> bool:
    if in_member(obj, home):
        found = identity_of(obj)
        return (found is not None and found.namespace == ud.namespace
                and found.name == ud.name and (not ud.uid or found.uid == ud.uid))
    ref = controller_ref(obj)
    if ref is None or as_str(ref.get("kind")) != KIND:
        return False
    if ud.uid and as_str(ref.get("uid")):
        return as_str(ref.get("uid")) == ud.uid
    return as_str(ref.get("name")) == ud.name


@dataclass(frozen=True)
class Discovery:
    """The UD's subset workloads by subset name (spec or not), and the workloads to delete."""

    by_subset: dict[str, JSON] = field(default_factory=dict)
    duplicates: list[JSON] = field(default_factory=list)
    not_in_spec: list[JSON] = field(default_factory=list)
    other_kinds: list[JSON] = field(default_factory=list)
    misplaced: list[JSON] = field(default_factory=list)

    @property
    def deletes(self) -> list[JSON]:
        """Duplicates first (Kruise deletes them before allocating), then the provision's."""
        return [*self.duplicates, *self.not_in_spec, *self.other_kinds, *self.misplaced]

    def wanted(self, ud: UnitedDeployment) -> dict[str, JSON]:
        """The still-wanted workloads, in spec order."""
        return {s.name: self.by_subset[s.name] for s in ud.subsets if s.name in self.by_subset}


_ALL_KINDS = (STATEFUL_SET, ADVANCED_STATEFUL_SET, CLONE_SET, DEPLOYMENT)


def discover(ud: UnitedDeployment, workloads: Sequence[JSON], home: str = LOCAL) -> Discovery:
    """Sort the namespace's workloads into the UD's subsets and what it deletes; ``home`` is the
    UD's own cluster's name (a target naming it is no other cluster)."""
    kind = workload_kind(ud)
    mine = sorted(
        (
            w
            for w in workloads
            if namespace_of(w) == ud.namespace
            and any(k.holds(w) for k in _ALL_KINDS)
            and owned_by_ud(w, ud, home)
        ),
        key=name_of,
    )
    found = Discovery()
    spec_names = {s.name for s in ud.subsets}
    where = {s.name: subset_cluster(s.target, home) for s in ud.subsets}
    for workload in mine:
        if kind is None or not kind.holds(workload):
            found.other_kinds.append(workload)
            continue
        subset = label_of(workload, SUBSET_NAME_LABEL)
        if subset is None:
            continue
        if subset in where and observed_cluster(workload, home) != where[subset]:
            found.misplaced.append(workload)
            continue
        if subset in found.by_subset:
            found.duplicates.append(workload)
            continue
        found.by_subset[subset] = workload
        if subset not in spec_names:
            found.not_in_spec.append(workload)
    return found


Owners = dict[tuple[str, str], list[tuple[JSON, str]]]
"""(kind, name) -> the objects that directly control a subset's pods, with their subset."""


def subset_owners(
    ud: UnitedDeployment, subsets: Mapping[str, JSON], workloads: Sequence[JSON]
) -> Owners:
    """The direct owners of each subset's pods: the workload, or a Deployment's ReplicaSets."""
    owners: Owners = {}
    deployments = {name_of(w): s for s, w in subsets.items() if DEPLOYMENT.holds(w)}
    for subset, workload in subsets.items():
        if not DEPLOYMENT.holds(workload):
            owners.setdefault((as_str(workload.get("kind")), name_of(workload)), []).append(
                (workload, subset)
            )
    for rs in workloads:
        if not REPLICA_SET.holds(rs) or namespace_of(rs) != ud.namespace:
            continue
        ref = controller_ref(rs)
        owning = deployments.get(as_str(ref.get("name"))) if ref is not None else None
        if owning is not None and controlled_by(rs, subsets[owning]):
            owners.setdefault((REPLICA_SET.kind, name_of(rs)), []).append((rs, owning))
    return owners


def subset_of(ud: UnitedDeployment, owners: Owners, pod: JSON) -> str | None:
    """The subset whose workload controls ``pod``, if any."""
    ref = controller_ref(pod)
    if ref is None or namespace_of(pod) != ud.namespace:
        return None
    for owner, subset in owners.get((as_str(ref.get("kind")), as_str(ref.get("name"))), []):
        if controlled_by(pod, owner):
            return subset
    return None


def pods_by_subset(
    ud: UnitedDeployment,
    subsets: Mapping[str, JSON],
    workloads: Sequence[JSON],
    pods: Sequence[JSON],
) -> dict[str, list[JSON]]:
    """Each subset workload's pods (by name), a Deployment's through its ReplicaSets.

    Owners are indexed by kind and name, so the cost follows the number of pods.
    """
    owners = subset_owners(ud, subsets, workloads)
    found: dict[str, list[JSON]] = {subset: [] for subset in subsets}
    for pod in pods:
        subset = subset_of(ud, owners, pod)
        if subset is not None:
            found[subset].append(pod)
    return {subset: sorted(found[subset], key=name_of) for subset in subsets}
