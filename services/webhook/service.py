"""Assembles the running webhook: NATS, the features' sides and their follower, HTTPS, health.

Every registered feature's webhook side (:mod:`spreadbus.features.registry`) is built at start;
one follower of the observation stream feeds the replica's one pod view (each pod as every
feature keeps it, :mod:`spreadbus.projection.pod_view`) and then each side's fold, and the paths
serve the handlers the sides registered (:func:`services.webhook.server.build_routes`).

It runs in the shared service shell (:mod:`spreadbus.runtime.service`: JSON logs, health server,
NATS, signals). ``/readyz`` says ready only once NATS is connected and the view has caught up
with the observation stream, so a rollout never shifts traffic to a replica that would decide
from an empty view; until then the API server's ``failurePolicy`` applies. Once ready it stays
ready through a NATS restart or a follower starting over (``held`` conditions of the readiness
gate): every replica loses the bus together, and leaving the Service then would let every pod
deletion through unchecked instead of refusing what cannot be spent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Final

from nats.aio.client import Client
from prometheus_client import CollectorRegistry, Gauge
from pydantic import Field

from events import streams, subjects
from services.webhook.certificates import CertificateFiles
from services.webhook.review_protocol import MAX_CONNECTIONS, ReviewServer
from services.webhook.server import MAX_BODY, Metrics, build_routes
from spreadbus.engine.conversion_review import Convert
from spreadbus.engine.feature import Feature, WebhookContext, WebhookSide
from spreadbus.engine.feature_service_settings import FeatureServiceSettings
from spreadbus.features.registry import BUILTIN
from spreadbus.projection.pod_view import PodView
from spreadbus.projection.tracking import Tracked
from spreadbus.runtime.follower import (
    TOMBSTONE_TRUSTED_SHARE,
    FollowerMetrics,
    StreamFollower,
    raise_if_ended,
)
from spreadbus.runtime.health import ReadinessGate
from spreadbus.runtime.service import ServiceContext, done_or_stopped
from tlsserving.https_site import HANDSHAKE_TIMEOUT_SECONDS, HttpsSite

log = logging.getLogger(__name__)

CAUGHT_UP = "caught_up"
SHUTDOWN_GRACE_SECONDS: Final = 1.0
"""How long reviews in flight at shutdown may still take; most take milliseconds, and one
waiting on NATS fails open at its answer timeout anyway."""


class WebhookSettings(FeatureServiceSettings):
    """The webhook's own settings, on top of the shared ones."""

    service: ClassVar[str] = "webhook"
    builtin: ClassVar[tuple[Feature[Any], ...]] = BUILTIN

    host: str = "0.0.0.0"
    """Address of the admission paths."""
    port: int = 9443
    """HTTPS port of the admission paths; 0 picks a free one."""
    tls_cert: str = ""
    """PEM certificate chain; reloaded when the file changes."""
    tls_key: str = ""
    """PEM private key of --tls-cert; reloaded with it."""
    client_ca: str = ""
    """PEM bundle of the CAs that certify the API server's client certificate; when set, the
    review port and the conversion port refuse, in the TLS handshake, every caller without a
    certificate they signed (the health port is unchanged). Empty: anyone who reaches the ports
    is served, which is unsafe in production (deploy/README.md). Reloaded when the file
    changes."""
    conversion_port: int = Field(default=-1, ge=-1)
    """HTTPS port serving the conversion paths alone; they then leave --port. 0 picks a free
    one; -1 (the default) serves them on --port."""
    conversion_client_certificate: bool = True
    """With --client-ca and --conversion-port: whether the conversion port, like the review
    port, requires the API server's client certificate. kube-apiserver has no setting that
    makes it present one to conversion webhooks, so a deployment on a real cluster sets false
    (deploy/README.md): converting an object spends and reads nothing, but anyone who reaches
    the port may then use it. kubesim presents its certificate there too
    (--webhook-client-cert-for-conversions), as `spreadbus up` runs it."""
    tls_handshake_timeout_seconds: float = HANDSHAKE_TIMEOUT_SECONDS
    """How long a connection may take to complete its TLS handshake; stopping aborts it."""
    cert_check_seconds: float = 1.0
    """How often the certificate and key files are checked for a change."""
    answer_timeout_seconds: float = 2.5
    """Longest time to decide one review; a call whose ?timeout= is shorter gets less."""
    max_connections: int = Field(default=MAX_CONNECTIONS, ge=1)
    """Connections kept at once; one more evicts the longest idle (or is refused if none is)."""


