"""An AdmissionReview of a pod as the API server sends it, over TLS as the API server connects,
and the latencies of its answers, for the admission benchmarks."""

from __future__ import annotations

import json
import ssl
import uuid
from pathlib import Path
from typing import Any


def api_server_tls(tls: Path) -> ssl.SSLContext:
    """A client context for the local stack's webhooks (``tls``: the stack's ``DIR/tls``): it
    trusts the development CA and presents the client certificate kubesim presents, without
    which the webhooks refuse the connection in its handshake."""
    context = ssl.create_default_context(cafile=str(tls / "ca.crt"))
    context.load_cert_chain(tls / "apiserver-client.crt", tls / "apiserver-client.key")
    return context


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
