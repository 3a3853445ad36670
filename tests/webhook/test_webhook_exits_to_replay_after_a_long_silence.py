"""A webhook whose view was cut off from NATS past the trusted share of the tombstone TTL exits 1.

Its view could still hold a pod or a WorkloadSpread whose deletion expired from the stream
unseen, and steer pods by it for good. So the service ends with the follower's error: the shell
exits 1, and the restart replays the observation stream from the start.
"""

from __future__ import annotations

import asyncio
import logging

import nats
import pytest

from events import codec, streams, subjects
from events.messages import SyncMarker
from spreadbus.runtime.follower import TOMBSTONE_TRUSTED_SHARE
from spreadbus.runtime.nats_server import NatsServer
from tests.fixtures.manual_clock import ManualClock
from tests.fixtures.polling import wait_until_async
from tests.webhook.conftest import WebhookTls, webhook_shell

DEPLOYMENTS_LISTED = SyncMarker(
    cluster="c1", group="apps", version="v1", resource="deployments", complete=True
)


async def test_a_webhook_out_of_contact_past_the_trusted_share_of_the_ttl_exits_1_to_replay(
    nats_server: NatsServer, webhook_tls: WebhookTls, caplog: pytest.LogCaptureFixture
) -> None:
    clock = ManualClock()
    async with webhook_shell(nats_server, webhook_tls, wall_clock=clock) as running:
        follower = running.service.follower
        assert follower is not None
        await wait_until_async(lambda: follower.caught_up, what="the view to catch up")
        await asyncio.to_thread(nats_server.kill)
        clock.now += TOMBSTONE_TRUSTED_SHARE * streams.TOMBSTONE_TTL_SECONDS + 1
        await asyncio.to_thread(nats_server.restart)
        with caplog.at_level(logging.ERROR):
            code = await asyncio.wait_for(asyncio.shield(running.shell), 60)
        assert code == 1
        assert not running.stopping.is_set()
        assert any("replay from the start" in r.getMessage() for r in caplog.records)
        assert any(
            r.getMessage() == "service failed" and "KUBE" in str(r.exc_info and r.exc_info[1])
            for r in caplog.records
        )


async def test_a_webhook_out_of_contact_within_the_trusted_share_keeps_serving(
    nats_server: NatsServer, webhook_tls: WebhookTls
) -> None:
    clock = ManualClock()
    async with webhook_shell(nats_server, webhook_tls, wall_clock=clock) as running:
        service = running.service
        follower = service.follower
        assert follower is not None
        await wait_until_async(lambda: follower.caught_up, what="the view to catch up")
        await asyncio.to_thread(nats_server.kill)
        clock.now += TOMBSTONE_TRUSTED_SHARE * streams.TOMBSTONE_TTL_SECONDS - 60
        await asyncio.to_thread(nats_server.restart)
        # The view folds what the stream receives after the silence: it kept following.
        nc = await nats.connect(nats_server.url)
        try:
            await nc.jetstream().publish(
                subjects.sync("c1", "apps", "deployments"), codec.encode(DEPLOYMENTS_LISTED)
            )
        finally:
            await nc.close()
        await wait_until_async(
            lambda: ("apps", "deployments") in service.sides["workloadspread"].view.synced,
            what="the view to fold a marker published after the silence",
            timeout=60,
        )
        assert not running.shell.done()
        assert await asyncio.wait_for(running.stop(), 30) == 0
