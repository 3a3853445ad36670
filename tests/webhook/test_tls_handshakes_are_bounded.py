"""A connection that never completes its TLS handshake cannot outlive the webhook, nor linger.

Stopping the webhook aborts connections still in their handshake, however long the handshake
timeout; while serving, the handshake timeout closes them. The peer here opens TCP and never
sends a ClientHello, as a port scanner or a TCP health probe does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp

from services.webhook.service import WebhookService
from spreadbus.runtime.nats_server import NatsServer
from tests.fixtures.polling import wait_until_async
from tests.webhook.admission_reviews import pod, review
from tests.webhook.conftest import WebhookTls, webhook_shell
from tlsserving.https_site import HttpsSite


async def closed_by_the_server(reader: asyncio.StreamReader) -> bool:
    """Waits for the server to close the connection: end of stream or a reset."""
    try:
        return await reader.read(1) == b""
    except ConnectionResetError:
        return True


@asynccontextmanager
async def silent_peer(
    service: WebhookService,
) -> AsyncIterator[tuple[HttpsSite, asyncio.StreamReader]]:
    """A TCP connection to the webhook that never sends a ClientHello, its handshake begun;
    with the webhook's site, and the stream the server's close shows on."""
    site = service.site
    assert site is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", service.port)
    try:
        await wait_until_async(lambda: site.handshaking == 1, what="the handshake to start")
        yield site, reader
    finally:
        writer.close()


async def test_stopping_the_webhook_aborts_a_connection_still_in_its_tls_handshake(
    nats_server: NatsServer, webhook_tls: WebhookTls
) -> None:
    # A handshake timeout far beyond the deadlines below: only the stop can close it.
    async with (
        webhook_shell(nats_server, webhook_tls, tls_handshake_timeout_seconds=600) as running,
        silent_peer(running.service) as (site, reader),
    ):
        assert await asyncio.wait_for(running.stop(), 30) == 0
        assert await asyncio.wait_for(closed_by_the_server(reader), 30)
        assert site.handshaking == 0


async def test_a_handshake_that_never_completes_is_closed_by_the_timeout_while_serving_on(
    nats_server: NatsServer, webhook_tls: WebhookTls
) -> None:
    async with webhook_shell(
        nats_server, webhook_tls, tls_handshake_timeout_seconds=0.2
    ) as running:
        async with silent_peer(running.service) as (site, reader):
            assert await asyncio.wait_for(closed_by_the_server(reader), 30)
            await wait_until_async(lambda: site.handshaking == 0, what="the handshake to end")
        connector = aiohttp.TCPConnector(ssl=webhook_tls.client_context())
        async with aiohttp.ClientSession(connector=connector) as http:
            body = review(operation="CREATE", resource="pods", obj=pod(generate_name="web-"))
            url = f"https://127.0.0.1:{running.service.port}/mutate-pod"
            async with http.post(url, json=body) as r:
                assert r.status == 200
                assert (await r.json())["response"]["allowed"] is True
