"""Pods as the API server would hold them, for the scheduling-rule tests."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from spreadbus.features.uniteddeployment.core.conditions import format_time

RESERVED = "apps.kruise.io/united-deployment-reserved-pod"
REVISION = "apps.kruise.io/controller-revision-hash"


def pod(
    name: str = "p",
    *,
    created: datetime,
    phase: str = "Pending",
    unschedulable: bool = False,
    scheduled: bool = False,
    ready_since: datetime | None = None,
    not_ready_since: datetime | None = None,
    node: str = "",
    labels: dict[str, str] | None = None,
    deleted: datetime | None = None,
    namespace: str = "default",
) -> dict[str, Any]:
    conditions: list[dict[str, Any]] = []
    if unschedulable:
        conditions.append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable"})
    if scheduled:
        conditions.append({"type": "PodScheduled", "status": "True"})
    if ready_since is not None:
        conditions.append(
            {"type": "Ready", "status": "True", "lastTransitionTime": format_time(ready_since)}
        )
    if not_ready_since is not None:
        conditions.append(
            {"type": "Ready", "status": "False", "lastTransitionTime": format_time(not_ready_since)}
        )
    meta: dict[str, Any] = {
        "namespace": namespace,
        "name": name,
        "creationTimestamp": format_time(created),
    }
    if labels is not None:
        meta["labels"] = dict(labels)
    if deleted is not None:
        meta["deletionTimestamp"] = format_time(deleted)
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "nginx"}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase, "conditions": conditions},
    }
