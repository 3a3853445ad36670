"""With ``--client-ca`` the review port serves only callers holding a certificate that CA issued.

A forged review (no certificate, one from another CA, or the webhook's own serving certificate,
which may not authenticate a client) is refused in the TLS handshake: no connection reaches the
review paths, so no reservation can be spent. kubesim, presenting the client certificate as an
API server does, is served; without it the same pod creation fails the webhook call.
"""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubesim import KubeSimThread
from kubesim.webhook_client import ClientCertificate
from services.webhook.service import WebhookService
from spreadbus.runtime.nats_server import NatsServer
from tests.fixtures.polling import wait_until_async
from tests.webhook.admission_reviews import pod, review
from tests.webhook.conftest import WebhookShell, WebhookTls, webhook_shell
from tlsserving import PemPaths, issue_client_cert, make_ca

PODS_PATH = "/validate-pod"


@pytest.fixture
async def guarded(
    nats_server: NatsServer, webhook_tls: WebhookTls
) -> AsyncIterator[WebhookShell]:
    async with webhook_shell(nats_server, webhook_tls,
                             client_ca=str(webhook_tls.ca_file)) as running:
        yield running
        assert await running.stop() == 0


def answered(service: WebhookService) -> float:
    """Reviews the paths answered, whatever the answer."""
    total = 0.0
    for metric in service.registry.collect():
        if metric.name == "spreadbus_webhook_admission_duration_seconds":
            total += sum(s.value for s in metric.samples if s.name.endswith("_count"))
    return total


def forged_delete() -> bytes:
    """A pod DELETE review as the API server would send it: it would free the pod's slot."""
    victim = pod(name="web-1")
    body = review(operation="DELETE", resource="pods", name="web-1", old=victim)
    return json.dumps(body).encode()


