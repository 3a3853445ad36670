"""A running webhook replica with real TLS (development CA) and a real nats-server."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from services.webhook.service import WebhookService, WebhookSettings
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.tls import CertKeyPair, PemPaths, issue_server_cert, make_ca


@dataclass
class WebhookTls:
    ca: CertKeyPair
    ca_file: Path
    server: PemPaths

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))


@pytest.fixture
def webhook_tls(tmp_path: Path) -> WebhookTls:
    ca = make_ca("spreadbus test CA")
    ca_paths = ca.write(tmp_path / "tls", "ca")
    server = issue_server_cert(ca, ["127.0.0.1", "localhost"]).write(tmp_path / "tls", "webhook")
    return WebhookTls(ca, ca_paths.cert, server)


@dataclass
class RunningWebhook:
    service: WebhookService
    tls: WebhookTls
    http: aiohttp.ClientSession

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.service.port}"

    @property
    def health_url(self) -> str:
        return f"http://127.0.0.1:{self.service.health.port}"


@pytest.fixture
async def webhook(
    nats_server: NatsServer, webhook_tls: WebhookTls
) -> AsyncIterator[RunningWebhook]:
    settings = WebhookSettings(
        nats_url=(nats_server.url,),
        cluster="c1",
        host="127.0.0.1",
        port=0,
        http_host="127.0.0.1",
        http_port=0,
        tls_cert=str(webhook_tls.server.cert),
        tls_key=str(webhook_tls.server.key),
        cert_check_seconds=0.05,
    )
    service = WebhookService(settings)
    await service.start()
    connector = aiohttp.TCPConnector(ssl=webhook_tls.client_context())
    try:
        async with aiohttp.ClientSession(connector=connector) as http:
            yield RunningWebhook(service, webhook_tls, http)
    finally:
        await service.stop()
