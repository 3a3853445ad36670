"""A follower out of contact longer than its limit stops instead of tailing on.

KUBE keeps each object's latest observation forever but a deletion's tombstone only for its TTL,
so a follower that resumed at ``last_seq + 1`` after a longer silence could keep a deleted object
forever. Past ``max_silence_seconds`` of its wall clock it raises ``FollowerTooStale`` when it
would recreate its consumer; within the limit it resumes and sees what came later. The wall clock
is a fake one the tests move, the server is real; a consumer restart is forced by deleting the
consumer on the server or by stopping the server.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import nats
import pytest
from nats.aio.client import Client
from prometheus_client import CollectorRegistry

from events.streams import KUBE
from spreadbus.runtime.follower import (
    FollowerMetrics,
    FollowerTooStale,
    StreamFollower,
)
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.stream_setup import ensure_streams
from tests.fixtures.manual_clock import ManualClock
from tests.fixtures.polling import wait_until_async

LIMIT = 1000.0


async def publish(nc: Client, start: int, count: int) -> None:
    js = nc.jetstream()
    for i in range(start, start + count):
        await js.publish(f"kube.obs.c._.pods.ns.p{i}", str(i).encode())


def restarts(registry: CollectorRegistry) -> float:
    labels = {"stream": KUBE.name}
    return registry.get_sample_value("spreadbus_follower_restarts_total", labels) or 0


async def delete_consumers(nc: Client) -> None:
    js = nc.jetstream()
    for info in await js.consumers_info(KUBE.name):
        await js.delete_consumer(KUBE.name, info.name)


@pytest.fixture
async def reconnecting_client(nats_server: NatsServer) -> AsyncIterator[Client]:
    nc = await nats.connect(nats_server.url, max_reconnect_attempts=-1, reconnect_time_wait=0.2)
    try:
        await ensure_streams(nc.jetstream())
        yield nc
    finally:
        await nc.close()


@contextlib.asynccontextmanager
async def following(
    nc: Client, clock: ManualClock, **options: Any
) -> AsyncIterator[tuple[StreamFollower, asyncio.Task[None], list[int]]]:
    """A follower of KUBE with the silence limit on ``clock``, caught up, then stopped; with its
    run and the stream sequences it was given."""
    seen: list[int] = []
    follower = StreamFollower(nc, stream=KUBE.name, sink=lambda s, _, d: seen.append(s),
                              max_silence_seconds=LIMIT, wall_clock=clock, **options)
    task = asyncio.create_task(follower.run())
    try:
        await asyncio.wait_for(follower.wait_caught_up(), 10)
        yield follower, task, seen
    finally:
        follower.stop()
        if not task.done():
            await asyncio.wait_for(task, 10)


async def test_a_consumer_lost_within_the_limit_is_recreated_and_sees_later_messages(
    nats_client: Client,
) -> None:
    await ensure_streams(nats_client.jetstream())
    await publish(nats_client, 0, 3)
    clock, registry = ManualClock(), CollectorRegistry()
    metrics = FollowerMetrics(registry)
    async with following(nats_client, clock, metrics=metrics) as (follower, task, seen):
        clock.now += LIMIT * 0.9
        await delete_consumers(nats_client)
        await wait_until_async(lambda: restarts(registry) >= 1, what="a consumer restart")
        await publish(nats_client, 3, 2)
        await wait_until_async(lambda: follower.last_seq == 5, what="follower.last_seq == 5")
        assert seen == [1, 2, 3, 4, 5]
        assert not task.done()


async def test_a_consumer_lost_after_a_silence_past_the_limit_ends_the_run_naming_it(
    nats_client: Client,
) -> None:
    await ensure_streams(nats_client.jetstream())
    await publish(nats_client, 0, 3)
    clock = ManualClock()
    async with following(nats_client, clock, heartbeat_seconds=5.0) as (_, task, seen):
        clock.now += LIMIT + 1
        await delete_consumers(nats_client)
        with pytest.raises(FollowerTooStale, match=r"KUBE.* 1001 s.* 1000 s"):
            await asyncio.wait_for(task, 30)
        assert seen == [1, 2, 3]
        assert not await nats_client.jetstream().consumers_info(KUBE.name)


async def test_a_follower_cut_off_from_a_stopped_server_past_the_limit_does_not_resume(
    nats_server: NatsServer, reconnecting_client: Client
) -> None:
    nc = reconnecting_client
    await publish(nc, 0, 3)
    clock = ManualClock()
    async with following(nc, clock, heartbeat_seconds=0.2) as (follower, task, _):
        await asyncio.to_thread(nats_server.kill)
        clock.now += 2 * LIMIT
        await asyncio.to_thread(nats_server.restart)
        with pytest.raises(FollowerTooStale):
            await asyncio.wait_for(task, 30)
        assert follower.last_seq == 3


async def test_a_follower_that_never_reached_the_server_is_not_stale(nats_client: Client) -> None:
    await ensure_streams(nats_client.jetstream())
    await publish(nats_client, 0, 3)
    # Every reading of this clock is far past the limit from the one before.
    clock = ManualClock(step=10 * LIMIT)
    async with following(nats_client, clock) as (_, task, seen):
        assert seen == [1, 2, 3]
        assert not task.done()
