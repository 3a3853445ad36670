"""Replay a JetStream stream into a projection, then follow it live, reporting when caught up.

Why not nats-py's ``fetch()``: its per-message path caps replay near 24k msg/s on a small machine,
while the server can deliver several times that. The follower therefore speaks the pull protocol
itself, the same way the client does underneath:

- an ephemeral consumer (``AckNone``, memory storage, ``DeliverByStartSequence`` at
  ``last_seq + 1``) is created on the stream under a private name
  (:mod:`~spreadbus.runtime.consumer_names`), filtered to the wanted subjects;
- a pull request (``$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>``) asks for a large batch with an
  expiry and idle heartbeats; replies land on one inbox subscription whose callback calls the sink
  synchronously: no per-message awaits, no ``Msg.metadata`` parsing, no acks; on a
  :class:`~spreadbus.runtime.raw_delivery.RawDeliveryClient` (every service's) the inbox is a raw
  subscription, so not even a ``Msg`` is built or queued;
- the stream sequence, the consumer's delivery sequence and the server's pending count are read
  straight from the reply subject ``$JS.ACK.…``.

Position is owned here, not by the server: ``last_seq`` is the last stream sequence handed to the
sink, a message at or below it is dropped (redelivery), and a gap in the consumer's delivery
sequence, a 409 status or a silence longer than three heartbeats (server restart, reconnect,
consumer deleted) recreates the consumer at ``last_seq + 1``; after a ``409 Server Shutdown`` it
first waits (at most as long as that silence) for the client to reconnect, since a consumer asked
for on the closing connection is never answered and would cost a whole request timeout.
``caught_up`` becomes true when the
server reports nothing pending after the message just delivered (or nothing at all to deliver);
that is the "synced" half of a service's readiness.

``drained()`` is the stricter "there is nothing more to read" that a decision may rest on: caught
up, and said so by a consumer demonstrably alive, heard from (a message or an idle heartbeat)
within the last heartbeat interval over a connection that has not been lost since the consumer
was made. On a cluster the consumer lives on one server; killed with it, it says nothing more,
and its last "nothing pending" is no longer known to hold while other servers take new messages.

A follower that was out of contact with the server (no message, heartbeat, 404/408 status or
consumer creation, by ``wall_clock``) for longer than ``max_silence_seconds`` may have missed a
deletion whose tombstone expired meanwhile, so instead of recreating its consumer ``run()`` raises
:class:`FollowerTooStale`. Its service then exits to replay from the start, which last-value
retention makes complete; a follower that never had contact is never stale.

Signatures::

    class MessageSink(Protocol):
        def __call__(self, seq: int, subject: str, data: bytes) -> None: ...

    StreamFollower(nc: Client, *, stream: str, sink: MessageSink,
                   subjects: Sequence[str] = (), start_seq: int = 1, batch: int = 8192,
                   heartbeat_seconds: float = 1.0, expires_seconds: float = 10.0,
                   on_progress: Callable[[], None] | None = None,
                   metrics: FollowerMetrics | None = None, name: str = "",
                   max_silence_seconds: float | None = None,
                   wall_clock: Callable[[], float] = time.time)
        async .run() -> None            # until .stop(); never raises on NATS trouble, raises
                                        # FollowerTooStale after too long a silence
        .stop() -> None
        .last_seq: int                  # last stream sequence given to the sink
        .caught_up: bool
        .drained() -> bool              # caught up, as a consumer alive right now says
        async .wait_caught_up() -> None
    FollowerMetrics(registry: CollectorRegistry)
    pull_subject(stream: str, consumer: str) -> str
    pull_request(batch: int, *, expires_seconds: float, heartbeat_seconds: float) -> bytes
    delivery_sequences(reply: str) -> tuple[int, int, int] | None   # (sseq, dseq, pending)
    class FollowerTooStale(Exception)
    raise_if_ended(tasks) -> None       # re-raise what a follower's run() ended with
    TOMBSTONE_TRUSTED_SHARE: float      # of the tombstone TTL a position stays trustworthy for

The sink must not raise; if it does, the message is counted as failed, logged, and skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Final, Protocol

import msgspec
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import Error as NatsError
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import Error as JetStreamError
from prometheus_client import CollectorRegistry, Counter, Gauge

from spreadbus.runtime.consumer_names import private_name
from spreadbus.runtime.raw_delivery import RawDeliveryClient, status_of
from spreadbus.runtime.shutdown import sleep_unless_stopping

log = logging.getLogger(__name__)

_NS = 1_000_000_000
_ENCODER = msgspec.json.Encoder()

TOMBSTONE_TRUSTED_SHARE: Final = 0.9
"""A stream position stays trustworthy for this share of the tombstone TTL after the last contact.

