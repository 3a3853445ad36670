"""The shell every service runs in: logs, health server, NATS, streams, signals, clean exit.

A service is an ``async def main(ctx: ServiceContext) -> None`` that runs until
``ctx.stopping`` is set (SIGTERM/SIGINT) and flips readiness conditions on ``ctx.gate``. The shell
configures JSON logging, starts ``/healthz``, ``/readyz``, ``/metrics``, connects to NATS
(reconnecting forever), makes sure the bus streams exist, runs ``main``, and on the way out
cancels it, drains NATS and stops the HTTP server. A crash of ``main`` is logged and turns into
exit code 1, so the process supervisor restarts the service.

Signatures::

    ServiceContext(name, settings, registry, gate, nc, js, stopping)
    run_service(name: str, settings: ServiceSettings, main: ServiceMain, *,
                conditions: Sequence[str] = ()) -> Awaitable[int]
    service_main(name: str, settings_cls: type[ServiceSettings], args: argparse.Namespace,
                 main: Callable[[ServiceContext], Awaitable[None]], *,
                 conditions: Sequence[str] = ()) -> int     # for ``run(args)`` of a CLI module
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from nats.aio.client import Client
from nats.js.client import JetStreamContext
from prometheus_client import CollectorRegistry

from spreadbus.runtime.health import HealthServer, ReadinessGate
from spreadbus.runtime.json_logging import configure_logging
from spreadbus.runtime.nats_connection import NATS_CONDITION, NatsOptions, connect_nats
from spreadbus.runtime.settings import ServiceSettings, load_settings
from spreadbus.runtime.shutdown import install_shutdown_handlers
from spreadbus.runtime.stream_setup import ensure_streams

log = logging.getLogger(__name__)

Settings = TypeVar("Settings", bound=ServiceSettings)


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
    stopping: asyncio.Event | None = None,
) -> int:
    registry = CollectorRegistry()
    gate = ReadinessGate(NATS_CONDITION, *conditions)
    health = HealthServer(gate, registry, host=settings.http_host, port=settings.http_port)
    await health.start()
    stopping = stopping or install_shutdown_handlers()
    nc: Client | None = None
    code = 0
    try:
        connecting = asyncio.ensure_future(
            connect_nats(NatsOptions.from_settings(settings, name=name), gate=gate,
                         registry=registry)
        )
        stop_wait = asyncio.ensure_future(stopping.wait())
        await asyncio.wait({connecting, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
        if not connecting.done():
            connecting.cancel()
            stop_wait.cancel()
            return 0
        stop_wait.cancel()
        nc = connecting.result()
        js = nc.jetstream()
        await ensure_streams(js)
        ctx = ServiceContext(name, settings, registry, gate, nc, js, stopping, health)
        task = asyncio.ensure_future(main(ctx))
        stop_wait = asyncio.ensure_future(stopping.wait())
        await asyncio.wait({task, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
        stop_wait.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        elif task.exception() is not None:
            exc = task.exception()
            log.error("service failed", exc_info=exc)
            code = 1
    finally:
        if nc is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(nc.drain(), 5.0)
        await health.stop()
        log.info("stopped", extra={"exit_code": code})
    return code


def service_main(
    name: str,
    settings_cls: type[Settings],
    args: argparse.Namespace,
    main: Callable[[Settings, ServiceContext], Awaitable[None]],
    *,
    conditions: Sequence[str] = (),
) -> int:
    """Load settings (printing every error and exiting 2 on bad ones), then run the service."""
    loaded = load_settings(settings_cls, args)
    if isinstance(loaded, list):
        for error in loaded:
            print(f"{name}: bad setting {error}", file=sys.stderr)
        return 2
    settings = loaded
    configure_logging(name, settings.log_level)

    async def bound(ctx: ServiceContext) -> None:
        await main(settings, ctx)

    return asyncio.run(run_service(name, settings, bound, conditions=conditions))
