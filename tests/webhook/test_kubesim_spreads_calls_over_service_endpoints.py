"""kubesim reaches a webhook Service at its ready endpoints, one per call in turn.

Three HTTPS listeners stand behind one Service (a port each on 127.0.0.1, as the local stack's
webhook replicas do); kubesim is the real simulator in its own thread, spoken to by the official
client, with the Service, its Endpoints and the webhook configuration stored through the API.
"""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tlsserving import CertKeyPair, issue_server_cert, make_ca

NS = "hooks"
SERVICE = "steer"


@dataclass
class Listeners:
    ca: CertKeyPair
    ports: list[int]
    calls: Counter[int]


@pytest.fixture
async def listeners(tmp_path: Path) -> AsyncIterator[Listeners]:
    """Three webhook listeners that allow every review and count the calls each received.

    Requested before ``kube_api_client``, so kubesim stops (closing its keep-alive connections)
    before the listeners do.
    """
    ca = make_ca("endpoint test CA")
    pair = issue_server_cert(ca, [f"{SERVICE}.{NS}.svc"])
    paths = pair.write(tmp_path, "server")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(paths.cert), str(paths.key))
    calls: Counter[int] = Counter()
    runners: list[web.AppRunner] = []
    ports: list[int] = []
    for _ in range(3):
        port_box: list[int] = []

        async def answer(request: web.Request, box: list[int] = port_box) -> web.Response:
            calls[box[0]] += 1
            body = await request.json()
            uid = body["request"]["uid"]
            return web.json_response(
                {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "response": {"uid": uid, "allowed": True},
                }
            )

        app = web.Application()
        app.router.add_post("/mutate", answer)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        server: Any = site._server
        port_box.append(server.sockets[0].getsockname()[1])
        ports.append(port_box[0])
        runners.append(runner)
    try:
        yield Listeners(ca, ports, calls)
    finally:
        for runner in runners:
            await runner.cleanup()


def install(
    api: client.ApiClient,
    listeners: Listeners,
    endpoints: dict[str, Any] | None,
    service_spec: dict[str, Any] | None = None,
) -> None:
    """The Service (with ``endpoints`` unless None), namespaces and the webhook configuration."""
    core: Any = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": NS}})
    core.create_namespace({"metadata": {"name": "apps"}})
    spec = service_spec or {"ports": [{"name": "https", "port": 443, "targetPort": "https"}]}
    core.create_namespaced_service(NS, {"metadata": {"name": SERVICE}, "spec": spec})
    if endpoints is not None:
        core.create_namespaced_endpoints(NS, {"metadata": {"name": SERVICE}, **endpoints})
    hook = {
        "name": "steer.example.com",
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "timeoutSeconds": 5,
        "clientConfig": {
            "service": {"namespace": NS, "name": SERVICE, "path": "/mutate", "port": 443},
            "caBundle": base64.b64encode(listeners.ca.cert_pem).decode(),
        },
        "namespaceSelector": {
            "matchLabels": {"kubernetes.io/metadata.name": "apps"},
        },
        "rules": [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "operations": ["CREATE"],
                "resources": ["pods"],
            }
        ],
    }
    admission: Any = client.AdmissionregistrationV1Api(api)
    admission.create_mutating_webhook_configuration(
        {"metadata": {"name": "steer"}, "webhooks": [hook]}
    )


def create_pods(api: client.ApiClient, count: int) -> None:
    core: Any = client.CoreV1Api(api)
    for i in range(count):
        core.create_namespaced_pod(
            "apps",
            {
                "metadata": {"name": f"pod-{i}"},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
        )


async def test_calls_go_round_robin_over_every_ready_endpoint_and_skip_unready_ones(
    listeners: Listeners, kube_api_client: client.ApiClient
) -> None:
    first, second, third = listeners.ports
    endpoints = {
        "subsets": [
            # Two listeners share a port list; the third has its own port, and the second
            # subset also names an address that is not ready.
            {
                "addresses": [{"ip": "127.0.0.1"}],
                "ports": [{"name": "https", "port": first}],
            },
            {
                "addresses": [{"ip": "127.0.0.1"}],
                "notReadyAddresses": [{"ip": "127.0.0.2"}],
                "ports": [{"name": "metrics", "port": 9000}, {"name": "https", "port": second}],
            },
            {
                "addresses": [{"ip": "127.0.0.1"}],
                "ports": [{"name": "https", "port": third}],
            },
        ]
    }
    await asyncio.to_thread(install, kube_api_client, listeners, endpoints)
    await asyncio.to_thread(create_pods, kube_api_client, 12)
    assert listeners.calls == {first: 4, second: 4, third: 4}


async def test_a_service_whose_endpoints_have_no_ready_address_cannot_be_called(
    kube_api_client: client.ApiClient, listeners: Listeners
) -> None:
    endpoints = {
        "subsets": [
            {
                "notReadyAddresses": [{"ip": "127.0.0.1"}],
                "ports": [{"name": "https", "port": listeners.ports[0]}],
            }
        ]
    }
    await asyncio.to_thread(install, kube_api_client, listeners, endpoints)
    with pytest.raises(ApiException) as refused:
        await asyncio.to_thread(create_pods, kube_api_client, 1)
    assert refused.value.status == 500
    message = json.loads(str(refused.value.body))["message"]
    assert 'no endpoints available for service "steer"' in message
    assert sum(listeners.calls.values()) == 0


async def test_a_service_without_endpoints_is_called_at_its_cluster_ip_and_target_port(
    listeners: Listeners, kube_api_client: client.ApiClient
) -> None:
    target = listeners.ports[1]
    spec = {
        "clusterIP": "127.0.0.1",
        "ports": [{"name": "https", "port": 443, "targetPort": target}],
    }
    await asyncio.to_thread(install, kube_api_client, listeners, None, spec)
    await asyncio.to_thread(create_pods, kube_api_client, 3)
    assert listeners.calls == {target: 3}


async def test_endpoints_are_a_built_in_resource_listed_by_discovery(
    kube_api_client: client.ApiClient,
) -> None:
    core: Any = client.CoreV1Api(kube_api_client)
    resources = await asyncio.to_thread(core.get_api_resources)
    endpoints = next(r for r in resources.resources if r.name == "endpoints")
    assert (endpoints.kind, endpoints.namespaced, endpoints.short_names) == (
        "Endpoints",
        True,
        ["ep"],
    )
