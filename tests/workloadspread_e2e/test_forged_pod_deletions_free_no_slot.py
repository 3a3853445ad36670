"""Forged pod DELETE reviews on the local stack free no slot of a full subset.

Anyone who reached the webhook used to be able to send DELETE reviews for pods that stay: each
freed its pod's slot, and the next scale-up put more pods in the subset than its maxReplicas.
The local stack runs the webhook with ``--client-ca`` and kubesim with its client certificate;
the forged reviews, sent without one, are refused in the TLS handshake, and the scale-up lands
on the elastic subset as if they had never been sent.
"""

from __future__ import annotations

import json
import socket
import ssl
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from spreadbus.cli.local_stack import Stack
from tests.workloadspread_e2e.stack import (
    create_spread,
    deployment,
    elastic_spread,
    live_pods,
    running_stack,
    split,
    spread,
    wait_for,
    zone_subset,
)

pytestmark = pytest.mark.e2e
NS = "forged"
FIXED = 10
FORGED = 5

WORKLOADSPREAD = elastic_spread("ws-forged", "web", FIXED)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, client.ApiClient]]:
    data_dir: Path = tmp_path_factory.mktemp("forged-stack")
    with running_stack(data_dir, "elastic", {}) as running:
        yield running


def deletion_review(pod: dict[str, Any]) -> bytes:
    """The review the API server sends when ``pod`` is deleted; the pod stays."""
    meta = pod["metadata"]
    return json.dumps({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "operation": "DELETE", "namespace": meta["namespace"], "name": meta["name"],
            "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
            "object": None, "oldObject": pod, "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions"},
        },
    }).encode()


def forge(port: int, ca_file: Path, body: bytes) -> str:
    """Send ``body`` to ``/validate-pod`` as anyone could: TLS verified, no client certificate.
    What came back: the status line, or how the connection ended."""
    context = ssl.create_default_context(cafile=str(ca_file))
    try:
        with (socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
              context.wrap_socket(raw, server_hostname="127.0.0.1") as tls):
            tls.sendall(b"POST /validate-pod HTTP/1.1\r\nHost: webhook\r\n"
                        b"Content-Type: application/json\r\nContent-Length: %d\r\n"
                        b"Connection: close\r\n\r\n%s" % (len(body), body))
            answer = tls.recv(65536)
    except (ssl.SSLError, OSError) as exc:
        return f"refused: {exc}"
    return answer.split(b"\r\n", 1)[0].decode() if answer else "refused: closed"


def test_forged_deletions_of_pods_that_stay_free_no_slot_for_the_next_scale_up(
    stack: tuple[Stack, client.ApiClient],
) -> None:
    running, api = stack
    apps: Any = client.AppsV1Api(api)
    core: Any = client.CoreV1Api(api)
    create_spread(api, NS, WORKLOADSPREAD)
    apps.create_namespaced_deployment(NS, deployment("web", FIXED))
    wait_for(f"{FIXED} pods running in ACK",
             lambda: split(live_pods(api, NS, "web"), running=True) == {"ACK": FIXED}, 60,
             lambda: split(live_pods(api, NS, "web")))

    listed = core.list_namespaced_pod(NS, label_selector="app=web", _preload_content=False)
    victims = json.loads(listed.data)["items"][:FORGED]
    ca_file = running.data_dir / "tls" / "ca.crt"
    answers = [forge(running.webhook_port, ca_file, deletion_review(pod)) for pod in victims]
    assert all(a.startswith("refused") for a in answers), answers

    apps.patch_namespaced_deployment("web", NS, {"spec": {"replicas": FIXED + FORGED}})
    settled = {"ACK": FIXED, "ECI": FORGED}
    wait_for(f"the scale-up to land {settled}",
             lambda: split(live_pods(api, NS, "web"), running=True) == settled, 60,
             lambda: split(live_pods(api, NS, "web")))
    assert split(live_pods(api, NS, "web")) == settled, "no pod beyond the subset's maxReplicas"


def test_workloadspreads_convert_through_the_port_that_asks_for_no_certificate(
    stack: tuple[Stack, client.ApiClient],
) -> None:
    # kubesim, as kube-apiserver, presents no client certificate to conversion webhooks
    _, api = stack
    custom: Any = client.CustomObjectsApi(api)
    body = spread("ws-converted", "other", [zone_subset("ACK", "ack", 3)])
    create_spread(api, NS, body)
    beta = custom.get_namespaced_custom_object("apps.kruise.io", "v1beta1", NS,
                                               "workloadspreads", "ws-converted")
    assert beta["spec"]["subsets"][0]["requiredNodeSelector"] == \
        body["spec"]["subsets"][0]["requiredNodeSelectorTerm"]
