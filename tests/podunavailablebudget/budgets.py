"""Budgets, pods and reviews for the PodUnavailableBudget service tests."""

from __future__ import annotations

from typing import Any

from spreadbus.engine.review import AdmissionRequest

NS = "web"
APP = "app"


def budget(name: str = "pub", *, total: int, max_unavailable: int | str = 1,
           status: dict[str, Any] | None = None, version: int = 1) -> dict[str, Any]:
    """A selector budget over ``app=APP`` protecting ``total`` replicas (no workload needed)."""
    return {
        "apiVersion": "policy.kruise.io/v1alpha1",
        "kind": "PodUnavailableBudget",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "generation": 1,
                     "resourceVersion": str(version),
                     "annotations": {"pub.kruise.io/protect-total-replicas": str(total)}},
        "spec": {"selector": {"matchLabels": {"app": APP}}, "maxUnavailable": max_unavailable},
        "status": status or {},
    }


def pod(name: str, *, related: str | None = "pub", ready: bool = True) -> dict[str, Any]:
    annotations = {"kruise.io/related-pub": related} if related else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}",
                     "labels": {"app": APP}, "annotations": annotations},
        "spec": {"containers": [{"name": "c", "image": "nginx:1"}]},
        "status": {"phase": "Running",
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                   "containerStatuses": [{"name": "c", "image": "nginx:1", "ready": ready}]},
    }


def review(operation: str, target: dict[str, Any], *, sub_resource: str = "",
           new: dict[str, Any] | None = None, dry_run: bool = False) -> AdmissionRequest:
    name = target["metadata"]["name"]
    if operation == "DELETE":
        obj, old = None, target
    elif sub_resource == "eviction":
        obj = {"apiVersion": "policy/v1", "kind": "Eviction",
               "metadata": {"name": name, "namespace": NS}}
        old = None
    else:
        obj, old = new, target
    return AdmissionRequest(
        uid=f"{operation}-{name}", api_version="admission.k8s.io/v1", operation=operation,
        group="", version="v1", resource="pods", sub_resource=sub_resource, namespace=NS,
        name=name, dry_run=dry_run, object=obj, old_object=old,
    )


class StaticView:
    """The handlers' view, set by the test: budgets by version, pods by name."""

    def __init__(self, cluster: str = "c1") -> None:
        self.cluster = cluster
        self.budgets: dict[str, dict[str, Any]] = {}
        self.pods: dict[str, dict[str, Any]] = {}
        self.replicasets: dict[str, dict[str, Any]] = {}

    def budget(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.budgets.get(name)

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.pods.get(name)

    def budgets_in(self, namespace: str) -> list[dict[str, Any]]:
        return [self.budgets[k] for k in sorted(self.budgets)]

    def replicaset(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.replicasets.get(name)

    def synced(self) -> bool:
        return self.listed

    listed = True
