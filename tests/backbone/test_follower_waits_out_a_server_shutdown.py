"""A nats-server shutting down costs the stream follower no request timeout.

A server that shuts down gracefully answers the open pull request with ``409 Server Shutdown``
just before it closes the connection. A consumer created at once on that connection is asked
for on a socket the server no longer reads: the answer never comes, and the follower would wait
out the JetStream request timeout (5 s) with its projection frozen, although the client is
connected again within a fraction of a second. The follower waits for the reconnect instead.
"""

from __future__ import annotations

import asyncio
import logging

import nats
import pytest
from nats.aio.client import Client

from spreadbus.runtime.follower import StreamFollower
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.raw_delivery import RawDeliveryClient
from spreadbus.runtime.stream_setup import ensure_streams
from tests.fixtures.polling import wait_until_async


async def connect(url: str, kind: str) -> Client:
    options: dict[str, object] = {"max_reconnect_attempts": -1, "reconnect_time_wait": 0.2}
    if kind == "raw":
        nc = RawDeliveryClient()
        await nc.connect(url, **options)  # type: ignore[arg-type]
        return nc
    return await nats.connect(url, **options)  # type: ignore[arg-type]


async def publish(nc: Client, start: int, count: int) -> None:
    js = nc.jetstream()
    for i in range(start, start + count):
        await js.publish(f"kube.obs.c._.pods.ns.p{i}", str(i).encode())


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["nats-py", "raw"])
async def test_a_server_shutdown_is_followed_by_a_new_consumer_once_reconnected(
    nats_server: NatsServer, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    nc = await connect(nats_server.url, kind)
    try:
        await ensure_streams(nc.jetstream())
        await publish(nc, 0, 10)
        follower = StreamFollower(nc, stream="KUBE", sink=lambda *_: None, heartbeat_seconds=0.5)
        task = asyncio.create_task(follower.run())
        try:
            await asyncio.wait_for(follower.wait_caught_up(), 10)
            with caplog.at_level(logging.INFO, logger="spreadbus.runtime.follower"):
                await asyncio.to_thread(nats_server.restart)
                await wait_until_async(lambda: nc.is_connected, what="nc.is_connected")
                await publish(nc, 10, 10)
                await wait_until_async(lambda: follower.last_seq == 20,
                                       what="follower.last_seq == 20", timeout=30)
        finally:
            follower.stop()
            await asyncio.wait_for(task, 10)
    finally:
        await nc.close()
    messages = [(r.getMessage(), getattr(r, "why", getattr(r, "error", None)))
                for r in caplog.records]
    assert ("follower restarting", "status 409 Server Shutdown") in messages
    assert [m for m in messages if m[0] == "follower error"] == [], messages
