"""What a resource template asks of the scheduler, and the copy a member cluster receives.

As Karmada's default interpreter (``pkg/resourceinterpreter/default/native``) and its third-party
customizations for OpenKruise (``.../thirdparty/resourcecustomizations/apps.kruise.io``):
Deployments, StatefulSets, ReplicaSets, CloneSets, Advanced StatefulSets and UnitedDeployments
have ``spec.replicas`` (1 when unset, as their API servers default it) and the pod template's
request; a Job has its ``parallelism``, at most its ``completions``; a Pod is one replica.
Every other kind is not a workload: it has no replicas and every target cluster receives it
whole. A UnitedDeployment's request is read where Karmada's
customization reads it, ``spec.template.spec``, which a UnitedDeployment does not have, so it
requests nothing.

The member's copy is the template with its share of replicas, without what the host's API
server owns (``uid``, ``resourceVersion``, ``generation``, ``creationTimestamp``,
``managedFields``, owner references, finalizers, ``status``), carrying the binding it comes from.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from kubesemantics.karmada_binding import MEMBER_ANNOTATION
from kubesemantics.lenient_json import as_int, as_map, as_str
from spreadbus.features.propagation.core.estimator import replica_request

JSON = dict[str, Any]

_REPLICATED: Final = frozenset({
    ("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "ReplicaSet"),
    ("apps.kruise.io", "CloneSet"), ("apps.kruise.io", "StatefulSet"),
    ("apps.kruise.io", "UnitedDeployment"),
})
_JOB: Final = ("batch", "Job")
_POD: Final = ("", "Pod")

CLUSTER_ANNOTATION: Final = MEMBER_ANNOTATION
"""The member cluster an object belongs to (``spreadbus plan`` reads objects so marked as that
member's)."""
BINDING_NAME_ANNOTATION: Final = "resourcebinding.karmada.io/name"
BINDING_NAMESPACE_ANNOTATION: Final = "resourcebinding.karmada.io/namespace"
_HOST_OWNED: Final = ("uid", "resourceVersion", "generation", "creationTimestamp",
                      "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields",
                      "ownerReferences", "finalizers", "selfLink")


def _group_kind(obj: Mapping[str, Any]) -> tuple[str, str]:
    api_version = as_str(obj.get("apiVersion"))
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    return group, as_str(obj.get("kind"))


def replicas_of(obj: Mapping[str, Any]) -> int:
    """The template's replicas (0 for what is not a workload)."""
    spec = as_map(obj.get("spec"))
    kind = _group_kind(obj)
    if kind in _REPLICATED:
        value = as_int(spec.get("replicas"))
        return 1 if value is None else max(value, 0)
    if kind == _JOB:
        value = as_int(spec.get("parallelism"))
        parallel = 1 if value is None else max(value, 0)
        completions = as_int(spec.get("completions"))
        return parallel if completions is None else min(parallel, max(completions, 0))
    if kind == _POD:
        return 1
    return 0


def request_of(obj: Mapping[str, Any]) -> dict[str, int]:
    """One replica's resource request (see :mod:`.estimator`); empty for a non-workload."""
    pod = _pod_spec(obj)
    return replica_request(pod) if pod else {}


def _pod_spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    kind = _group_kind(obj)
    spec = as_map(obj.get("spec"))
    if kind == _POD:
        return spec
    if kind in _REPLICATED or kind == _JOB:
        return as_map(as_map(spec.get("template")).get("spec"))
    return {}


def has_requirements(obj: Mapping[str, Any]) -> bool:
    """Whether Karmada's binding has ``replicaRequirements``: the pod template requests
    resources, or claims nodes (a node selector, a required node affinity, tolerations)."""
    pod = _pod_spec(obj)
    affinity = as_map(as_map(pod.get("affinity")).get("nodeAffinity"))
    return bool(request_of(obj) or pod.get("nodeSelector") or pod.get("tolerations")
                or affinity.get("requiredDuringSchedulingIgnoredDuringExecution") is not None)


def is_workload(obj: Mapping[str, Any]) -> bool:
    """Karmada's ``IsWorkload``: replicas, or replica requirements."""
    return replicas_of(obj) > 0 or has_requirements(obj)


def has_replicas(obj: Mapping[str, Any]) -> bool:
    return _group_kind(obj) in _REPLICATED or _group_kind(obj) == _JOB


def work(template: Mapping[str, Any], cluster: str, replicas: int, binding: str,
         binding_namespace: str) -> JSON:
    """The object the member cluster gets for ``template`` with ``replicas`` of it."""
    out: JSON = copy.deepcopy(dict(template))
    out.pop("status", None)
    metadata = dict(as_map(out.get("metadata")))
    for key in _HOST_OWNED:
        metadata.pop(key, None)
    annotations = {k: v for k, v in as_map(metadata.get("annotations")).items()
                   if k != "kubectl.kubernetes.io/last-applied-configuration"}
    annotations[CLUSTER_ANNOTATION] = cluster
    annotations[BINDING_NAME_ANNOTATION] = binding
    if binding_namespace:
        annotations[BINDING_NAMESPACE_ANNOTATION] = binding_namespace
    metadata["annotations"] = annotations
    out["metadata"] = metadata
    if has_replicas(template):
        spec = dict(as_map(out.get("spec")))
        spec["parallelism" if _group_kind(template) == _JOB else "replicas"] = replicas
        out["spec"] = spec
    return out
