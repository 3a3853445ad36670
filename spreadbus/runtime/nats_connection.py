"""One NATS connection per service: URL list, credentials or nkey, TLS, and reconnect forever.

The connection never gives up (``max_reconnect_attempts=-1``); while it is away the ``nats``
readiness condition is false, so ``/readyz`` says not-ready and Kubernetes routes nothing to the
pod, and the service resumes where it was once the server returns (followers resume from their
last stream sequence, see :mod:`spreadbus.runtime.follower`). Every asynchronous error the client
reports (slow consumer drops included) is logged and counted instead of vanishing.

Signatures::

    NatsOptions.from_settings(settings: ServiceSettings, *, name: str) -> NatsOptions
    connect_nats(options: NatsOptions, *, gate: ReadinessGate | None = None,
                 registry: CollectorRegistry | None = None) -> Awaitable[RawDeliveryClient]

Credentials files and nkey seeds need the ``nkeys`` package at run time.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from dataclasses import dataclass, field

from nats.errors import NoServersError
from prometheus_client import CollectorRegistry, Counter

from spreadbus.runtime.bus_permissions import inbox_prefix
from spreadbus.runtime.health import ReadinessGate
from spreadbus.runtime.raw_delivery import RawDeliveryClient
from spreadbus.runtime.settings import ServiceSettings

log = logging.getLogger(__name__)

NATS_CONDITION = "nats"
TLS_EOF_NOTICE = "returning true from eof_received() has no effect when using ssl"


class _QuietTlsEof(logging.Filter):
    """Drops asyncio's notice that a TLS connection's stream protocol answered an EOF with
    "keep open": the NATS client upgrades its plain connection to TLS after the server's INFO,
    so the notice comes with every close of every TLS connection and means nothing."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != TLS_EOF_NOTICE


_QUIET_TLS_EOF = _QuietTlsEof()


@dataclass(frozen=True)
class NatsOptions:
    urls: list[str]
    name: str
    creds_file: str = ""
    nkey_seed_file: str = ""
    tls_ca: str = ""
    tls_cert: str = ""
    tls_key: str = ""
    inbox_prefix: str = ""
    """Where replies arrive: the service's own (see :mod:`spreadbus.runtime.bus_permissions`),
    since with per-service permissions no user may read another's inbox."""
    reconnect_wait_seconds: float = 0.5
    connect_timeout_seconds: float = 2.0
    extra: dict[str, object] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: ServiceSettings, *, name: str) -> NatsOptions:
        return cls(
            urls=list(settings.nats_url),
            name=settings.nats_name or name,
            creds_file=settings.nats_creds,
            nkey_seed_file=settings.nats_nkey_seed,
            tls_ca=settings.nats_tls_ca,
            tls_cert=settings.nats_tls_cert,
            tls_key=settings.nats_tls_key,
            inbox_prefix=inbox_prefix(settings.nats_user or name),
        )

    def tls_context(self) -> ssl.SSLContext | None:
        if not (self.tls_ca or self.tls_cert):
            return None
        context = ssl.create_default_context(cafile=self.tls_ca or None)
        if self.tls_cert:
            context.load_cert_chain(self.tls_cert, self.tls_key or None)
        return context


async def connect_nats(
    options: NatsOptions,
    *,
    gate: ReadinessGate | None = None,
    registry: CollectorRegistry | None = None,
) -> RawDeliveryClient:
    """Connect (retrying until the first connection succeeds) and keep reconnecting forever."""
    errors = Counter(
        "spreadbus_nats_errors",
        "Asynchronous NATS client errors (slow consumers, protocol errors)",
        registry=registry,
    )
    disconnects = Counter(
        "spreadbus_nats_disconnects", "Times the NATS connection was lost", registry=registry
    )

    async def on_error(exc: Exception) -> None:
        errors.inc()
        log.warning("nats error", extra={"error": repr(exc)})

    async def on_disconnected() -> None:
        disconnects.inc()
        if gate is not None:
            gate.set(NATS_CONDITION, False)
        if not client.is_closed:  # a close asked for (drain, close) is no lost connection
            log.warning("nats disconnected")

    async def on_reconnected() -> None:
        if gate is not None:
            gate.set(NATS_CONDITION, True)
        log.info("nats reconnected")

    async def on_closed() -> None:
        if gate is not None:
            gate.set(NATS_CONDITION, False)

    kwargs: dict[str, object] = dict(options.extra)
    if options.creds_file:
        kwargs["user_credentials"] = options.creds_file
    if options.nkey_seed_file:
        kwargs["nkeys_seed"] = options.nkey_seed_file
    if options.inbox_prefix:
        kwargs["inbox_prefix"] = options.inbox_prefix
    tls = options.tls_context()
    if tls is not None:
        kwargs["tls"] = tls
        logging.getLogger("asyncio").addFilter(_QUIET_TLS_EOF)  # once: the same filter object
    while True:
        try:
            client = RawDeliveryClient()
            await client.connect(
                servers=options.urls,
                name=options.name,
                error_cb=on_error,
                disconnected_cb=on_disconnected,
                reconnected_cb=on_reconnected,
                closed_cb=on_closed,
                allow_reconnect=True,
                max_reconnect_attempts=-1,
                reconnect_time_wait=options.reconnect_wait_seconds,  # type: ignore[arg-type,unused-ignore]
                connect_timeout=options.connect_timeout_seconds,  # type: ignore[arg-type,unused-ignore]
                **kwargs,  # type: ignore[arg-type,unused-ignore]
            )
            break
        except (OSError, NoServersError, TimeoutError) as exc:
            # The first connection is retried too: a service may start before its NATS server.
            log.warning("nats not reachable yet", extra={"error": repr(exc)})
            await asyncio.sleep(options.reconnect_wait_seconds)
    if gate is not None:
        gate.set(NATS_CONDITION, True)
    return client
