"""The planner process: lease, planner engine and readiness, inside the shared service shell.

The planner follows the webhook's reservation bucket (see
:mod:`spreadbus.projection.reservations`). Whichever of the two services starts first creates
the bucket, with the same settings, so neither waits for the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket

from services.planner.planner import Planner
from services.planner.rules import default_rules
from services.planner.settings import PlannerSettings
from spreadbus.core.workloadspread.custom_workloads import parse_whitelist
from spreadbus.projection.reservations import ReservationLedgers
from spreadbus.runtime.lease import Lease
from spreadbus.runtime.reservation_bucket import reservation_bucket
from spreadbus.runtime.service import ServiceContext
from spreadbus.runtime.snapshot_store import SnapshotStore

CAUGHT_UP = "caught_up"


async def main(settings: PlannerSettings, ctx: ServiceContext) -> None:
    await reservation_bucket(ctx.nc, settings.nats_replicas)
    reservations = ReservationLedgers(settings.cluster)
    planner = Planner(
        ctx.nc,
        cluster=settings.cluster,
        rules=default_rules(
            settings.cluster,
            reservations=reservations,
            whitelist=parse_whitelist(settings.workload_whitelist or None),
            adaptive_recover_seconds=settings.adaptive_recover_seconds,
            workloadspread_min_interval_seconds=settings.workloadspread_min_interval_seconds,
        ),
        reservations=reservations,
        snapshots=SnapshotStore(ctx.js, bucket=settings.snapshot_bucket),
        snapshot_every=settings.snapshot_every,
        snapshot_interval_seconds=settings.snapshot_interval_seconds,
        batch=settings.replay_batch,
        registry=ctx.registry,
    )
    await planner.restore()
    holder = settings.planner_id or f"{socket.gethostname()}-{os.getpid()}"
    lease = Lease(ctx.js, key=f"planner.{settings.cluster}", holder=holder,
                  ttl_seconds=settings.lease_ttl_seconds, on_change=planner.set_leader)

    async def readiness() -> None:
        while not ctx.stopping.is_set():
            ctx.gate.set(CAUGHT_UP, planner.caught_up)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ctx.stopping.wait(), 0.5)

    lease_task = asyncio.create_task(lease.run())
    ready_task = asyncio.create_task(readiness())
    try:
        await planner.run(ctx.stopping)
    finally:
        lease.stop()
        await asyncio.gather(lease_task, ready_task, return_exceptions=True)
