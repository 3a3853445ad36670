"""The stream follower: full replay, live tail, resume position, and surviving a NATS restart;
each over nats-py's own delivery and over the raw delivery every service's client uses."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import nats
import pytest
from nats.aio.client import Client
from prometheus_client import CollectorRegistry

from spreadbus.runtime.follower import FollowerMetrics, StreamFollower
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.raw_delivery import RawDeliveryClient
from spreadbus.runtime.stream_setup import ensure_streams
from tests.fixtures.polling import wait_until_async


async def connect(url: str, kind: str, **options: object) -> Client:
    if kind == "raw":
        nc = RawDeliveryClient()
        await nc.connect(url, **options)  # type: ignore[arg-type]
        return nc
    return await nats.connect(url, **options)  # type: ignore[arg-type]


@pytest.fixture(params=["nats-py", "raw"])
async def nats_client(
    nats_server: NatsServer, request: pytest.FixtureRequest
) -> AsyncIterator[Client]:
    nc = await connect(nats_server.url, request.param)
    try:
        yield nc
    finally:
        await nc.drain()


@contextlib.asynccontextmanager
async def running(follower: StreamFollower) -> AsyncIterator[StreamFollower]:
    task = asyncio.create_task(follower.run())
    try:
        yield follower
    finally:
        follower.stop()
        await asyncio.wait_for(task, 10)


async def publish(nc: Client, count: int, start: int = 0, objects: int = 0) -> None:
    """``count`` observations, each of its own pod unless cycling over ``objects`` pods."""
    js = nc.jetstream()
    for i in range(start, start + count):
        await js.publish_async(f"kube.obs.c._.pods.ns.p{i % objects if objects else i}",
                               str(i).encode())
    await js.publish_async_completed()


async def test_replays_everything_in_order_then_reports_caught_up_and_follows(
    nats_client: Client,
) -> None:
    await ensure_streams(nats_client.jetstream())
    await publish(nats_client, 3000)
    seen: list[tuple[int, bytes]] = []
    follower = StreamFollower(
        nats_client, stream="KUBE", sink=lambda s, _, d: seen.append((s, d)), batch=500
    )
    async with running(follower):
        await asyncio.wait_for(follower.wait_caught_up(), 20)
        assert [s for s, _ in seen] == list(range(1, 3001))
        assert [int(d) for _, d in seen] == list(range(3000))
        await publish(nats_client, 5, start=3000)
        await wait_until_async(lambda: follower.last_seq == 3005, what="follower.last_seq == 3005")
        assert follower.caught_up


async def test_an_empty_stream_is_caught_up_at_once(nats_client: Client) -> None:
    await ensure_streams(nats_client.jetstream())
    follower = StreamFollower(nats_client, stream="PLANS", sink=lambda s, _, d: None)
    async with running(follower):
        await asyncio.wait_for(follower.wait_caught_up(), 10)
        assert follower.last_seq == 0


async def test_starting_after_a_position_skips_what_was_already_applied(
    nats_client: Client,
) -> None:
    await ensure_streams(nats_client.jetstream())
    await publish(nats_client, 100)
    seen: list[int] = []
    follower = StreamFollower(
        nats_client, stream="KUBE", sink=lambda s, _, d: seen.append(s), start_seq=61
    )
    async with running(follower):
        await asyncio.wait_for(follower.wait_caught_up(), 10)
    assert seen == list(range(61, 101))


async def test_messages_replaced_by_newer_ones_of_their_object_are_skipped_without_a_restart(
    nats_client: Client,
) -> None:
    await ensure_streams(nats_client.jetstream())
    await publish(nats_client, 100, objects=7)  # KUBE keeps each pod's latest: sequences 94-100
    seen: list[tuple[int, bytes]] = []
    registry = CollectorRegistry()
    follower = StreamFollower(nats_client, stream="KUBE", metrics=FollowerMetrics(registry),
                              sink=lambda s, _, d: seen.append((s, d)))
    async with running(follower):
        await asyncio.wait_for(follower.wait_caught_up(), 10)
    assert seen == [(s, str(s - 1).encode()) for s in range(94, 101)]
    restarts = registry.get_sample_value("spreadbus_follower_restarts_total", {"stream": "KUBE"})
    assert not restarts  # the gaps in stream sequences are not delivery gaps


async def test_only_the_wanted_subjects_reach_the_sink(nats_client: Client) -> None:
    js = nats_client.jetstream()
    await ensure_streams(js)
    await js.publish("kube.obs.c.apps.deployments.ns.d", b"d")
    await js.publish("kube.obs.c._.pods.ns.p", b"p")
    await js.publish("kube.sync.c.apps.deployments", b"s")
    seen: list[str] = []
    follower = StreamFollower(
        nats_client,
        stream="KUBE",
        sink=lambda s, subject, d: seen.append(subject),
        subjects=["kube.obs.*.apps.deployments.>", "kube.sync.*.apps.deployments"],
    )
    async with running(follower):
        await asyncio.wait_for(follower.wait_caught_up(), 10)
    assert seen == ["kube.obs.c.apps.deployments.ns.d", "kube.sync.c.apps.deployments"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["nats-py", "raw"])
async def test_a_nats_server_restart_loses_and_repeats_nothing(
    nats_server: NatsServer, kind: str
) -> None:
    nc = await connect(nats_server.url, kind, max_reconnect_attempts=-1, reconnect_time_wait=0.2)
    try:
        await ensure_streams(nc.jetstream())
        await publish(nc, 200)
        seen: list[int] = []
        follower = StreamFollower(
            nc, stream="KUBE", sink=lambda s, _, d: seen.append(s), heartbeat_seconds=0.5
        )
        async with running(follower):
            await asyncio.wait_for(follower.wait_caught_up(), 10)
            await asyncio.to_thread(nats_server.restart)
            await wait_until_async(lambda: nc.is_connected, what="nc.is_connected")
            await publish(nc, 50, start=200)
            await wait_until_async(
                lambda: follower.last_seq == 250, what="follower.last_seq == 250", timeout=30
            )
        assert seen == list(range(1, 251))
    finally:
        await nc.close()
