"""The planner process: lease, planner engine and readiness, inside the shared service shell.

The planner follows the webhook's reservation bucket (see
:mod:`spreadbus.projection.reservations`). Whichever of the two services starts first creates
the bucket, with the same settings, so neither waits for the other.

The lease, the planner and the readiness loop run as three tasks under :func:`supervise`: if
any of them ends before a stop request, the planner steps down at once and the process exits
non-zero, so a dead lease task never leaves a replica deciding next to the standby that takes
over its expired lease.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Coroutine
from typing import Any

from services.planner.planner import Planner
from services.planner.rules import default_rules
from services.planner.settings import PlannerSettings
from spreadbus.core.workloadspread.custom_workloads import parse_whitelist
from spreadbus.projection.reservations import ReservationLedgers
from spreadbus.runtime.lease import Lease
from spreadbus.runtime.reservation_bucket import reservation_bucket
from spreadbus.runtime.service import ServiceContext
from spreadbus.runtime.shutdown import sleep_unless_stopping
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
            whitelist=parse_whitelist(settings.workload_whitelist or None),  # checked on load
            adaptive_recover_seconds=settings.adaptive_recover_seconds,
            workloadspread_min_interval_seconds=settings.workloadspread_min_interval_seconds,
        ),
        reservations=reservations,
        snapshots=SnapshotStore(
            ctx.nc, bucket=settings.snapshot_bucket, replicas=settings.nats_replicas
        ),
        snapshot_every=settings.snapshot_every,
        snapshot_interval_seconds=settings.snapshot_interval_seconds,
        batch=settings.replay_batch,
        round_spacing_seconds=settings.round_spacing_seconds,
        registry=ctx.registry,
    )
    await planner.restore()
    holder = settings.planner_id or f"{socket.gethostname()}-{os.getpid()}"
    lease = Lease(ctx.js, key=f"planner.{settings.cluster}", holder=holder,
                  ttl_seconds=settings.lease_ttl_seconds, on_change=planner.set_leader,
                  replicas=settings.nats_replicas)

    halt = asyncio.Event()  # the planner's own stop: a stop request, or a companion's death

    async def readiness() -> None:
        while True:
            ctx.gate.set(CAUGHT_UP, planner.caught_up)
            if await sleep_unless_stopping(halt, 0.5):
                return

    await supervise(planner, lease, readiness(), ctx.stopping, halt)


async def supervise(planner: Planner, lease: Lease, readiness: Coroutine[Any, Any, None],
                    stopping: asyncio.Event, halt: asyncio.Event) -> None:
    """Run the planner, its lease and its readiness until a stop request or one of them ends.

    Only the planner ends on a stop request. The lease or readiness loop ending by itself is a
    bug: the planner steps down at once (a lease nobody renews expires, and a standby takes
    over; deciding on would make two leaders) and the exception makes the process exit non-zero
    so its supervisor restarts it.
    """
    lease_task = asyncio.create_task(lease.run(), name="lease")
    ready_task = asyncio.create_task(readiness, name="readiness")
    planner_task = asyncio.create_task(planner.run(halt), name="planner")
    stop_wait = asyncio.create_task(stopping.wait())
    try:
        done, _ = await asyncio.wait({lease_task, ready_task, planner_task, stop_wait},
                                     return_when=asyncio.FIRST_COMPLETED)
        ended = [task for task in (lease_task, ready_task, planner_task) if task in done]
        if ended:
            planner.set_leader(False)
            task = ended[0]
            cause = None if task.cancelled() else task.exception()
            raise CompanionEnded(f"planner {task.get_name()} task ended") from cause
    finally:
        halt.set()
        lease.stop()
        stop_wait.cancel()
        await asyncio.gather(lease_task, ready_task, planner_task, return_exceptions=True)


class CompanionEnded(RuntimeError):
    """A task the planner cannot decide without ended before the service was asked to stop."""