The rest covers clock skew between hosts and messages in flight at the last contact.
"""


def pull_subject(stream: str, consumer: str) -> str:
    """Where a pull request for ``consumer`` of ``stream`` is sent."""
    return f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}"


def pull_request(batch: int, *, expires_seconds: float, heartbeat_seconds: float) -> bytes:
    """The body of a pull request for up to ``batch`` messages (``CONSUMER.MSG.NEXT``)."""
    return _ENCODER.encode({
        "batch": batch,
        "expires": int(expires_seconds * _NS),
        "idle_heartbeat": int(heartbeat_seconds * _NS),
    })


def delivery_sequences(reply: str) -> tuple[int, int, int] | None:
    """Stream sequence, delivery sequence and pending count of a delivered message, read from
    its reply subject with one split; ``None`` for a status message (no ``$JS.ACK`` reply)."""
    # $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>; the v2 form
    # adds domain and account hash after ACK and a random token at the end.
    tokens = reply.split(".")
    if len(tokens) == 9 and tokens[1] == "ACK":
        return int(tokens[5]), int(tokens[6]), int(tokens[8])
    if len(tokens) == 12 and tokens[1] == "ACK":
        return int(tokens[7]), int(tokens[8]), int(tokens[10])
    return None


class MessageSink(Protocol):
    def __call__(self, seq: int, subject: str, data: bytes) -> None: ...


class FollowerMetrics:
    """Counters for every follower of one service, labelled by stream."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.applied = Counter(
            "spreadbus_follower_messages", "Messages handed to the projection", ["stream"],
            registry=registry,
        )
        self.failed = Counter(
            "spreadbus_follower_sink_errors", "Messages the projection rejected", ["stream"],
            registry=registry,
        )
        self.restarts = Counter(
            "spreadbus_follower_restarts", "Consumers recreated after a gap or silence",
            ["stream"], registry=registry,
        )
        self.pending = Gauge(
            "spreadbus_follower_pending", "Messages the server still has for us", ["stream"],
            registry=registry,
        )
        self.last_seq = Gauge(
            "spreadbus_follower_last_seq", "Last stream sequence applied", ["stream"],
            registry=registry,
        )


class FollowerTooStale(Exception):
    """Out of contact too long to resume: deletions may have expired from the stream meanwhile."""


def raise_if_ended(tasks: Sequence[asyncio.Task[None]]) -> None:
    """Re-raise the error a follower's ``run`` ended with; a running or stopped one passes.

    A follower ends by itself only on an error, and its projection is then no longer followed,
    so its service must end too; a stale one is logged as what it is, a restart to replay.
    """
    for task in tasks:
        if not task.done() or task.cancelled() or (error := task.exception()) is None:
            continue
        if isinstance(error, FollowerTooStale):
            log.error("out of contact too long to resume; restarting to replay from the start",
                      extra={"why": str(error)})
        raise error


class _Restart(Exception):
    """The consumer must be recreated at last_seq + 1."""


