"""A small cluster for reconcile tests: a UD, the workloads it asked for once created, pods."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from spreadbus.features.uniteddeployment.core.reconcile import Reconciliation, reconcile

JSON = dict[str, Any]
NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
SUBSET = "apps.kruise.io/subset-name"
REVISION = "apps.kruise.io/controller-revision-hash"

POD_TEMPLATE: JSON = {
    "metadata": {"labels": {"app": "sample"}},
    "spec": {"containers": [{"name": "main", "image": "nginx:alpine"}]},
}


def template(key: str = "statefulSetTemplate", image: str = "nginx:alpine") -> JSON:
    pod = copy.deepcopy(POD_TEMPLATE)
    pod["spec"]["containers"][0]["image"] = image
    return {
        key: {
            "metadata": {"labels": {"app": "sample"}},
            "spec": {"selector": {"matchLabels": {"app": "sample"}}, "template": pod},
        }
    }


def united(
    subsets: list[JSON],
    *,
    replicas: int | None = 6,
    key: str = "statefulSetTemplate",
    image: str = "nginx:alpine",
    name: str = "sample-ud",
    status: JSON | None = None,
    strategy: JSON | None = None,
    partitions: dict[str, int] | None = None,
    history_limit: int | None = None,
    annotations: dict[str, str] | None = None,
) -> JSON:
    spec: JSON = {
        "selector": {"matchLabels": {"app": "sample"}},
        "template": template(key, image),
        "topology": {"subsets": subsets},
    }
    if replicas is not None:
        spec["replicas"] = replicas
    if strategy is not None:
        spec["topology"]["scheduleStrategy"] = strategy
    if partitions is not None:
        spec["updateStrategy"] = {"type": "Manual", "manualUpdate": {"partitions": partitions}}
    if history_limit is not None:
        spec["revisionHistoryLimit"] = history_limit
    meta: JSON = {"namespace": "default", "name": name, "uid": f"{name}-uid", "generation": 3}
    if annotations:
        meta["annotations"] = annotations
    found: JSON = {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "UnitedDeployment",
        "metadata": meta,
        "spec": spec,
    }
    if status is not None:
        found["status"] = status
    return found


def zone(name: str, value: str | None = None, **extra: Any) -> JSON:
    subset: JSON = {
        "name": name,
        "nodeSelectorTerm": {
            "matchExpressions": [{"key": "node", "operator": "In", "values": [value or name]}]
        },
    }
    subset.update(extra)
    return subset


def run(
    ud: JSON,
    workloads: list[JSON] | None = None,
    pods: list[JSON] | None = None,
    revisions: list[JSON] | None = None,
    now: datetime = NOW,
) -> Reconciliation:
    return reconcile(
        ud, workloads=workloads or [], pods=pods or [], revisions=revisions or [], now=now
    )


def materialize(workload: JSON, *, ready: int | None = None, suffix: str = "x1") -> JSON:
    """The workload as the API server would hold it once created and settled."""
    found = copy.deepcopy(workload)
    meta = found["metadata"]
    if "name" not in meta:
        meta["name"] = meta["generateName"] + suffix
        meta["uid"] = meta["name"] + "-uid"
    replicas = found["spec"]["replicas"]
    found["status"] = {
        "replicas": replicas,
        "readyReplicas": replicas if ready is None else ready,
        "updatedReplicas": replicas,
    }
    return found


def settle(ud: JSON, result: Reconciliation) -> list[JSON]:
    """Every planned workload, created or updated, as observed afterwards."""
    return [materialize(d.workload) for d in result.subsets.values()]


def settled_pods(workloads: list[JSON]) -> tuple[list[JSON], list[JSON]]:
    """The workloads with what settled under them: ``status.replicas`` pods each, on the
    workload's revision (a finished rollout is counted from them), a Deployment's through a
    ReplicaSet it controls."""
    objects, pods = [], []
    for workload in workloads:
        owner = workload
        objects.append(workload)
        if workload["kind"] == "Deployment":
            meta = workload["metadata"]
            owner = copy.deepcopy(workload)
            owner["kind"] = "ReplicaSet"
            owner["metadata"].update(name=meta["name"] + "-rs", uid=meta["uid"] + "-rs")
            owner["metadata"]["ownerReferences"] = [
                {"apiVersion": workload["apiVersion"], "kind": "Deployment", "name": meta["name"],
                 "uid": meta["uid"], "controller": True}
            ]
            objects.append(owner)
        revision = workload["metadata"]["labels"].get(REVISION)
        pods.extend(owned_pod(owner, i, revision=revision)
                    for i in range(workload["status"]["replicas"]))
    return objects, pods


def owned_pod(
    owner: JSON,
    index: int,
    *,
    revision: str | None = None,
    ready: bool = True,
    phase: str = "Running",
) -> JSON:
    meta = owner["metadata"]
    labels = dict(owner["spec"]["template"]["metadata"]["labels"])
    if revision is not None:
        labels[REVISION] = revision
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": meta.get("namespace", "default"),
            "name": f"{meta['name']}-{index}",
            "labels": labels,
            "creationTimestamp": "2026-01-01T11:00:00Z",
            "ownerReferences": [
                {
                    "apiVersion": owner["apiVersion"],
                    "kind": owner["kind"],
                    "name": meta["name"],
                    "uid": meta.get("uid", ""),
                    "controller": True,
                }
            ],
        },
        "spec": {"containers": [{"name": "main", "image": "nginx"}], "nodeName": "n1"},
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }
