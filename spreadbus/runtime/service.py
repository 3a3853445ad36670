"""The shell every service runs in: logs, health server, NATS, streams, signals, clean exit.

A service is an ``async def main(ctx: ServiceContext) -> None`` that runs until
``ctx.stopping`` is set (SIGTERM/SIGINT) and flips readiness conditions on ``ctx.gate``. The shell
configures JSON logging, starts ``/healthz``, ``/readyz``, ``/metrics``, connects to NATS
(reconnecting forever), waits until the streams and buckets it needs exist (``needs``; the
setup step creates them, never a service: :mod:`spreadbus.runtime.bus_presence`), runs
``main``, and on the way out lets it wind down (cancelling it if it overruns), drains NATS and
stops the HTTP server. A crash of ``main`` is logged and turns into exit code 1, so the process
supervisor restarts the service.

Stopping is bounded whatever NATS does. NATS may be unreachable (never connected, or
reconnecting) or frozen (sockets open, nothing answers, so every request waits out its timeout).
So start-up is raced against the stop signal, ``main`` gets ``RETURN_SECONDS`` to wind down by
itself and is then cancelled (``CLEANUP_SECONDS`` in all), a healthy connection is drained for
at most ``DRAIN_SECONDS`` and otherwise closed, and tasks still pending after that are dropped
with the event loop instead of awaited as ``asyncio.run`` would. A SIGTERM therefore ends the
process with code 0 within about eight seconds, below the ten-second grace ``spreadbus up``
gives before SIGKILL (Kubernetes gives 30).

Signatures::

    ServiceContext(name, settings, registry, gate, nc, js, stopping)
    run_service(name: str, settings: ServiceSettings, main: ServiceMain, *,
                conditions: Sequence[str] = (), stopping: asyncio.Event | None = None,
                on_first_ready: Callable[[], None] | None = None,
                needs: Sequence[str] = CORE_STREAMS) -> Awaitable[int]
    service_main(name: str, settings_cls: type[ServiceSettings], args: argparse.Namespace,
                 main: Callable[[ServiceContext], Awaitable[None]], *,
                 conditions: Sequence[str] = (),
                 needs: Callable[[Settings], Sequence[str]] | None = None) -> int
                 # for ``run(args)`` of a CLI module
    async done_or_stopped(task: asyncio.Future[Any], stopping: asyncio.Event) -> None
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from nats.aio.client import Client
from nats.js.client import JetStreamContext
from prometheus_client import CollectorRegistry

from spreadbus.runtime import heap
from spreadbus.runtime.bus_layout import CORE_STREAMS
from spreadbus.runtime.bus_presence import BUS_CONDITION, await_bus
from spreadbus.runtime.health import HealthServer, ReadinessGate
from spreadbus.runtime.json_logging import configure_logging
from spreadbus.runtime.nats_connection import NATS_CONDITION, NatsOptions, connect_nats
from spreadbus.runtime.settings import ServiceSettings, load_settings
from spreadbus.runtime.shutdown import install_shutdown_handlers

log = logging.getLogger(__name__)

Settings = TypeVar("Settings", bound=ServiceSettings)
T = TypeVar("T")

CLEANUP_SECONDS: Final = 3.0
"""How long a stopping service's own clean-up (lease step-down, consumers) may take."""
RETURN_SECONDS: Final = 2.0
"""The part of ``CLEANUP_SECONDS`` ``main`` has to return by itself before it is cancelled."""
DRAIN_SECONDS: Final = 2.0
LEFTOVER_SECONDS: Final = 1.0


@dataclass
class ServiceContext:
    name: str
    settings: ServiceSettings
    registry: CollectorRegistry
    gate: ReadinessGate
    nc: Client
    js: JetStreamContext
    stopping: asyncio.Event
    health: HealthServer


ServiceMain = Callable[[ServiceContext], Awaitable[None]]


async def run_service(
    name: str,
    settings: ServiceSettings,
    main: ServiceMain,
    *,
    conditions: Sequence[str] = (),
    held: Sequence[str] = (),
    stopping: asyncio.Event | None = None,
    on_first_ready: Callable[[], None] | None = None,
    needs: Sequence[str] = CORE_STREAMS,
) -> int:
    """``held``: conditions that gate readiness only until the service is first ready
    (:class:`ReadinessGate`). ``needs``: the streams (a bucket as its ``KV_``/``OBJ_`` stream)
    that must exist before ``main`` runs (:func:`spreadbus.runtime.bus_layout.service_needs`)."""
    registry = CollectorRegistry()
    gate = ReadinessGate(NATS_CONDITION, BUS_CONDITION, *conditions,
                         on_first_ready=on_first_ready, held=held)
    health = HealthServer(gate, registry, host=settings.http_host, port=settings.http_port)
    await health.start()
    stopping = stopping or install_shutdown_handlers()
    nc: Client | None = None
    code = 0

    async def setup() -> tuple[Client, JetStreamContext]:
        nonlocal nc
        nc = await connect_nats(
            NatsOptions.from_settings(settings, name=name), gate=gate, registry=registry
        )
        js = nc.jetstream()
        await await_bus(js, needs, gate)
        return nc, js

    try:
        # Connecting and finding the streams wait on NATS, which may never answer: a stop
        # request wins over both.
        connected = await until_stopped(setup(), stopping)
        if connected is None:
            return 0
        nc, js = connected
        ctx = ServiceContext(name, settings, registry, gate, nc, js, stopping, health)
        task = asyncio.ensure_future(main(ctx))
        await done_or_stopped(task, stopping)
        if not task.done():
            await wind_down(task)
        elif task.exception() is not None:
            exc = task.exception()
            log.error("service failed", exc_info=exc)
            code = 1
    finally:
        if nc is not None:
            await close_nats(nc)
        await health.stop()
        log.info("stopped", extra={"exit_code": code})
    return code


async def wind_down(task: asyncio.Future[Any]) -> None:
    """Let ``main`` return by itself, in order, then cancel it if it has not.

    ``main`` sees ``stopping`` too and winds down (stops listening, finishes what is in
    flight, steps down, closes its connections). Cancelling it at once would interrupt exactly
    that clean-up at its first ``await``, leaving connections for the garbage collector; so
    cancellation only ends a clean-up that overran its share of the budget.
    """
    done, _ = await asyncio.wait({task}, timeout=RETURN_SECONDS)
    if not done:
        await finish(task, CLEANUP_SECONDS - RETURN_SECONDS, "service clean-up")
    else:
        log_failure(task, "service clean-up")


async def done_or_stopped(task: asyncio.Future[Any], stopping: asyncio.Event) -> None:
    """Wait until ``task`` is done or ``stopping`` is set, whichever comes first."""
    stop_wait = asyncio.ensure_future(stopping.wait())
    try:
        await asyncio.wait({task, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop_wait.cancel()


async def until_stopped(work: Awaitable[T], stopping: asyncio.Event) -> T | None:
    """``work``'s result, or None (with ``work`` cancelled) once ``stopping`` is set first."""
    task = asyncio.ensure_future(work)
    await done_or_stopped(task, stopping)
    if task.done():
        return task.result()
    await finish(task, CLEANUP_SECONDS, "start-up")
    return None


async def finish(task: asyncio.Future[Any], seconds: float, what: str) -> None:
    """Cancel ``task`` and give its clean-up ``seconds``; past that it is abandoned.

    Clean-up code talks to NATS, which may be gone or frozen; no amount of it may keep a
    stopping service alive.
    """
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if not done:
        log.warning("abandoned after the shutdown budget", extra={"what": what,
                                                                  "seconds": seconds})
        return
    log_failure(task, what)


def log_failure(task: asyncio.Future[Any], what: str) -> None:
    """Log the exception a finished ``task`` ended with, if any (cancelled is no failure)."""
    if not task.cancelled() and task.exception() is not None:
        log.warning("failed while stopping", extra={"what": what}, exc_info=task.exception())


async def close_nats(nc: Client) -> None:
    """Drain a healthy connection (bounded); close a broken or slow one without waiting for it."""
    if nc.is_connected:
        # drain() swallows its own cancellation, so it is raced rather than wrapped in wait_for.
        draining = asyncio.ensure_future(nc.drain())
        done, _ = await asyncio.wait({draining}, timeout=DRAIN_SECONDS)
        if done and not draining.cancelled() and draining.exception() is None:
            return
    closing = asyncio.ensure_future(nc.close())
    await asyncio.wait({closing}, timeout=DRAIN_SECONDS)


def run_until_stopped(service: Coroutine[Any, Any, int]) -> int:
    """``asyncio.run`` without its unbounded wait for tasks that ignore their cancellation.

    Whatever is still pending after the service returned (a request to a frozen NATS server,
    say) gets one short grace period and is then dropped with the loop.
    """
    loop = asyncio.new_event_loop()
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(service)
    finally:
        try:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.wait(pending, timeout=LEFTOVER_SECONDS))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def service_main(
    name: str,
    settings_cls: type[Settings],
    args: argparse.Namespace,
    main: Callable[[Settings, ServiceContext], Awaitable[None]],
    *,
    conditions: Sequence[str] = (),
    held: Sequence[str] = (),
    needs: Callable[[Settings], Sequence[str]] | None = None,
) -> int:
    """Load settings (printing every error and exiting 2 on bad ones), then run the service
    with the process's garbage collection tuned for it (:mod:`spreadbus.runtime.heap`)."""
    loaded = load_settings(settings_cls, args)
    if isinstance(loaded, list):
        for error in loaded:
            print(f"{name}: bad setting {error}", file=sys.stderr)
        return 2
    settings = loaded
    configure_logging(name, settings.log_level)

    async def bound(ctx: ServiceContext) -> None:
        await main(settings, ctx)

    heap.tune()
    return run_until_stopped(
        run_service(name, settings, bound, conditions=conditions, held=held,
                    on_first_ready=heap.settle,
                    needs=CORE_STREAMS if needs is None else needs(settings))
    )
