"""One webhook replica over real HTTPS: answers, health, metrics, certificate rotation."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import socket
import ssl
from pathlib import Path

from cryptography import x509

from tests.fixtures.polling import wait_until_async
from tests.webhook.admission_reviews import pod, review
from tests.webhook.conftest import RunningWebhook
from tests.workloadspread.webhook.cluster_state import spread, zone_subset
from tlsserving import issue_server_cert


async def wait_until_ready(webhook: RunningWebhook) -> None:
    async def ready() -> bool:
        async with webhook.http.get(f"{webhook.health_url}/readyz") as response:
            return response.status == 200

    await wait_until_async(ready, what="the webhook to be ready", timeout=20, interval=0.05)


async def test_before_the_cluster_is_listed_a_pod_is_admitted_unchanged_with_a_warning(
    webhook: RunningWebhook,
) -> None:
    body = review(operation="CREATE", resource="pods", obj=pod(generate_name="web-"), uid="u-1")
    async with webhook.http.post(f"{webhook.url}/mutate-pod", json=body) as response:
        assert response.status == 200
        answer = await response.json()
    assert answer["apiVersion"] == "admission.k8s.io/v1"
    assert answer["kind"] == "AdmissionReview"
    result = answer["response"]
    assert (result["uid"], result["allowed"]) == ("u-1", True)
    assert "patch" not in result
    assert "syncing" in result["warnings"][0]


async def test_readiness_follows_nats_and_the_observation_stream(
    webhook: RunningWebhook,
) -> None:
    await wait_until_ready(webhook)
    async with webhook.http.get(f"{webhook.health_url}/readyz") as response:
        body = await response.json()
    assert body["conditions"] == {"nats": True, "bus": True, "caught_up": True}
    async with webhook.http.get(f"{webhook.health_url}/healthz") as response:
        assert response.status == 200


async def test_metrics_expose_the_admission_latency_histogram(webhook: RunningWebhook) -> None:
    for i in range(3):
        body = review(operation="CREATE", resource="pods", obj=pod(f"p{i}"))
        async with webhook.http.post(f"{webhook.url}/mutate-pod", json=body) as response:
            assert response.status == 200
    async with webhook.http.get(f"{webhook.health_url}/metrics") as response:
        text = await response.text()
    count = next(
        line
        for line in text.splitlines()
        if line.startswith("spreadbus_webhook_admission_duration_seconds_count")
        and 'path="/mutate-pod"' in line
    )
    assert float(count.rsplit(" ", 1)[1]) == 3.0
    assert 'le="0.005"' in text
    assert "spreadbus_webhook_ledger_conflicts 0.0" in text
    assert "spreadbus_webhook_pods_steered 0.0" in text


async def test_malformed_bodies_over_https_get_an_admission_review_denial(
    webhook: RunningWebhook,
) -> None:
    for path in ("/mutate-pod", "/validate-pod", "/validate-workloadspread"):
        for raw in (b"", b"null", b"{", b'{"kind":"AdmissionReview"}', b"\xff\xfe"):
            async with webhook.http.post(f"{webhook.url}{path}", data=raw) as response:
                assert response.status == 400
                answer = json.loads(await response.read())
            assert answer["kind"] == "AdmissionReview"
            assert answer["response"]["allowed"] is False


async def test_an_invalid_workloadspread_is_denied_with_every_field_error(
    webhook: RunningWebhook,
) -> None:
    bad = spread([zone_subset("a", "50%"), zone_subset("a", 3)])
    body = review(
        operation="CREATE",
        group="apps.kruise.io",
        version="v1alpha1",
        resource="workloadspreads",
        name="ws",
        obj=bad,
    )
    async with webhook.http.post(f"{webhook.url}/validate-workloadspread", json=body) as response:
        answer = await response.json()
    result = answer["response"]
    assert result["allowed"] is False
    assert result["status"]["code"] == 422
    fields = {cause["field"] for cause in result["status"]["details"]["causes"]}
    assert {"spec.subsets[1].name", "spec.subsets[1].maxReplicas"} <= fields
    assert "duplicated subset name a" in result["status"]["message"]


async def test_a_valid_workloadspread_is_allowed(webhook: RunningWebhook) -> None:
    good = spread([zone_subset("a", 3), zone_subset("b")])
    body = review(
        operation="CREATE",
        group="apps.kruise.io",
        version="v1alpha1",
        resource="workloadspreads",
        name="ws",
        obj=good,
    )
    async with webhook.http.post(f"{webhook.url}/validate-workloadspread", json=body) as response:
        answer = await response.json()
    assert answer["response"]["allowed"] is True


def served_serial(port: int, ca_file: Path) -> int:
    context = ssl.create_default_context(cafile=str(ca_file))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


async def serves(port: int, ca_file: Path, serial: int) -> bool:
    return await asyncio.to_thread(served_serial, port, ca_file) == serial


async def test_a_rotated_certificate_is_served_without_a_restart(webhook: RunningWebhook) -> None:
    port, ca_file = webhook.service.port, webhook.tls.ca_file
    before = await asyncio.to_thread(served_serial, port, ca_file)
    rotated = issue_server_cert(webhook.tls.ca, ["127.0.0.1"])
    # As a Secret volume does: new files written beside, then moved into place.
    staging = webhook.tls.server.cert.parent / "staging"
    paths = rotated.write(staging, "webhook")
    paths.key.replace(webhook.tls.server.key)
    paths.cert.replace(webhook.tls.server.cert)
    expected = rotated.certificate().serial_number
    assert expected != before
    await wait_until_async(
        lambda: serves(port, ca_file, expected),
        what=f"certificate {expected} to be served",
        timeout=20,
        interval=0.05,
    )
    assert webhook.service.certificates.loads >= 2


async def test_a_half_rotated_pair_is_refused_and_the_old_pair_keeps_serving(
    webhook: RunningWebhook,
) -> None:
    port, ca_file = webhook.service.port, webhook.tls.ca_file
    certificates = webhook.service.certificates
    before = await asyncio.to_thread(served_serial, port, ca_file)
    rotated = issue_server_cert(webhook.tls.ca, ["127.0.0.1"])
    paths = rotated.write(webhook.tls.server.cert.parent / "staging", "webhook")
    # The new certificate lands before its key: the files on disk do not form a pair.
    paths.cert.replace(webhook.tls.server.cert)
    assert certificates.reload_if_changed() is False
    assert await asyncio.to_thread(served_serial, port, ca_file) == before
    paths.key.replace(webhook.tls.server.key)
    certificates.reload_if_changed()  # or the service's own poll gets there first
    expected = rotated.certificate().serial_number
    await wait_until_async(
        lambda: serves(port, ca_file, expected),
        what=f"certificate {expected} to be served",
        timeout=20,
        interval=0.05,
    )


def sockets_on_port(port: int) -> set[int]:
    """Inodes of this process's TCP sockets whose local port is ``port``: listener and accepted."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as rows:
            for row in list(rows)[1:]:
                fields = row.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(int(fields[9]))
    ours = set()
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            ours.add(int(target[len("socket:[") : -1]))
    return inodes & ours


async def test_stopping_closes_a_kept_alive_connection_whose_client_never_answers_the_tls_close(
    webhook: RunningWebhook,
) -> None:
    port = webhook.service.port
    context = webhook.tls.client_context()
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    body = json.dumps(review(operation="CREATE", resource="pods", obj=pod("kept")))

    def admit() -> int:
        connection.request("POST", "/mutate-pod", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        return response.status

    try:
        # The client keeps the connection open and then reads nothing more, as an API server
        # whose process is frozen would: the server's close_notify is never answered.
        assert await asyncio.to_thread(admit) == 200
        assert len(sockets_on_port(port)) == 2, "the listener and the kept-alive connection"
        await webhook.service.stop()
        assert sockets_on_port(port) == set()
    finally:
        connection.close()
