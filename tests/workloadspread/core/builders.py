"""Small builders for WorkloadSpread, workload, pod and node objects used across the core tests."""

from __future__ import annotations

import copy
from typing import Any

JSON = dict[str, Any]


def zone_term(zone: str) -> JSON:
    return {
        "matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}
        ]
    }


def subset(name: str, max_replicas: int | str | None = None, **extra: Any) -> JSON:
    out: JSON = {"name": name, "requiredNodeSelectorTerm": zone_term(name)}
    if max_replicas is not None:
        out["maxReplicas"] = max_replicas
    out.update(extra)
    return out


def workloadspread(
    *subsets: JSON,
    name: str = "ws",
    namespace: str = "default",
    kind: str = "Deployment",
    api_version: str = "apps/v1",
    target: str = "web",
    api: str = "apps.kruise.io/v1alpha1",
    strategy: JSON | None = None,
    status: JSON | None = None,
    **spec_extra: Any,
) -> JSON:
    spec: JSON = {
        "targetRef": {"apiVersion": api_version, "kind": kind, "name": target},
        "subsets": [copy.deepcopy(s) for s in subsets],
    }
    if strategy is not None:
        spec["scheduleStrategy"] = strategy
    spec.update(spec_extra)
    obj: JSON = {
        "apiVersion": api,
        "kind": "WorkloadSpread",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


def deployment(name: str = "web", replicas: int = 10, namespace: str = "default") -> JSON:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-deploy-{name}"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx"}]},
            },
        },
    }


def replicaset(deploy: JSON, hash_: str = "abc") -> JSON:
    name = deploy["metadata"]["name"]
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{name}-{hash_}",
            "namespace": deploy["metadata"]["namespace"],
            "uid": f"uid-rs-{name}-{hash_}",
            "labels": {"app": name, "pod-template-hash": hash_},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": name,
                    "uid": deploy["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": copy.deepcopy(deploy["spec"]),
    }


def pod(
    name: str,
    *,
    owner: JSON | None = None,
    ws: str | None = None,
    subset_name: str | None = None,
    node: str = "",
    phase: str = "Running",
    ready: bool = True,
    created: str = "2026-01-01T00:00:00Z",
    labels: dict[str, str] | None = None,
    namespace: str = "default",
    conditions: list[JSON] | None = None,
) -> JSON:
    meta: JSON = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-pod-{name}",
        "creationTimestamp": created,
        "labels": dict(labels or {}),
    }
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": owner["apiVersion"],
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
        meta["labels"].update(owner["metadata"].get("labels", {}))
    if ws is not None:
        meta["annotations"] = {
            "apps.kruise.io/matched-workloadspread": f'{{"name":"{ws}","subset":"{subset_name}"}}'
        }
    status: JSON = {"phase": phase}
    conds = list(conditions or [])
    if ready and phase == "Running":
        conds.append({"type": "Ready", "status": "True"})
    if conds:
        status["conditions"] = conds
    spec: JSON = {"containers": [{"name": "main", "image": "nginx"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def node(name: str, zone: str, taints: list[JSON] | None = None) -> JSON:
    out: JSON = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
        "spec": {},
    }
    if taints:
        out["spec"]["taints"] = taints
    return out
