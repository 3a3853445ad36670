"""Subsets in other clusters: ``spec.topology.clusterRegistry`` and
``spec.topology.subsets[].targetCluster``, as the multi-cluster design of UnitedDeployment
writes them (Kruise never shipped them).

``clusterRegistry`` says where the clusters a subset may target are registered: the Cluster
kind (``clusterType``, one of :data:`spreadbus.clusterregistry.registry.SERVED_KINDS`), its
namespaces (``default`` when none) and the labels every cluster must carry (``selector``). A
subset's ``targetCluster`` (``namespace``, ``name``) names one of them; the cluster object's
name is the member's name. A subset without one stays in the UnitedDeployment's own cluster.

Validation: a ``targetCluster`` without ``clusterRegistry``, a ``clusterType`` that is not
served, and a ``targetCluster`` the query does not find are each an error naming the field; so
is a subset without a ``targetCluster`` beside subsets with one when the UnitedDeployment's own
cluster is a control plane, which runs no workloads (:func:`control_plane_errors`; one naming
no cluster at all is a template there, for propagation). The
last is judged only when the registry is known: when the clusters given (the other objects of
an offline input, or the state the webhook reads) hold at least one object of the query's kind.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubesemantics.field_errors import FieldError, Path, forbidden, invalid, not_supported, required
from kubesemantics.label_selector import label_key_errors, label_value_errors
from kubesemantics.lenient_json import as_map, as_str
from kubesemantics.scheduling_validation import type_error
from spreadbus.clusterregistry.registry import (
    LOCAL,
    SERVED_KINDS,
    kind_of,
    read_query,
)

Obj = Mapping[str, Any]

TOPOLOGY = Path("spec").child("topology")
REGISTRY = TOPOLOGY.child("clusterRegistry")


def target_cluster(subset: Obj) -> str:
    """The cluster a subset's workload lives in: its target's name, else the UD's own."""
    return as_str(as_map(subset.get("targetCluster")).get("name")) or LOCAL


def _registry_errors(registry: Obj) -> list[FieldError]:
    errors: list[FieldError] = []
    namespaces = registry.get("namespaces")
    if namespaces is not None and not isinstance(namespaces, list):
        errors.append(type_error(REGISTRY.child("namespaces"), "array", namespaces))
    for i, namespace in enumerate(namespaces if isinstance(namespaces, list) else ()):
        if not isinstance(namespace, str):
            errors.append(type_error(REGISTRY.child("namespaces").index(i), "string", namespace))
    selector = registry.get("selector")
    if selector is not None and not isinstance(selector, Mapping):
        errors.append(type_error(REGISTRY.child("selector"), "object", selector))
    for key, value in (selector.items() if isinstance(selector, Mapping) else ()):
        path = REGISTRY.child("selector").index(str(key))
        if not isinstance(value, str):
            errors.append(type_error(path, "string", value))
            continue
        errors.extend(invalid(path, m, str(key)) for m in label_key_errors(str(key)))
        errors.extend(invalid(path, m, value) for m in label_value_errors(value))
    cluster_type = registry.get("clusterType")
    type_path = REGISTRY.child("clusterType")
    if cluster_type is None:
        errors.append(required(type_path, "the apiVersion and kind of the cluster objects"))
    elif not isinstance(cluster_type, Mapping):
        errors.append(type_error(type_path, "object", cluster_type))
    elif read_query(registry) is None:
        errors.append(not_supported(type_path, (k.describe() for k in SERVED_KINDS)))
    return errors


def _target_errors(target: object, path: Path) -> list[FieldError]:
    if not isinstance(target, Mapping):
        return [type_error(path, "object", target)]
    errors: list[FieldError] = []
    name = target.get("name")
    if name is not None and not isinstance(name, str):
        errors.append(type_error(path.child("name"), "string", name))
    elif not name:
        errors.append(required(path.child("name"), "the name of the target cluster"))
    namespace = target.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        errors.append(type_error(path.child("namespace"), "string", namespace))
    return errors


def is_template(spec: object) -> bool:
    """Whether no subset names a cluster: in a control plane, a resource template that a
    PropagationPolicy propagates whole (each member's UnitedDeployment places its share), not a
    UnitedDeployment the host places."""
    subsets = as_map(as_map(spec).get("topology")).get("subsets")
    return not any(isinstance(s, Mapping) and s.get("targetCluster") is not None
                   for s in (subsets if isinstance(subsets, list) else ()))


def control_plane_errors(spec: object) -> list[FieldError]:
    """In a control plane (a multi-cluster host, which runs no workloads), a UnitedDeployment
    that places subsets in clusters must name the cluster of every subset (a template, naming
    none, is not placed here: :func:`is_template`)."""
    if is_template(spec):
        return []
    subsets = as_map(as_map(spec).get("topology")).get("subsets")
    errors: list[FieldError] = []
    for i, subset in enumerate(subsets if isinstance(subsets, list) else ()):
        if isinstance(subset, Mapping) and subset.get("targetCluster") is None:
            errors.append(required(TOPOLOGY.child("subsets").index(i).child("targetCluster"),
                                   "this cluster is a control plane that runs no workloads: "
                                   "name the cluster the subset runs in"))
    return errors


def cluster_errors(spec: object, clusters: Iterable[Obj] | None = None) -> list[FieldError]:
    """Every error of the multi-cluster fields; ``clusters`` are the registry's objects as far as
    they are known (None: not known)."""
    topology = as_map(as_map(spec).get("topology"))
    registry = topology.get("clusterRegistry")
    errors: list[FieldError] = []
    if registry is not None and not isinstance(registry, Mapping):
        errors.append(type_error(REGISTRY, "object", registry))
    elif isinstance(registry, Mapping):
        errors.extend(_registry_errors(registry))
    query = read_query(registry) if isinstance(registry, Mapping) else None
    known: Sequence[Obj] = [c for c in clusters or () if query is not None and
                            kind_of(c) == query.kind]
    subsets = topology.get("subsets")
    for i, subset in enumerate(subsets if isinstance(subsets, list) else ()):
        target = as_map(subset).get("targetCluster") if isinstance(subset, Mapping) else None
        if target is None:
            continue
        path = TOPOLOGY.child("subsets").index(i).child("targetCluster")
        found = _target_errors(target, path)
        errors.extend(found)
        if registry is None:
            errors.append(forbidden(path, "a target cluster is found through "
                                          "spec.topology.clusterRegistry, which is not set"))
            continue
        if found or query is None or not known:
            continue
        assert isinstance(target, Mapping)
        if query.find(target, known) is None:
            name = as_str(target.get("name"))
            where = ("" if not query.kind.namespaced
                     else f" in namespace {query.target_namespace(target)}")
            errors.append(FieldError(
                str(path.child("name")), "NotFound",
                f"spec.topology.clusterRegistry finds no {query.kind.api_version} "
                f"{query.kind.kind} named {name}{where}", name))
    return errors
