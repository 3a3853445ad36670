"""Which workload owns a pod, and which pods and replicas a budget's target stands for.

Kruise's controller finder, over plain objects: a workload is found by namespace, API group
(the version never matters), kind and name; an owner reference names it by uid when both sides
carry one, else by group, kind and name. A ReplicaSet controlled by a Deployment stands for the
Deployment; a subset workload controlled by a UnitedDeployment stands for it too where a budget
names the UnitedDeployment.

Replicas: ``spec.replicas`` (absent reads as 1, the API server's default for the built-in
kinds); a workload being deleted, or not found, has no pods and 0 replicas; a kind whose
``spec.replicas`` is not a number has -1 ("unknown", as Kruise's finder answers for a custom
kind without a scale subresource). A custom kind's pods are those it owns, or, when it owns
none, those its scale selector picks (a Deployment-like kind that does not own its pods).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from kubesemantics.group_version import api_group
from kubesemantics.label_selector import Selector, SelectorError, from_label_selector, parse
from kubesemantics.lenient_json import as_int, as_map, as_str
from kubesemantics.owner_refs import controller_ref, owner_references
from kubesemantics.pod_status import deleting

JSON = Mapping[str, Any]

UNITED_DEPLOYMENT = ("apps.kruise.io", "UnitedDeployment")
_DEFAULTED_REPLICAS = {
    ("apps", "Deployment"),
    ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"),
    ("apps.kruise.io", "StatefulSet"),
    ("apps.kruise.io", "CloneSet"),
    ("", "ReplicationController"),
    UNITED_DEPLOYMENT,
}


class WorkloadId(msgspec.Struct, frozen=True):
    group: str
    kind: str
    name: str


def meta(obj: JSON) -> Mapping[str, Any]:
    return as_map(obj.get("metadata"))


def namespace_of(obj: JSON) -> str:
    return as_str(meta(obj).get("namespace")) or "default"


def identity(obj: JSON) -> WorkloadId:
    return WorkloadId(
        api_group(as_str(obj.get("apiVersion"))), as_str(obj.get("kind")),
        as_str(meta(obj).get("name")),
    )


def ref_identity(ref: Mapping[str, Any]) -> WorkloadId:
    return WorkloadId(api_group(as_str(ref.get("apiVersion"))), as_str(ref.get("kind")),
                      as_str(ref.get("name")))


def refers_to(ref: Mapping[str, Any], obj: JSON) -> bool:
    """An owner reference names the object: by uid when both carry one, else by identity."""
    uid, obj_uid = as_str(ref.get("uid")), as_str(meta(obj).get("uid"))
    if uid and obj_uid:
        return uid == obj_uid
    return ref_identity(ref) == identity(obj)


def owned_by(obj: JSON, owner: JSON) -> bool:
    return any(refers_to(r, owner) for r in owner_references(obj))


class Workloads:
    """The workloads of an input, looked up as the controller finder does."""

    def __init__(self, objects: Iterable[JSON]) -> None:
        self._by_key: dict[tuple[str, WorkloadId], JSON] = {}
        self._replicasets: dict[str, list[JSON]] = {}
        for obj in objects:
            if not isinstance(meta(obj).get("name"), str) or obj.get("kind") == "Pod":
                continue
            self._by_key.setdefault((namespace_of(obj), identity(obj)), obj)
            if identity(obj).kind == "ReplicaSet":
                self._replicasets.setdefault(namespace_of(obj), []).append(obj)

    def find(self, namespace: str, workload: WorkloadId) -> JSON | None:
        return self._by_key.get((namespace, workload))

    def find_ref(self, namespace: str, ref: Mapping[str, Any]) -> JSON | None:
        found = self.find(namespace, ref_identity(ref))
        return found if found is not None and refers_to(ref, found) else None

    def replicasets_of(self, deployment: JSON) -> list[JSON]:
        return [
            rs for rs in self._replicasets.get(namespace_of(deployment), [])
            if not deleting(rs)
            and (ref := controller_ref(rs)) is not None
            and refers_to(ref, deployment)
        ]

    def pod_workload(self, pod: JSON) -> WorkloadId | None:
        """The workload a pod's controller reference stands for (a ReplicaSet's Deployment).

        A ReplicaSet missing from the input is read from its name and the pod's
        ``pod-template-hash`` label, as a Deployment names its ReplicaSets."""
        ref = controller_ref(pod)
        if ref is None:
            return None
        owner = ref_identity(ref)
        if owner != WorkloadId("apps", "ReplicaSet", owner.name):
            return owner
        rs = self.find_ref(namespace_of(pod), ref)
        if rs is not None:
            rs_owner = controller_ref(rs)
            if rs_owner is not None and ref_identity(rs_owner).kind == "Deployment":
                return ref_identity(rs_owner)
            return owner
        template_hash = as_str(as_map(meta(pod).get("labels")).get("pod-template-hash"))
        suffix = f"-{template_hash}"
        if template_hash and owner.name.endswith(suffix) and len(owner.name) > len(suffix):
            return WorkloadId("apps", "Deployment", owner.name[: -len(suffix)])
        return owner

    def unlisted_rs_of(self, pod: JSON) -> WorkloadId | None:
        """The Deployment of a pod whose ReplicaSet is not in the input, read from names."""
        ref = controller_ref(pod)
        if ref is None or ref_identity(ref).kind != "ReplicaSet":
            return None
        if self.find_ref(namespace_of(pod), ref) is not None:
            return None
        workload = self.pod_workload(pod)
        return workload if workload is not None and workload.kind == "Deployment" else None

    def governing(self, namespace: str, workload: WorkloadId) -> WorkloadId | None:
        """The UnitedDeployment controlling a workload, if any."""
        obj = self.find(namespace, workload)
        ref = controller_ref(obj) if obj is not None else None
        if ref is None:
            return None
        owner = ref_identity(ref)
        return owner if (owner.group, owner.kind) == UNITED_DEPLOYMENT else None


def replicas(workload: JSON) -> int:
    value = as_map(workload.get("spec")).get("replicas")
    number = as_int(value)
    if number is not None:
        return number
    ident = identity(workload)
    if value is None and (ident.group, ident.kind) in _DEFAULTED_REPLICAS:
        return 1
    return -1


def _owned(pods: Sequence[JSON], owners: Sequence[JSON]) -> list[JSON]:
    return [p for p in pods if any(owned_by(p, o) for o in owners)]


def pods_for_workload(
    workload: JSON, pods: Sequence[JSON], workloads: Workloads
) -> tuple[list[JSON], int]:
    """The pods of a workload (not filtered for activity) and its replicas."""
    if deleting(workload):
        return [], 0
    count = replicas(workload)
    if count == 0:
        return [], 0
    ident = identity(workload)
    namespace = namespace_of(workload)
    same_namespace = [p for p in pods if namespace_of(p) == namespace]
    if (ident.group, ident.kind) == ("apps", "Deployment"):
        replicasets = workloads.replicasets_of(workload)
        owners: list[JSON] = replicasets or [workload]
        return [
            p for p in same_namespace
            if any(owned_by(p, o) for o in owners) or workloads.unlisted_rs_of(p) == ident
        ], count
    if (ident.group, ident.kind) == UNITED_DEPLOYMENT:
        return [
            p for p in same_namespace
            if (w := workloads.pod_workload(p)) is not None
            and workloads.governing(namespace, w) == ident
        ], count
    owned = _owned(same_namespace, [workload])
    if owned or (ident.group, ident.kind) in _DEFAULTED_REPLICAS:
        return owned, count
    selector = scale_selector(workload)
    return [p for p in same_namespace if selector is not None and selector.matches(
        {str(k): v for k, v in as_map(meta(p).get("labels")).items() if isinstance(v, str)}
    )], count


def scale_selector(workload: JSON) -> Selector | None:
    """The selector a custom kind's scale subresource would report: ``status.selector`` (the
    string form) or ``spec.selector``; None when neither reads."""
    try:
        text = as_map(workload.get("status")).get("selector")
        if isinstance(text, str) and text:
            return parse(text)
        spec_selector = as_map(workload.get("spec")).get("selector")
        if isinstance(spec_selector, Mapping) and spec_selector:
            return from_label_selector(spec_selector)
    except SelectorError:
        return None
    return None


def expected_for_pods(pods: Sequence[JSON], workloads: Workloads) -> int:
    """The replicas of every distinct workload controlling the pods, summed once each (two
    ReplicaSets of one Deployment count once); pods without a found workload add nothing."""
    seen: dict[tuple[str, WorkloadId], int] = {}
    for pod in pods:
        workload_id = workloads.pod_workload(pod)
        if workload_id is None:
            continue
        key = (namespace_of(pod), workload_id)
        if key in seen:
            continue
        workload = workloads.find(*key)
        if workload is None or deleting(workload):
            continue
        seen[key] = replicas(workload)
    return sum(seen.values())