class WebhookService:
    """One webhook replica inside the service shell: :meth:`start`, then :meth:`stop`."""

    def __init__(
        self,
        settings: WebhookSettings,
        *,
        nc: Client,
        registry: CollectorRegistry,
        gate: ReadinessGate,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.wall_clock = wall_clock
        """Measures how long the view's follower was out of contact with NATS."""
        self.nc = nc
        self.registry = registry
        self.gate = gate
        self.metrics = Metrics(registry)
        self.sides: dict[str, WebhookSide] = {}
        """Each feature's side by feature name, in registry order."""
        self.pods = PodView(settings.cluster, ())
        """Every pod of the cluster, as each feature that reads pods keeps it."""
        self.fold = Tracked(self._fold_sides)
        """The follower's sink: every side folds each message of the stream once."""
        self.certificates = CertificateFiles(
            Path(settings.tls_cert),
            Path(settings.tls_key),
            Path(settings.client_ca) if settings.client_ca else None,
        )
        self.port = settings.port
        self.conversion_port = settings.conversion_port
        self.follower: StreamFollower | None = None
        self.reviews: ReviewServer | None = None
        self.site: HttpsSite | None = None
        self.conversions: ReviewServer | None = None
        """The conversion paths' own server, with --conversion-port."""
        self.conversion_site: HttpsSite | None = None
        self.follower_task: asyncio.Task[None] | None = None
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self.sides = {}
        serving = [f for f in self.settings.features() if f.webhook is not None]
        keeping = [f for f in serving if f.webhook_pods is not None]
        self.pods = PodView(self.settings.cluster,
                            [f.webhook_pods for f in keeping if f.webhook_pods is not None])
        parts = {f.name: self.pods.part(i) for i, f in enumerate(keeping)}
        for feature in serving:
            assert feature.webhook is not None
            context = WebhookContext(
                cluster=self.settings.cluster,
                settings=self.settings.settings_of(feature),
                nc=self.nc,
                clock=self.wall_clock,
                stream_drained=self._stream_drained,
                pods=parts.get(feature.name),
            )
            self.sides[feature.name] = await feature.webhook(context)
        cluster = subjects.escape(self.settings.cluster)
        self.follower = StreamFollower(
            self.nc,
            stream=streams.KUBE.name,
            sink=self.fold.apply,
            subjects=[f"{subjects.OBSERVATIONS}.{cluster}.>", f"{subjects.SYNC}.{cluster}.>"],
            on_progress=self._on_progress,
            metrics=FollowerMetrics(self.registry),
            name="webhook-view",
            # Longer out of contact, a deletion may have expired unseen: exit and replay instead.
            max_silence_seconds=TOMBSTONE_TRUSTED_SHARE * streams.TOMBSTONE_TTL_SECONDS,
            wall_clock=self.wall_clock,
        )
        self._export_state()
        for side in self.sides.values():
            await side.start()
        self.follower_task = asyncio.create_task(self.follower.run())
        self._tasks.append(self.follower_task)
        self._tasks.append(
            asyncio.create_task(self.certificates.watch(self.settings.cert_check_seconds))
        )
        conversions = {path: convert for side in self.sides.values()
                       for path, convert in side.conversions.items()}
        apart = self.settings.conversion_port >= 0
        routes = build_routes(
            [handler for side in self.sides.values() for handler in side.handlers],
            conversions={} if apart else conversions,
            metrics=self.metrics,
            answer_timeout=self.settings.answer_timeout_seconds,
        )
        self.reviews = ReviewServer(routes, max_body=MAX_BODY,
                                    max_connections=self.settings.max_connections)
        self.site = HttpsSite(
            self.reviews,
            self.settings.host,
            self.settings.port,
            ssl_context=self.certificates.context,
            handshake_timeout=self.settings.tls_handshake_timeout_seconds,
        )
        await self.site.start()
        self.port = self.site.port
        log.info("webhook listening", extra={"port": self.port,
                                             "client_certificates": bool(self.settings.client_ca)})
        if apart:
            await self._serve_conversions(conversions)
        if not self.settings.client_ca:
            log.warning("no --client-ca: any caller that reaches the review port is served and "
                        "can spend reservations; set it in production")
        elif conversions and not apart:
            log.warning("--client-ca without --conversion-port: kube-apiserver presents no "
                        "client certificate to conversion webhooks, so its conversions fail")
        elif conversions and not self.settings.conversion_client_certificate:
            log.warning("--conversion-client-certificate=false: the conversion port serves "
                        "callers without a client certificate")

    async def _serve_conversions(self, conversions: dict[str, Convert]) -> None:
        """The conversion paths on their own port, asking the review port's client certificate
        unless --conversion-client-certificate=false (for kube-apiserver, which has none to
        present there)."""
        settings = self.settings
        authenticated = bool(settings.client_ca) and settings.conversion_client_certificate
        if authenticated:
            context = self.certificates.context
        else:
            serving = CertificateFiles(Path(self.settings.tls_cert), Path(self.settings.tls_key))
            self._tasks.append(
                asyncio.create_task(serving.watch(self.settings.cert_check_seconds)))
            context = serving.context
        self.conversions = ReviewServer(
            build_routes([], conversions=conversions, metrics=self.metrics),
            max_body=MAX_BODY, max_connections=self.settings.max_connections)
        self.conversion_site = HttpsSite(
            self.conversions, self.settings.host, self.settings.conversion_port,
            ssl_context=context,
            handshake_timeout=self.settings.tls_handshake_timeout_seconds)
        await self.conversion_site.start()
        self.conversion_port = self.conversion_site.port
        log.info("webhook conversion listening", extra={
            "port": self.conversion_port,
            "client_certificates": authenticated})

    @property
    def seq(self) -> int:
        return self.fold.last_seq

    def _fold_sides(self, seq: int, subject: str, data: bytes) -> None:
        self.pods.fold(seq, subject, data)
        for side in self.sides.values():
            side.apply_message(seq, subject, data)

    def _export_state(self) -> None:
        """Counts kept by the features' sides and the fold, read at scrape time."""
        readers: dict[str, tuple[str, Callable[[], float]]] = {
            "spreadbus_webhook_view_seq": (
                "Last observation stream sequence folded into the view",
                lambda: self.seq,
            ),
            "spreadbus_webhook_pods_kept": (
                "Pods of the cluster in the view, kept as the features that read pods keep them",
                lambda: len(self.pods.kept),
            ),
            "spreadbus_webhook_connections": (
                "Connections kept on the review paths",
                lambda: self.reviews.connections if self.reviews else 0,
            ),
            "spreadbus_webhook_connections_evicted": (
                "Idle connections closed to make room for a new one (at --max-connections)",
                lambda: self.reviews.evicted if self.reviews else 0,
            ),
            "spreadbus_webhook_connections_refused": (
                "New connections closed at once because every kept one was busy",
                lambda: self.reviews.refused if self.reviews else 0,
            ),
            "spreadbus_webhook_tls_handshakes_failed": (
                "Connections whose TLS handshake failed or timed out (with --client-ca, callers "
                "without a trusted client certificate among them)",
                lambda: self.site.failed_handshakes if self.site else 0,
            ),
            "spreadbus_webhook_conversion_tls_handshakes_failed": (
                "Connections to the conversion port (--conversion-port) whose TLS handshake "
                "failed or timed out",
                lambda: self.conversion_site.failed_handshakes if self.conversion_site else 0,
            ),
        }
        for side in self.sides.values():
            readers.update(side.gauges())
        for name, (text, read) in readers.items():
            Gauge(name, text, registry=self.registry).set_function(read)

    def _stream_drained(self) -> bool:
        """Nothing more to read, as the view's consumer says right now: a consumer lost with
        its server (a cluster member killed) says nothing, and then the view may be behind."""
        return self.follower is not None and self.follower.drained()

    def _on_progress(self) -> None:
        if self.follower is not None:
            self.gate.set(CAUGHT_UP, self.follower.caught_up)
        for side in self.sides.values():
            side.progressed()

    async def stop(self) -> None:
        if self.follower is not None:
            self.follower.stop()
        for site in (self.site, self.conversion_site):
            if site is not None:
                await site.stop()
        for server in (self.reviews, self.conversions):
            if server is not None:
                await server.close(SHUTDOWN_GRACE_SECONDS)
        for side in self.sides.values():
            await side.stop()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def main(
    settings: WebhookSettings,
    ctx: ServiceContext,
    started: Callable[[WebhookService], None] | None = None,
    *,
    wall_clock: Callable[[], float] = time.time,
) -> None:
    """The service body for :func:`spreadbus.runtime.service.run_service`.

    It ends with the error its view's follower ended with; a stale follower
    (:class:`~spreadbus.runtime.follower.FollowerTooStale`) thus exits the service with code 1,
    and its restart replays the observation stream from the start.
    """
    service = WebhookService(
        settings, nc=ctx.nc, registry=ctx.registry, gate=ctx.gate, wall_clock=wall_clock
    )
    await service.start()
    if started is not None:
        started(service)
    try:
        assert service.follower_task is not None  # set by start()
        task = service.follower_task
        await done_or_stopped(task, ctx.stopping)
        raise_if_ended([task])
        await ctx.stopping.wait()
    finally:
        await service.stop()


def settings_problems(settings: WebhookSettings) -> list[str]:
    """What the webhook needs to start beyond well-formed settings (checked after loading)."""
    problems = []
    if not settings.tls_cert or not settings.tls_key:
        problems.append("--tls-cert and --tls-key are required (the webhook serves HTTPS only)")
    if settings.client_ca and not Path(settings.client_ca).is_file():
        problems.append(f"--client-ca: no such file {settings.client_ca}")
    return problems
