"""A running webhook replica with real TLS (development CA) and a real nats-server."""

from __future__ import annotations

import asyncio
import base64
import ssl
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from services.webhook.service import CAUGHT_UP, WebhookService, WebhookSettings, main
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.service import ServiceContext, run_service
from tlsserving import CertKeyPair, PemPaths, issue_server_cert, make_ca

ROOT = Path(__file__).resolve().parents[2]


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
    health_port: int
    tls: WebhookTls
    http: aiohttp.ClientSession

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.service.port}"

    @property
    def health_url(self) -> str:
        return f"http://127.0.0.1:{self.health_port}"


@dataclass
class WebhookShell:
    """A webhook replica in the same service shell as ``spreadbus webhook`` runs it."""

    service: WebhookService
    health_port: int
    shell: asyncio.Task[int]
    """Ends with the shell's exit code."""
    stopping: asyncio.Event

    def stop(self) -> asyncio.Task[int]:
        """Ask the shell to stop, as SIGTERM does; the task ends with its exit code."""
        self.stopping.set()
        return self.shell


@asynccontextmanager
async def webhook_shell(
    nats_server: NatsServer,
    tls: WebhookTls,
    *,
    wall_clock: Callable[[], float] = time.time,
    **settings: Any,
) -> AsyncIterator[WebhookShell]:
    """The webhook started with ``settings`` over the tests' own, stopped on leaving; the exit
    code is the caller's to check (:meth:`WebhookShell.stop`)."""
    config = WebhookSettings(
        nats_url=(nats_server.url,),
        cluster="c1",
        host="127.0.0.1",
        port=0,
        http_host="127.0.0.1",
        http_port=0,
        tls_cert=str(tls.server.cert),
        tls_key=str(tls.server.key),
        **settings,
    )
    stopping = asyncio.Event()
    started: asyncio.Future[tuple[WebhookService, int]] = asyncio.get_running_loop().create_future()

    async def body(ctx: ServiceContext) -> None:
        await main(
            config,
            ctx,
            lambda service: started.set_result((service, ctx.health.port)),
            wall_clock=wall_clock,
        )

    shell = asyncio.create_task(
        run_service("webhook", config, body, conditions=(CAUGHT_UP,), stopping=stopping)
    )
    try:
        waiting: set[asyncio.Future[object]] = {shell, started}  # type: ignore[arg-type]
        await asyncio.wait(waiting, timeout=30, return_when=asyncio.FIRST_COMPLETED)
        assert started.done(), (
            f"webhook did not start: exit code {shell.result()}"
            if shell.done()
            else "webhook did not start within 30 s"
        )
        service, health_port = started.result()
        yield WebhookShell(service, health_port, shell, stopping)
    finally:
        stopping.set()
        await asyncio.gather(shell, return_exceptions=True)


def local_configurations(port: int, ca_pem: bytes) -> list[dict[str, Any]]:
    """The installation's webhook configurations, addressed to the local replica by URL."""
    bundle = base64.b64encode(ca_pem).decode()
    docs = []
    for name in ("mutating.yaml", "validating.yaml"):
        doc = yaml.safe_load((ROOT / "deploy" / "webhook" / name).read_text())
        for hook in doc["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": bundle}
        docs.append(doc)
    return docs


@pytest.fixture
async def webhook(
    nats_server: NatsServer, webhook_tls: WebhookTls
) -> AsyncIterator[RunningWebhook]:
    """The webhook in the same service shell as ``spreadbus webhook`` runs it."""
    async with webhook_shell(nats_server, webhook_tls, cert_check_seconds=0.05) as running:
        connector = aiohttp.TCPConnector(ssl=webhook_tls.client_context())
        try:
            async with aiohttp.ClientSession(connector=connector) as http:
                yield RunningWebhook(running.service, running.health_port, webhook_tls, http)
        finally:
            assert await running.stop() == 0
