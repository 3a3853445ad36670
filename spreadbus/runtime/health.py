"""The HTTP side every service exposes: ``/healthz``, ``/readyz`` and ``/metrics``.

Readiness is a set of named conditions (``nats``, ``caught_up``, ``kube``...) held by a
:class:`ReadinessGate`; the service flips them as the world changes and ``/readyz`` answers 200
only when all are true, listing each in a JSON body either way. The gate also holds **notes**:
named details an operator should see (a resource the watcher may not list) that do not make the
service unready, shown under ``notes`` in the same body, so whoever reads ``/readyz`` learns why
a ready service sees less than it might without reading its logs.

``/healthz`` answers 200 as long as the event loop runs, so a wedged loop is what makes
Kubernetes restart the process. ``/metrics`` renders the service's own prometheus-client registry
(no global registry, so two services in one test process never collide), including the gate
itself (``spreadbus_ready``, ``spreadbus_ready_condition{condition}``), so an alert sees a service
that runs but is not ready, and which condition holds it back (``nats``: the connection is lost).

Signatures::

    ReadinessGate(*conditions: str, on_first_ready: Callable[[], None] | None = None)
        .set(name: str, ok: bool) -> None
        .note(name: str, detail: str | None) -> None   # None or "" clears the note
        .ready -> bool
        .conditions -> dict[str, bool]
        .notes -> dict[str, str]
    HealthServer(gate: ReadinessGate, registry: CollectorRegistry, *, host: str, port: int)
        async .start() -> None      # .port holds the bound port (useful with port 0)
        async .stop() -> None
    http_runner(app: web.Application, *, grace: float) -> web.AppRunner
    async stop_runner(runner: web.AppRunner, *, close_wait: float = CLOSE_WAIT_SECONDS) -> None

Every aiohttp server of the project (the health port of each service) is built with
:func:`http_runner` and stopped with :func:`stop_runner`, so that no connection outlives its
server. aiohttp's own clean-up stops listening, closes idle keep-alive connections, lets requests
in flight finish within the runner's ``grace`` and then cancels them, and closes every
connection. Closing a TLS connection, though, only starts the TLS shutdown: the transport sends
its close_notify and keeps its socket until the peer answers, for up to 30 s. A client that keeps
its connection alive without reading it (or one on a loop that is about to stop) never answers,
and the socket outlives the server and its event loop. So whatever has not finished closing
``close_wait`` seconds after the clean-up is aborted, and so is a connection whose handshake
completed during the clean-up.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Iterator
from typing import Final

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

GRACE_SECONDS: Final = 1.0
"""How long a stopping health server lets a scrape in flight finish."""
CLOSE_WAIT_SECONDS: Final = 0.5
"""How long closed connections get to complete a TLS shutdown before they are aborted."""


class ReadinessGate:
    """Ready only when every named condition is true; conditions start false.

    ``on_first_ready`` runs once, the first time every condition holds: the moment a service
    has folded its replay and starts serving.

    ``held`` conditions gate only that first time: once every condition has held, one of them
    turning false is shown in ``conditions`` but leaves the service ready. A webhook replica
    keeps answering through a NATS restart (its handlers decide safely without the bus) instead
    of leaving the Service together with every other replica, which would hand every review
    to the API server's ``failurePolicy``.
    """

    def __init__(self, *conditions: str, on_first_ready: Callable[[], None] | None = None,
                 held: Collection[str] = ()) -> None:
        self._conditions = dict.fromkeys(conditions, False)
        self._notes: dict[str, str] = {}
        self._on_first_ready = on_first_ready
        self._held = frozenset(held)
        self._was_ready = False

    def set(self, name: str, ok: bool) -> None:
        previous = self._conditions.get(name)
        self._conditions[name] = ok
        if previous != ok:
            log.info("readiness changed", extra={"condition": name, "ok": ok})
        if not self._was_ready and all(self._conditions.values()):
            self._was_ready = True
        if self._on_first_ready is not None and self.ready:
            first, self._on_first_ready = self._on_first_ready, None
            first()

    def note(self, name: str, detail: str | None) -> None:
        """Show ``detail`` under ``name`` in ``/readyz`` without changing readiness."""
        previous = self._notes.get(name)
        if detail:
            self._notes[name] = detail
        else:
            self._notes.pop(name, None)
        if previous != (detail or None):
            log.info("readiness note changed", extra={"note": name, "detail": detail or ""})

    @property
    def notes(self) -> dict[str, str]:
        return dict(self._notes)

    @property
    def ready(self) -> bool:
        if self._was_ready:
            return all(ok for name, ok in self._conditions.items() if name not in self._held)
        return all(self._conditions.values())

    @property
    def conditions(self) -> dict[str, bool]:
        return dict(self._conditions)


class ReadinessMetrics(Collector):
    """The gate as metrics, read when scraped."""

    def __init__(self, gate: ReadinessGate) -> None:
        self.gate = gate

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily(
            "spreadbus_ready", "1 while the service is ready (/readyz answers 200)",
            value=1.0 if self.gate.ready else 0.0)
        conditions = GaugeMetricFamily(
            "spreadbus_ready_condition",
            "1 while the readiness condition holds (nats: connected; bus: streams exist)",
            labels=["condition"])
        for name, ok in self.gate.conditions.items():
            conditions.add_metric([name], 1.0 if ok else 0.0)
        yield conditions


class HealthServer:
    def __init__(
        self,
        gate: ReadinessGate,
        registry: CollectorRegistry,
        *,
        host: str = "0.0.0.0",
        port: int = 8080,
    ) -> None:
        self.gate = gate
        self.registry = registry
        registry.register(ReadinessMetrics(gate))
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        return app

    async def start(self) -> None:
        self._runner = http_runner(self.app(), grace=GRACE_SECONDS)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        log.info("health server listening", extra={"host": self.host, "port": self.port})

    async def stop(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await stop_runner(runner)

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def _readyz(self, _: web.Request) -> web.Response:
        body = {"ready": self.gate.ready, "conditions": self.gate.conditions,
                "notes": self.gate.notes}
        return web.json_response(body, status=200 if self.gate.ready else 503)

    async def _metrics(self, _: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(self.registry),
            headers={"Content-Type": CONTENT_TYPE_LATEST},
        )


def http_runner(app: web.Application, *, grace: float) -> web.AppRunner:
    """A runner whose clean-up gives requests in flight ``grace`` seconds, without access log."""
    return web.AppRunner(app, access_log=None, shutdown_timeout=grace)


async def stop_runner(runner: web.AppRunner, *, close_wait: float = CLOSE_WAIT_SECONDS) -> None:
    """Stop a runner's server gracefully, then abort every connection still open.

    Bounded by the runner's grace plus ``close_wait``; cancelling it still aborts every
    connection it knew of.
    """
    server = runner.server
    transports = _transports(server)  # the clean-up forgets them
    try:
        await runner.cleanup()
        # a handshake in progress during the clean-up registers its connection afterwards
        transports += _transports(server)
        await _wait_closed(transports, close_wait)
    finally:
        for transport in transports + _transports(server):
            transport.abort()
    # aborted transports release their sockets on the next loop iteration
    await _wait_closed(transports, close_wait)


def _transports(server: web.Server | None) -> list[asyncio.Transport]:
    if server is None:
        return []
    return [h.transport for h in server.connections if isinstance(h.transport, asyncio.Transport)]


def _socket_closed(transport: asyncio.Transport) -> bool:
    sock = transport.get_extra_info("socket")
    return sock is None or sock.fileno() == -1


async def _wait_closed(transports: list[asyncio.Transport], timeout: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if all(_socket_closed(t) for t in transports):
            return
        await asyncio.sleep(0.01)
