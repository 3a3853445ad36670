"""AdmissionReview bodies as the API server sends them, for the webhook tests."""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

from spreadbus.engine.review import AdmissionRequest, parse


def review(
    *,
    operation: str,
    resource: str,
    group: str = "",
    version: str = "v1",
    sub_resource: str = "",
    namespace: str = "default",
    name: str = "",
    obj: dict[str, Any] | None = None,
    old: dict[str, Any] | None = None,
    dry_run: bool = False,
    uid: str | None = None,
) -> dict[str, Any]:
    request: dict[str, Any] = {
        "uid": uid or str(uuid.uuid4()),
        "kind": {"group": group, "version": version, "kind": "Pod"},
        "resource": {"group": group, "version": version, "resource": resource},
        "operation": operation,
        "namespace": namespace,
        "name": name,
        "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
        "object": obj,
        "oldObject": old,
        "dryRun": dry_run,
    }
    if sub_resource:
        request["subResource"] = sub_resource
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def request(**fields: Any) -> AdmissionRequest:
    """A :func:`review` as the webhook reads it off the wire."""
    parsed = parse(json.dumps(review(**fields)).encode())
    assert isinstance(parsed, AdmissionRequest), parsed
    return parsed


def pod(
    name: str = "",
    *,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    owner: tuple[str, str, str] | None = ("apps/v1", "ReplicaSet", "web-7d4b9c"),
    generate_name: str = "",
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"namespace": namespace, "labels": labels or {"app": "web"}}
    if name:
        metadata["name"] = name
    if generate_name:
        metadata["generateName"] = generate_name
    if annotations:
        metadata["annotations"] = annotations
    if owner is not None:
        api_version, kind, owner_name = owner
        metadata["ownerReferences"] = [
            {
                "apiVersion": api_version,
                "kind": kind,
                "name": owner_name,
                "uid": str(uuid.uuid5(uuid.NAMESPACE_OID, owner_name)),
                "controller": True,
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
        "status": {"phase": "Pending"},
    }


def patch_of(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON Patch an answer carries (empty when none)."""
    response = answer["response"]
    if "patch" not in response:
        return []
    assert response["patchType"] == "JSONPatch"
    ops: list[dict[str, Any]] = json.loads(base64.b64decode(response["patch"]))
    return ops
