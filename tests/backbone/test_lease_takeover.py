"""Planner leadership: one holder at a time, a standby takes over when the holder dies.

Each test's lease bucket is created as the setup step creates the planner's, with the TTL the
test needs."""

from __future__ import annotations

import asyncio
import contextlib

import nats
from nats.aio.client import Client

from spreadbus.engine.bus_access import BucketSpec
from spreadbus.runtime.bus_setup import ensure_bucket
from spreadbus.runtime.lease import Lease
from spreadbus.runtime.nats_server import NatsServer
from tests.fixtures.polling import wait_until_async


async def lease_bucket(nc: Client, ttl: float) -> str:
    name = f"leases-{ttl:g}"
    await ensure_bucket(nc.jetstream(), BucketSpec(name=name, history=1, ttl_seconds=ttl))
    return name


async def test_a_standby_takes_over_after_the_leader_dies_without_stepping_down(
    nats_server: NatsServer,
) -> None:
    nc_a = await nats.connect(nats_server.url)
    nc_b = await nats.connect(nats_server.url)
    bucket = await lease_bucket(nc_a, 2.0)
    a = Lease(nc_a.jetstream(), key="planner", holder="a", ttl_seconds=2.0, bucket=bucket)
    b = Lease(nc_b.jetstream(), key="planner", holder="b", ttl_seconds=2.0, bucket=bucket)
    task_a = asyncio.create_task(a.run())
    try:
        await wait_until_async(lambda: a.is_leader, what="a.is_leader")
        task_b = asyncio.create_task(b.run())
        # b keeps trying for a while and must not become leader while a renews.
        for _ in range(30):
            await asyncio.sleep(0.1)
            assert not b.is_leader
        await nc_a.close()  # a dies: it can neither renew nor delete its key
        await wait_until_async(
            lambda: b.is_leader and not a.is_leader,
            what="b.is_leader and not a.is_leader",
            timeout=15,
        )
        b.stop()
        await asyncio.wait_for(task_b, 10)
        assert not b.is_leader
    finally:
        a.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task_a, 10)
        await nc_b.close()


async def test_a_leader_stepping_down_hands_over_at_once(nats_server: NatsServer) -> None:
    nc = await nats.connect(nats_server.url)
    changes: list[tuple[str, bool]] = []
    bucket = await lease_bucket(nc, 12.0)
    a = Lease(
        nc.jetstream(),
        key="p",
        holder="a",
        bucket=bucket,
        ttl_seconds=12.0,
        on_change=lambda v: changes.append(("a", v)),
    )
    b = Lease(
        nc.jetstream(),
        key="p",
        holder="b",
        bucket=bucket,
        ttl_seconds=12.0,
        on_change=lambda v: changes.append(("b", v)),
    )
    try:
        task_a = asyncio.create_task(a.run())
        await wait_until_async(lambda: a.is_leader, what="a.is_leader")
        task_b = asyncio.create_task(b.run())
        a.stop()
        await asyncio.wait_for(task_a, 10)
        # With a 12 s TTL, only the deleted key lets b in this soon (b polls every 3 s).
        await wait_until_async(lambda: b.is_leader, what="b.is_leader", timeout=8)
        assert changes == [("a", True), ("a", False), ("b", True)]
        b.stop()
        await asyncio.wait_for(task_b, 10)
    finally:
        await nc.close()


async def test_replicas_configured_differently_adopt_the_buckets_lease_duration(
    nats_server: NatsServer,
) -> None:
    nc = await nats.connect(nats_server.url)
    try:
        bucket = await lease_bucket(nc, 2.0)
        first = Lease(nc.jetstream(), key="k", holder="a", ttl_seconds=2.0, bucket=bucket)
        second = Lease(nc.jetstream(), key="k", holder="b", ttl_seconds=30.0, bucket=bucket)
        await first._bucket()
        await second._bucket()
        assert second.ttl == 2.0
    finally:
        await nc.close()
