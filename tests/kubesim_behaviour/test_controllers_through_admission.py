"""Controllers go through admission like any client: webhooks see their pods and evictions."""

from __future__ import annotations

import base64
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from kubernetes.client import AdmissionregistrationV1Api

from tests.fixtures.cluster import SimCluster, is_ready
from tests.kubesim_behaviour.workloads import deployment
from tlsserving import issue_server_cert, make_ca


class Webhook:
    """An HTTPS admission webhook on kubesim's loop that records requests and may deny pods."""

    def __init__(self, cert_dir: Path) -> None:
        self.ca = make_ca("hook-ca")
        self.paths = issue_server_cert(self.ca, ["127.0.0.1"]).write(cert_dir, "hook")
        self.requests: list[dict[str, Any]] = []
        self.deny = False
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def _review(self, request: web.Request) -> web.Response:
        review = await request.json()
        req = review["request"]
        self.requests.append(req)
        allowed = not (self.deny and req.get("subResource") in (None, ""))
        response: dict[str, Any] = {"uid": req["uid"], "allowed": allowed}
        if not allowed:
            response["status"] = {"code": 403, "message": "pods are frozen"}
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        )

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/review", self._review)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.paths.cert, self.paths.key)
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def configuration(self) -> dict[str, Any]:
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "observer"},
            "webhooks": [
                {
                    "name": "observer.example.com",
                    "admissionReviewVersions": ["v1"],
                    "sideEffects": "None",
                    "failurePolicy": "Fail",
                    "clientConfig": {
                        "url": f"https://127.0.0.1:{self.port}/review",
                        "caBundle": base64.b64encode(self.ca.cert_pem).decode(),
                    },
                    "rules": [
                        {
                            "operations": ["CREATE"],
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "resources": ["pods", "pods/eviction"],
                        }
                    ],
                }
            ],
        }


@pytest.fixture
def webhook(cluster: SimCluster, tmp_path: Path) -> Iterator[Webhook]:
    hook = Webhook(tmp_path)
    cluster.sim.call(hook.start())
    AdmissionregistrationV1Api(cluster.api_client).create_validating_webhook_configuration(
        hook.configuration()
    )
    try:
        yield hook
    finally:
        cluster.sim.call(hook.stop())


def test_every_pod_a_replicaset_creates_and_every_eviction_passes_the_webhook(
    cluster: SimCluster, webhook: Webhook
) -> None:
    cluster.apps.create_namespaced_deployment("default", deployment("seen", 5))
    pods = cluster.wait_for(
        lambda: (
            (r := [p for p in cluster.pods(selector="app=seen") if is_ready(p)])
            and len(r) == 5
            and r
        ),
        what="5 ready pods",
    )
    created = [
        r for r in webhook.requests if r["operation"] == "CREATE" and not r.get("subResource")
    ]
    assert len(created) == 5
    assert {r["object"]["metadata"]["generateName"] for r in created} == {
        pods[0]["metadata"]["generateName"]
    }
    victim = pods[0]["metadata"]["name"]
    cluster.core.create_namespaced_pod_eviction(
        victim,
        "default",
        {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": victim}},
    )
    evictions = [r for r in webhook.requests if r.get("subResource") == "eviction"]
    assert [r["name"] for r in evictions] == [victim]


def test_a_denied_pod_create_is_reported_on_the_replicaset_and_retried(
    cluster: SimCluster, webhook: Webhook
) -> None:
    webhook.deny = True
    cluster.apps.create_namespaced_deployment("default", deployment("frozen", 2))

    def failure() -> Any:
        for rs in cluster.apps.list_namespaced_replica_set("default").items:
            for condition in rs.status.conditions or ():
                if condition.type == "ReplicaFailure":
                    return condition
        return None

    condition = cluster.wait_for(failure, what="ReplicaFailure")
    assert condition.reason == "FailedCreate"
    assert "pods are frozen" in condition.message
    webhook.deny = False
    cluster.wait_for(
        lambda: sum(is_ready(p) for p in cluster.pods(selector="app=frozen")) == 2,
        what="pods once the webhook allows them",
    )
    cluster.wait_for(lambda: failure() is None, what="the condition to clear")
