"""An AdmissionReview of a pod as the API server sends it, and the latencies of its answers,
for the admission benchmarks."""

from __future__ import annotations

import json
import uuid
from typing import Any


def pod_review(pod: dict[str, Any], *, operation: str, username: str) -> bytes:
    """The review of ``pod`` (the new object on CREATE, the old one on DELETE)."""
    metadata = pod["metadata"]
    body = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "operation": operation,
            "namespace": metadata["namespace"],
            "name": metadata["name"],
            "userInfo": {"username": username},
            "oldObject" if operation == "DELETE" else "object": pod,
            "dryRun": False,
        },
    }
    return json.dumps(body).encode()


def latency_ms(latencies: list[float]) -> dict[str, float]:
    """p50, p99 and max of ``latencies`` (seconds, at least one) in milliseconds."""
    ordered = sorted(latencies)
    return {"p50_ms": ordered[len(ordered) // 2] * 1000,
            "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
            "max_ms": ordered[-1] * 1000}