async def post(port: int, context: ssl.SSLContext, body: bytes) -> bytes:
    """One raw HTTP/1.1 POST over TLS; the whole answer, or what the connection raised."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context,
                                                   server_hostname="127.0.0.1")
    try:
        writer.write(b"POST %s HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\nConnection: close\r\n\r\n%s"
                     % (PODS_PATH.encode(), len(body), body))
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()


def caller(tls: WebhookTls, identity: PemPaths | None) -> ssl.SSLContext:
    context = tls.client_context()
    if identity is not None:
        context.load_cert_chain(identity.cert, identity.key)
    return context


def no_certificate(tls: WebhookTls, directory: Path) -> PemPaths | None:
    return None


def another_cas(tls: WebhookTls, directory: Path) -> PemPaths | None:
    return issue_client_cert(make_ca("someone else"), "kube-apiserver").write(directory, "other")


def the_serving_certificate(tls: WebhookTls, directory: Path) -> PemPaths | None:
    return tls.server


@pytest.mark.parametrize("forger", [no_certificate, another_cas, the_serving_certificate])
async def test_a_forged_review_is_refused_in_the_handshake_and_reaches_no_path(
    guarded: WebhookShell, webhook_tls: WebhookTls, tmp_path: Path,
    forger: Callable[[WebhookTls, Path], PemPaths | None],
) -> None:
    service = guarded.service
    assert service.site is not None
    assert service.reviews is not None
    context = caller(webhook_tls, forger(webhook_tls, tmp_path))
    try:
        # TLS 1.3 ends the client's side of the handshake first: the server's alert and close
        # come after the request was written
        answer = await post(service.port, context, forged_delete())
    except (ssl.SSLError, ConnectionError):
        answer = b""
    assert answer == b"", "no HTTP answer at all"
    assert service.site.failed_handshakes == 1
    assert service.reviews.connections == 0
    assert answered(service) == 0


async def test_a_caller_with_a_certificate_of_the_client_ca_is_served(
    guarded: WebhookShell, webhook_tls: WebhookTls, tmp_path: Path
) -> None:
    identity = issue_client_cert(webhook_tls.ca, "kube-apiserver").write(tmp_path, "apiserver")
    answer = await post(guarded.service.port, caller(webhook_tls, identity), forged_delete())
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["response"]["allowed"] is True
    assert answered(guarded.service) == 1
    assert guarded.service.site is not None
    assert guarded.service.site.failed_handshakes == 0


async def test_the_health_port_needs_no_certificate(guarded: WebhookShell) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", guarded.health_port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert (await asyncio.wait_for(reader.read(), 10)).startswith(b"HTTP/1.1 200")
    writer.close()


def pod_webhook(port: int, ca_pem: bytes) -> dict[str, Any]:
    """The pod CREATE webhook, failing closed so a refused call shows in the creation."""
    return {
        "metadata": {"name": "spreadbus-pods"},
        "webhooks": [{
            "name": "mpod.spreadbus.io",
            "clientConfig": {"url": f"https://127.0.0.1:{port}/mutate-pod",
                             "caBundle": base64.b64encode(ca_pem).decode()},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["pods"]}],
            "failurePolicy": "Fail",
            "sideEffects": "NoneOnDryRun",
            "admissionReviewVersions": ["v1"],
        }],
    }


def create_pod(sim: KubeSimThread, port: int, ca_pem: bytes) -> client.V1Pod:
    with client.ApiClient(sim.kube_configuration()) as api:
        client.AdmissionregistrationV1Api(api).create_mutating_webhook_configuration(
            pod_webhook(port, ca_pem))
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}
        created: client.V1Pod = client.CoreV1Api(api).create_namespaced_pod("default", body)
        return created


async def test_kubesim_presenting_its_client_certificate_is_served(
    guarded: WebhookShell, webhook_tls: WebhookTls, tmp_path: Path,
    kubesim_factory: Callable[..., KubeSimThread],
) -> None:
    paths = issue_client_cert(webhook_tls.ca, "kube-apiserver").write(tmp_path, "apiserver")
    sim = kubesim_factory(webhook_client_certificate=ClientCertificate(paths.cert, paths.key))
    created = await asyncio.to_thread(create_pod, sim, guarded.service.port,
                                      webhook_tls.ca.cert_pem)
    assert created.metadata.name == "p"
    assert answered(guarded.service) == 1
    assert guarded.service.site is not None
    assert guarded.service.site.failed_handshakes == 0


async def test_kubesim_without_a_client_certificate_is_refused(
    guarded: WebhookShell, webhook_tls: WebhookTls,
    kubesim_factory: Callable[..., KubeSimThread],
) -> None:
    sim = kubesim_factory()
    with pytest.raises(ApiException) as failed:
        await asyncio.to_thread(create_pod, sim, guarded.service.port, webhook_tls.ca.cert_pem)
    assert failed.value.status == 500
    assert "mpod.spreadbus.io" in str(failed.value.body)
    assert answered(guarded.service) == 0
    assert guarded.service.site is not None
    assert guarded.service.site.failed_handshakes >= 1


async def test_a_new_client_ca_is_trusted_once_its_file_changes_and_the_old_one_no_longer(
    nats_server: NatsServer, webhook_tls: WebhookTls, tmp_path: Path
) -> None:
    bundle = tmp_path / "client-ca.crt"
    old_ca, new_ca = make_ca("old client CA"), make_ca("new client CA")
    bundle.write_bytes(old_ca.cert_pem)
    old = issue_client_cert(old_ca, "kube-apiserver").write(tmp_path, "old")
    new = issue_client_cert(new_ca, "kube-apiserver").write(tmp_path, "new")
    async with webhook_shell(nats_server, webhook_tls, client_ca=str(bundle),
                             cert_check_seconds=0.05) as running:
        port = running.service.port

        async def served(identity: PemPaths) -> bool:
            try:
                answer = await post(port, caller(webhook_tls, identity), forged_delete())
            except (ssl.SSLError, ConnectionError):
                return False
            return answer.startswith(b"HTTP/1.1 200 ")

        assert await served(old)
        assert not await served(new)
        loads = running.service.certificates.loads
        bundle.write_bytes(new_ca.cert_pem)
        await wait_until_async(lambda: running.service.certificates.loads > loads,
                               what="the new client CA to load")
        assert await served(new)
        assert not await served(old)
        assert await running.stop() == 0
