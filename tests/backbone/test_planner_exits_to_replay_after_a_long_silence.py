"""A planner whose followers were out of contact past the trusted share of the tombstone TTL ends.

Tailing on could keep an object whose deletion expired unseen; ending its run makes the service
exit non-zero, and the restart replays from the start (its snapshot is as old as the silence, so
it is distrusted too).
"""

from __future__ import annotations

import asyncio
import logging

import nats
import pytest

from services.planner.planner import SNAPSHOT_TRUSTED_SHARE, Planner
from spreadbus.runtime.follower import FollowerTooStale
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.stream_setup import ensure_streams
from tests.fixtures.manual_clock import ManualClock
from tests.fixtures.polling import wait_until_async

TTL = 1000.0


async def test_a_planner_out_of_contact_past_the_trusted_share_of_the_ttl_ends_its_run(
    nats_server: NatsServer, caplog: pytest.LogCaptureFixture
) -> None:
    nc = await nats.connect(nats_server.url, max_reconnect_attempts=-1, reconnect_time_wait=0.2)
    await ensure_streams(nc.jetstream())
    clock = ManualClock(1_000_000.0)
    planner = Planner(nc, cluster="c1", rules=[], clock=clock, tombstone_ttl_seconds=TTL)
    stopping = asyncio.Event()
    task = asyncio.create_task(planner.run(stopping))
    try:
        await wait_until_async(lambda: planner.caught_up, what="the planner to catch up")
        await asyncio.to_thread(nats_server.kill)
        clock.now += SNAPSHOT_TRUSTED_SHARE * TTL + 1
        await asyncio.to_thread(nats_server.restart)
        # Every follower of the planner went silent; whichever notices first ends the run.
        stale = pytest.raises(FollowerTooStale, match="out of contact")
        with caplog.at_level(logging.ERROR), stale:
            await asyncio.wait_for(task, 30)
        assert any("replay from the start" in r.getMessage() for r in caplog.records)
    finally:
        stopping.set()
        await asyncio.gather(task, return_exceptions=True)
        await nc.close()
