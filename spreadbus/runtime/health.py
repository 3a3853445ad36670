"""The HTTP side every service exposes: ``/healthz``, ``/readyz`` and ``/metrics``.

Readiness is a set of named conditions (``nats``, ``caught_up``, ``kube``...) held by a
:class:`ReadinessGate`; the service flips them as the world changes and ``/readyz`` answers 200
only when all are true, listing each in a JSON body either way. ``/healthz`` answers 200 as long as
the event loop runs, so a wedged loop is what makes Kubernetes restart the process. ``/metrics``
renders the service's own prometheus-client registry (no global registry, so two services in one
test process never collide).

Signatures::

    ReadinessGate(*conditions: str)
        .set(name: str, ok: bool) -> None
        .ready -> bool
        .conditions -> dict[str, bool]
    HealthServer(gate: ReadinessGate, registry: CollectorRegistry, *, host: str, port: int)
        async .start() -> None      # .port holds the bound port (useful with port 0)
        async .stop() -> None
"""

from __future__ import annotations

import logging

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)


class ReadinessGate:
    """Ready only when every named condition is true; conditions start false."""

    def __init__(self, *conditions: str) -> None:
        self._conditions = dict.fromkeys(conditions, False)

    def set(self, name: str, ok: bool) -> None:
        previous = self._conditions.get(name)
        self._conditions[name] = ok
        if previous != ok:
            log.info("readiness changed", extra={"condition": name, "ok": ok})

    @property
    def ready(self) -> bool:
        return all(self._conditions.values())

    @property
    def conditions(self) -> dict[str, bool]:
        return dict(self._conditions)


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
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        sockets = getattr(site._server, "sockets", None)
        if sockets:
            self.port = int(sockets[0].getsockname()[1])
        log.info("health server listening", extra={"host": self.host, "port": self.port})

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def _readyz(self, _: web.Request) -> web.Response:
        body = {"ready": self.gate.ready, "conditions": self.gate.conditions}
        return web.json_response(body, status=200 if self.gate.ready else 503)

    async def _metrics(self, _: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(self.registry),
            headers={"Content-Type": CONTENT_TYPE_LATEST},
        )
