"""The planner process: lease, planner engine and readiness, inside the shared service shell.

The planner runs the rules of every registered feature (:mod:`spreadbus.features.registry`)
and follows their side streams. What it reads and writes on the bus (streams, the features'
buckets, its lease bucket and snapshot store) is created by the setup step
(``spreadbus bus-setup``); the service shell waits for it before the planner starts.

The lease, the planner and the readiness loop run as three tasks under :func:`supervise`: if
any of them ends before a stop request, the planner steps down at once and the process exits
non-zero, so a dead lease task never leaves a replica deciding next to the standby that takes
over its expired lease.

With ``--shards N`` each shard is a planner group of its own: its replicas read its namespaces
(:mod:`events.shards`), and compete for the shard's lease (``planner.<cluster>.shard-<i>-of-<N>``)
and write the shard's snapshot, so every shard has its leader and its standbys.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Coroutine
from typing import Any

from services.planner.planner import Planner
from services.planner.settings import PlannerSettings
from spreadbus.engine.feature import PlannerContext, PlannerSide
from spreadbus.runtime.lease import Lease
from spreadbus.runtime.service import ServiceContext
from spreadbus.runtime.shutdown import sleep_unless_stopping
from spreadbus.runtime.snapshot_store import SnapshotStore

CAUGHT_UP = "caught_up"


async def main(settings: PlannerSettings, ctx: ServiceContext) -> None:
    sides = await planner_sides(settings, ctx)
    planner = Planner(
        ctx.nc,
        cluster=settings.cluster,
        rules=[rule for side in sides for rule in side.rules],
        streams=[stream for side in sides for stream in side.streams],
        snapshots=SnapshotStore(ctx.nc, bucket=settings.snapshot_bucket),
        snapshot_every=settings.snapshot_every,
        snapshot_interval_seconds=settings.snapshot_interval_seconds,
        batch=settings.replay_batch,
        round_spacing_seconds=settings.round_spacing_seconds,
        registry=ctx.registry,
        shards=settings.shard_of,
    )
    await planner.restore()
    holder = settings.planner_id or f"{socket.gethostname()}-{os.getpid()}"
    lease = Lease(ctx.js, key=lease_key(settings), holder=holder,
                  ttl_seconds=settings.lease_ttl_seconds, on_change=planner.set_leader)

    halt = asyncio.Event()  # the planner's own stop: a stop request, or a companion's death

    async def readiness() -> None:
        while True:
            ctx.gate.set(CAUGHT_UP, planner.caught_up)
            if await sleep_unless_stopping(halt, 0.5):
                return

    await supervise(planner, lease, readiness(), ctx.stopping, halt)


def lease_key(settings: PlannerSettings) -> str:
    """One lease per planner group: the cluster's, or its shard's."""
    key = f"planner.{settings.cluster}"
    return f"{key}.{settings.shard_of.name}" if settings.shards > 1 else key


async def planner_sides(settings: PlannerSettings, ctx: ServiceContext) -> list[PlannerSide]:
    """Every registered feature's planner side, in registry order, each with its settings."""
    return [
        await f.planner(PlannerContext(cluster=settings.cluster, settings=settings.settings_of(f),
                                       nc=ctx.nc, shards=settings.shard_of))
        for f in settings.features() if f.planner is not None
    ]


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