class StreamFollower:
    def __init__(
        self,
        nc: Client,
        *,
        stream: str,
        sink: MessageSink,
        subjects: Sequence[str] = (),
        start_seq: int = 1,
        batch: int = 8192,
        heartbeat_seconds: float = 1.0,
        expires_seconds: float = 10.0,
        on_progress: Callable[[], None] | None = None,
        metrics: FollowerMetrics | None = None,
        name: str = "",
        max_silence_seconds: float | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.nc = nc
        self.stream = stream
        self.sink = sink
        self.subjects = list(subjects)
        self.last_seq = max(0, start_seq - 1)
        self.batch = batch
        self.heartbeat = heartbeat_seconds
        self.expires = max(expires_seconds, 2 * heartbeat_seconds)
        self.on_progress = on_progress
        self.name = name or f"follower-{stream}"
        self.caught_up = False
        self.pending = -1
        self.max_silence = max_silence_seconds
        self.wall_clock = wall_clock
        self._last_contact: float | None = None  # wall time; None until the server first answers
        self._caught_up_event = asyncio.Event()
        self._stopping = asyncio.Event()
        self._metrics = metrics
        # Per-consumer state, reset by _start_consumer.
        self._consumer = ""
        self._next_dseq = 1
        self._in_request = 0
        self._request_open = False
        self._last_activity = 0.0
        self._fault: str | None = None
        self._shutdown_reconnects: int | None = None
        """The client's reconnect count when the server said it was shutting down."""
        self._consumer_reconnects = -1
        """The client's reconnect count when the current consumer was made."""
        self._wake = asyncio.Event()
        self._count = 0

    # -- public --------------------------------------------------------------------------------

    async def run(self) -> None:
        """Follow until :meth:`stop`; NATS trouble only ever restarts the consumer.

        Raises :class:`FollowerTooStale` instead of restarting after too long a silence.
        """
        backoff = 0.1
        while not self._stopping.is_set():
            try:
                await self._pump()
                backoff = 0.1
            except _Restart as why:
                log.info("follower restarting", extra={"stream": self.stream, "why": str(why)})
                if self._metrics is not None:
                    self._metrics.restarts.labels(self.stream).inc()
                await self._await_reconnect()
            except (NatsError, JetStreamError, OSError, TimeoutError) as exc:
                log.warning(
                    "follower error", extra={"stream": self.stream, "error": repr(exc)}
                )
                await sleep_unless_stopping(self._stopping, backoff)
                backoff = min(backoff * 2, 2.0)

    async def _await_reconnect(self) -> None:
        """After a server shutdown, wait until the client is connected again (to this server
        or another), bounded by the silence that restarts a consumer anyway."""
        before, self._shutdown_reconnects = self._shutdown_reconnects, None
        if before is None:
            return
        deadline = asyncio.get_running_loop().time() + 3 * self.heartbeat + 1.0
        while not (self.nc.stats["reconnects"] > before and self.nc.is_connected):
            if asyncio.get_running_loop().time() >= deadline:
                return
            if await sleep_unless_stopping(self._stopping, 0.05):
                return

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()

    def drained(self) -> bool:
        """Caught up, as a consumer heard from within the last heartbeat interval says, over a
        connection not lost since that consumer was made."""
        if not (self.caught_up and self.pending == 0 and self._consumer):
            return False
        if not self.nc.is_connected or self.nc.stats["reconnects"] != self._consumer_reconnects:
            return False
        return asyncio.get_running_loop().time() - self._last_activity < self.heartbeat

    async def wait_caught_up(self) -> None:
        await self._caught_up_event.wait()

    # -- consumer lifecycle ---------------------------------------------------------------------

    def _touch(self) -> None:
        self._last_contact = self.wall_clock()

    def _check_fresh(self) -> None:
        if self.max_silence is None or self._last_contact is None:
            return
        silence = self.wall_clock() - self._last_contact
        if silence > self.max_silence:
            raise FollowerTooStale(
                f"stream {self.stream}: out of contact for {silence:.0f} s, longer than the "
                f"{self.max_silence:.0f} s after which deletions may have expired from it"
            )

    async def _pump(self) -> None:
        self._check_fresh()
        js = self.nc.jetstream()
        config = ConsumerConfig(
            name=private_name(self.name),
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=self.last_seq + 1,
            ack_policy=AckPolicy.NONE,
            mem_storage=True,
            num_replicas=1,
            inactive_threshold=max(30.0, 4 * self.expires),
            max_waiting=4,
        )
        if len(self.subjects) == 1:
            config.filter_subject = self.subjects[0]
        elif self.subjects:
            config.filter_subjects = list(self.subjects)
        reconnects = int(self.nc.stats["reconnects"])
        info = await js.add_consumer(self.stream, config=config)
        self._touch()
        self._consumer = info.name
        self._consumer_reconnects = reconnects
        self._next_dseq = 1
        self._fault = None
        self._mark_pending(int(info.num_pending or 0))
        inbox = self.nc.new_inbox()
        if isinstance(self.nc, RawDeliveryClient):
            sub = await self.nc.subscribe_raw(inbox, self._on_raw)
        else:
            sub = await self.nc.subscribe(
                inbox,
                cb=self._on_message,
                pending_msgs_limit=4 * self.batch + 1024,
                pending_bytes_limit=1 << 30,
            )
        try:
            loop = asyncio.get_running_loop()
            self._last_activity = loop.time()
            await self._request(inbox)
            while not self._stopping.is_set():
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.heartbeat)
                if self._fault is not None:
                    raise _Restart(self._fault)
                if not self._request_open:
                    await self._request(inbox)
                if loop.time() - self._last_activity > 3 * self.heartbeat + 1.0:
                    raise _Restart("no messages or heartbeats")
        finally:
            await self._close(sub)

    async def _close(self, sub: Subscription) -> None:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
        if self.nc.is_connected:
            # Best effort and short: an undeleted consumer expires on its inactive threshold,
            # and a frozen server must not hold up a restart or a shutdown for a request timeout.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(
                    self.nc.jetstream().delete_consumer(self.stream, self._consumer), 1.0
                )

    async def _request(self, inbox: str) -> None:
        self._in_request = 0
        self._request_open = True
        await self.nc.publish(
            pull_subject(self.stream, self._consumer),
            pull_request(self.batch, expires_seconds=self.expires,
                         heartbeat_seconds=self.heartbeat),
            reply=inbox,
        )

    # -- the hot path -------------------------------------------------------------------------

    async def _on_message(self, msg: Msg) -> None:
        """A message as nats-py delivers it (any client)."""
        if not self._deliver(msg.subject, msg.reply, msg.data):
            headers = msg.headers or {}
            self._on_status(headers.get("Status", ""), headers.get("Description", ""))

    def _on_raw(self, subject: bytes, reply: bytes, data: bytes, headers: bytes) -> None:
        """A message as :class:`RawDeliveryClient` delivers it: the same, without a ``Msg``."""
        if not self._deliver(subject.decode(), reply.decode(), data):
            self._on_status(*status_of(headers))

    def _deliver(self, subject: str, reply: str, data: bytes) -> bool:
        """Hand a message of the consumer to the sink; False for a status message."""
        sequences = delivery_sequences(reply)
        if sequences is None:
            return False
        sseq, dseq, pending = sequences
        self._in_request += 1
        if self._in_request >= self.batch:
            self._request_open = False
            self._wake.set()
        if dseq != self._next_dseq:
            self._fault = f"delivery gap: expected {self._next_dseq}, got {dseq}"
            self._wake.set()
            return True
        self._next_dseq = dseq + 1
        if sseq <= self.last_seq:
            return True
        try:
            self.sink(sseq, subject, data)
        except Exception:
            # One bad message must not stop the projection; it is counted and skipped.
            log.exception("projection rejected a message", extra={"seq": sseq})
            if self._metrics is not None:
                self._metrics.failed.labels(self.stream).inc()
        self.last_seq = sseq
        self._count += 1
        if pending == 0 or self._count >= 4096:
            self._flush_progress(pending)
        return True

    def _flush_progress(self, pending: int) -> None:
        if self._metrics is not None:
            self._metrics.applied.labels(self.stream).inc(self._count)
            self._metrics.last_seq.labels(self.stream).set(self.last_seq)
        self._count = 0
        self._last_activity = asyncio.get_running_loop().time()
        self._touch()
        self._mark_pending(pending)

    def _mark_pending(self, pending: int) -> None:
        self.pending = pending
        if self._metrics is not None:
            self._metrics.pending.labels(self.stream).set(pending)
        if pending == 0 and not self.caught_up:
            self.caught_up = True
            self._caught_up_event.set()
            log.info("caught up", extra={"stream": self.stream, "seq": self.last_seq})
        elif pending > 0 and self.caught_up:
            self.caught_up = False
            self._caught_up_event.clear()
        if self.on_progress is not None:
            self.on_progress()

    def _on_status(self, status: str, description: str) -> None:
        self._last_activity = asyncio.get_running_loop().time()
        if status == "100":
            self._touch()
            return  # idle heartbeat: the consumer is alive
        if status in ("404", "408"):
            self._touch()
            self._request_open = False  # request expired or nothing to give: ask again
            if self._count:
                self._flush_progress(0 if status == "404" else self.pending)
            self._wake.set()
            return
        if status == "409" and "Server Shutdown" in description:
            self._shutdown_reconnects = int(self.nc.stats["reconnects"])
        self._fault = f"status {status} {description}".strip()
        self._wake.set()
