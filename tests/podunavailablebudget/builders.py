"""Objects for PodUnavailableBudget tests, shaped as the seed writes them (namespace ``web``)."""

from __future__ import annotations

import copy
from typing import Any

JSON = dict[str, Any]
NS = "web"


def budget(
    name: str = "web-server-pub",
    *,
    target: tuple[str, str, str] | None = ("apps/v1", "Deployment", "web-server"),
    selector: JSON | None = None,
    max_unavailable: object = "60%",
    min_available: object = None,
    annotations: dict[str, str] | None = None,
    status: JSON | None = None,
    generation: int = 1,
    namespace: str = NS,
) -> JSON:
    spec: JSON = {}
    if target is not None:
        api_version, kind, target_name = target
        spec["targetRef"] = {"apiVersion": api_version, "kind": kind, "name": target_name}
    if selector is not None:
        spec["selector"] = selector
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    if min_available is not None:
        spec["minAvailable"] = min_available
    meta: JSON = {"name": name, "namespace": namespace, "generation": generation}
    if annotations:
        meta["annotations"] = dict(annotations)
    obj: JSON = {
        "apiVersion": "policy.kruise.io/v1alpha1",
        "kind": "PodUnavailableBudget",
        "metadata": meta,
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


def status(allowed: int, current: int = 5, desired: int = 2, total: int = 5, **maps: Any) -> JSON:
    out: JSON = {
        "unavailableAllowed": allowed,
        "currentAvailable": current,
        "desiredAvailable": desired,
        "totalReplicas": total,
    }
    out.update(maps)
    return out


def workload(
    kind: str = "Deployment",
    name: str = "web-server",
    *,
    replicas: int | None = 5,
    api_version: str = "apps/v1",
    uid: str | None = None,
    owner: JSON | None = None,
    namespace: str = NS,
    deleting: bool = False,
) -> JSON:
    meta: JSON = {"name": name, "namespace": namespace, "uid": uid or f"{kind}-{name}-uid"}
    if owner is not None:
        meta["ownerReferences"] = [owner_ref(owner)]
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: JSON = {} if replicas is None else {"replicas": replicas}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec}


def owner_ref(owner: JSON) -> JSON:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }


def replicaset(deployment: JSON, template_hash: str = "abc", replicas: int = 5) -> JSON:
    return workload(
        "ReplicaSet", f"{deployment['metadata']['name']}-{template_hash}", replicas=replicas,
        owner=deployment, namespace=deployment["metadata"]["namespace"],
    )


def pod(
    name: str,
    *,
    owner: JSON | None = None,
    labels: dict[str, str] | None = None,
    related: str | None = "web-server-pub",
    ready: bool = True,
    phase: str = "Running",
    image: str = "nginx:1.25",
    annotations: dict[str, str] | None = None,
    namespace: str = NS,
    deleting: bool = False,
) -> JSON:
    meta: JSON = {"name": name, "namespace": namespace, "labels": dict(labels or {"app": "web"})}
    notes = dict(annotations or {})
    if related is not None:
        notes["kruise.io/related-pub"] = related
    if notes:
        meta["annotations"] = notes
    if owner is not None:
        meta["ownerReferences"] = [owner_ref(owner)]
        if owner["kind"] == "ReplicaSet":
            meta["labels"]["pod-template-hash"] = owner["metadata"]["name"].rsplit("-", 1)[-1]
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "main", "image": image}]},
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def changed(obj: JSON, **edits: Any) -> JSON:
    """A deep copy with dotted paths set (``spec.containers.0.image="x"``)."""
    out = copy.deepcopy(obj)
    for dotted, value in edits.items():
        parts = dotted.split("__")
        target: Any = out
        for part in parts[:-1]:
            target = target[int(part)] if isinstance(target, list) else target.setdefault(part, {})
        last = parts[-1]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value
    return out
