"""With ``--client-ca`` the conversion port, like the review port, serves only the API server.

A caller without a certificate of the client CA is refused in the TLS handshake, before a
byte of its ConversionReview is read; one with it is answered. kubesim presenting its
certificate to conversion webhooks (``--webhook-client-cert-for-conversions``, as ``spreadbus
up`` runs it) has WorkloadSpreads converted there; without that it presents none, as
kube-apiserver, and its conversions fail, which is why a cluster's installation serves the port
with ``--conversion-client-certificate=false``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubesim import KubeSimThread
from kubesim.webhook_client import ClientCertificate
from spreadbus.cli.local_install import local_conversion
from spreadbus.runtime.nats_server import NatsServer
from tests.webhook.conftest import WebhookShell, WebhookTls, webhook_shell
from tlsserving import PemPaths, issue_client_cert

ROOT = Path(__file__).resolve().parents[2]
GROUP = "apps.kruise.io"


@pytest.fixture
async def guarded(nats_server: NatsServer, webhook_tls: WebhookTls
                  ) -> AsyncIterator[WebhookShell]:
    async with webhook_shell(nats_server, webhook_tls, client_ca=str(webhook_tls.ca_file),
                             conversion_port=0) as running:
        yield running
        assert await running.stop() == 0


def conversion_review() -> bytes:
    spread = {"apiVersion": f"{GROUP}/v1alpha1", "kind": "WorkloadSpread",
              "metadata": {"name": "ws", "namespace": "default"},
              "spec": {"subsets": [{"name": "a", "maxReplicas": 1}]}}
    return json.dumps({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "u1", "desiredAPIVersion": f"{GROUP}/v1beta1", "objects": [spread]},
    }).encode()


async def convert(port: int, context: ssl.SSLContext) -> bytes:
    """One raw POST /convert over TLS; the whole answer, or b"" when the connection failed."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context,
                                                       server_hostname="127.0.0.1")
    except (ssl.SSLError, ConnectionError):
        return b""
    body = conversion_review()
    try:
        writer.write(b"POST /convert HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json"
                     b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 10)
    except (ssl.SSLError, ConnectionError):
        # TLS 1.3 ends the client's side of the handshake first: the server's alert and close
        # come after the request was written
        return b""
    finally:
        writer.close()


def caller(tls: WebhookTls, identity: PemPaths | None) -> ssl.SSLContext:
    context = tls.client_context()
    if identity is not None:
        context.load_cert_chain(identity.cert, identity.key)
    return context


def converted(answer: bytes) -> dict[str, Any]:
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
    response: dict[str, Any] = json.loads(answer.partition(b"\r\n\r\n")[2])["response"]
    assert response["result"]["status"] == "Success"
    return response


async def test_a_caller_without_a_client_certificate_is_refused_in_the_handshake(
    guarded: WebhookShell, webhook_tls: WebhookTls,
) -> None:
    site = guarded.service.conversion_site
    assert site is not None
    assert guarded.service.conversions is not None
    assert await convert(guarded.service.conversion_port, caller(webhook_tls, None)) == b""
    assert site.failed_handshakes == 1
    assert guarded.service.conversions.connections == 0


async def test_a_caller_with_a_certificate_of_the_client_ca_is_converted(
    guarded: WebhookShell, webhook_tls: WebhookTls, tmp_path: Path,
) -> None:
    identity = issue_client_cert(webhook_tls.ca, "kube-apiserver").write(tmp_path, "apiserver")
    answer = await convert(guarded.service.conversion_port, caller(webhook_tls, identity))
    (spread,) = converted(answer)["convertedObjects"]
    assert spread["apiVersion"] == f"{GROUP}/v1beta1"
    assert guarded.service.conversion_site is not None
    assert guarded.service.conversion_site.failed_handshakes == 0


async def test_turned_off_the_conversion_port_serves_callers_without_one(
    nats_server: NatsServer, webhook_tls: WebhookTls,
) -> None:
    async with webhook_shell(nats_server, webhook_tls, client_ca=str(webhook_tls.ca_file),
                             conversion_port=0, conversion_client_certificate=False) as running:
        converted(await convert(running.service.conversion_port, caller(webhook_tls, None)))
        assert await running.stop() == 0


def store_a_v1alpha1_spread(sim: KubeSimThread, port: int, ca_pem: bytes) -> dict[str, Any]:
    """The installation's WorkloadSpread CRD converting at ``port``; one v1alpha1 spread
    created (stored as v1beta1, so converted once) and read back as v1alpha1."""
    crd = yaml.safe_load(
        (ROOT / "deploy" / "crds" / "apps.kruise.io_workloadspreads.yaml").read_text())
    crd = local_conversion(crd, port, base64.b64encode(ca_pem).decode())
    with client.ApiClient(sim.kube_configuration()) as api:
        client.ApiextensionsV1Api(api).create_custom_resource_definition(cast(Any, crd))
        objects = client.CustomObjectsApi(api)
        objects.create_namespaced_custom_object(GROUP, "v1alpha1", "default", "workloadspreads", {
            "apiVersion": f"{GROUP}/v1alpha1", "kind": "WorkloadSpread",
            "metadata": {"name": "ws"},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "subsets": [{"name": "a", "maxReplicas": 3}]}})
        read: dict[str, Any] = objects.get_namespaced_custom_object(
            GROUP, "v1alpha1", "default", "workloadspreads", "ws")
        return read


async def test_kubesim_presenting_its_certificate_to_conversions_is_converted(
    guarded: WebhookShell, webhook_tls: WebhookTls, tmp_path: Path,
    kubesim_factory: Callable[..., KubeSimThread],
) -> None:
    paths = issue_client_cert(webhook_tls.ca, "kube-apiserver").write(tmp_path, "apiserver")
    sim = kubesim_factory(webhook_client_certificate=ClientCertificate(paths.cert, paths.key),
                          webhook_client_certificate_for_conversions=True)
    read = await asyncio.to_thread(store_a_v1alpha1_spread, sim,
                                   guarded.service.conversion_port, webhook_tls.ca.cert_pem)
    assert read["spec"]["subsets"] == [{"name": "a", "maxReplicas": 3}]
    assert guarded.service.conversion_site is not None
    assert guarded.service.conversion_site.failed_handshakes == 0


async def test_kubesim_presenting_none_to_conversions_as_kube_apiserver_fails_them(
    guarded: WebhookShell, webhook_tls: WebhookTls, tmp_path: Path,
    kubesim_factory: Callable[..., KubeSimThread],
) -> None:
    paths = issue_client_cert(webhook_tls.ca, "kube-apiserver").write(tmp_path, "apiserver")
    sim = kubesim_factory(webhook_client_certificate=ClientCertificate(paths.cert, paths.key))
    with pytest.raises(ApiException) as failed:
        await asyncio.to_thread(store_a_v1alpha1_spread, sim, guarded.service.conversion_port,
                                webhook_tls.ca.cert_pem)
    assert failed.value.status == 500
    assert "conversion webhook for apps.kruise.io/v1alpha1" in str(failed.value.body)
    assert guarded.service.conversion_site is not None
    assert guarded.service.conversion_site.failed_handshakes >= 1
