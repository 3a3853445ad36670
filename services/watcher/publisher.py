"""Publishing observations with bounded in-flight acknowledgements.

Publishes are asynchronous; at most ``max_in_flight`` may wait for their acknowledgement, after
which the next publish waits for the oldest, so Kubernetes reading slows to the bus's pace (the
reader's queue is bounded too). A publish that fails or is not acknowledged within
``ack_timeout`` is reported through ``on_lost`` so its resource is listed again; nothing is
dropped silently. An acknowledged deletion is reported through ``on_acked``, so the watch can
forget the object only once the bus has its ``DELETED``. A sync marker is published only after
every earlier observation is acknowledged, so a consumer that sees it has everything the list
found.

The acknowledgements are awaited here rather than through the client's ``publish_async``: each
publish carries a reply subject under one inbox of this publisher's, and one subscription on
that inbox resolves the waiting future from the acknowledgement (or the server's error, or its
"no responders" status). The client's version does the same, plus a task per publish for its own
in-flight semaphore (the bound here makes it redundant), a random token from the operating
system, and an acknowledgement parsed into a dataclass through ``json``; together they made up
about a third of the watcher's CPU per observation.

An object too large for the bus (its observation above the server's ``max_payload``) would be
refused on every publish and relist; it is published instead as a marker observation
(``oversize`` = its size, the object reduced to its identity: :func:`identity_of`), counted in
``spreadbus_watcher_oversize_objects`` and named in :attr:`ObservationPublisher.oversize`, and
the watch goes on with the rest.

Headers come from :func:`events.streams.observation_headers`: ``Nats-Msg-Id`` is
``uid:resourceVersion:type``, so a retried publish inside the stream's dedup window is stored
once, and a ``DELETED`` carries ``Nats-TTL``, so the stream forgets a deleted object's tombstone.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import itertools
import logging
from collections.abc import Callable
from typing import Any, Final

import msgspec
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.api import Header
from nats.js.errors import APIError, NoStreamResponseError
from prometheus_client import CollectorRegistry, Counter, Gauge

from events import subjects
from events.messages import SCHEMA_VERSION, ResourceRef, SyncMarker
from events.streams import observation_headers
from services.watcher.resource_watch import Change

log = logging.getLogger(__name__)

LostCallback = Callable[[ResourceRef, tuple[str, str]], None]
AckedCallback = Callable[[ResourceRef, Change], None]


class _ObservationWire(msgspec.Struct, tag="observation", tag_field="type", kw_only=True):
    """:class:`events.messages.Observation` with the object kept as raw JSON (no re-encoding)."""

    v: int = SCHEMA_VERSION
    cluster: str
    group: str
    version: str
    resource: str
    event: str
    object: msgspec.Raw
    relist: bool = False
    ts: float = 0.0


class _MarkerWire(_ObservationWire, tag="observation", tag_field="type", kw_only=True):
    """A marker for an object too large for the bus: ``object`` is its identity alone."""

    oversize: int


class _Identity(msgspec.Struct):
    """The parts of an object a marker keeps: enough to name it and to see it changed."""

    apiVersion: str = ""
    kind: str = ""
    metadata: _Metadata | None = None


class _Metadata(msgspec.Struct, omit_defaults=True):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resourceVersion: str = ""
    generation: int = 0


def identity_of(raw: bytes) -> bytes:
    """The object's apiVersion, kind and identifying metadata, as JSON."""
    return _ENC.encode(_IDENTITY.decode(raw))


class _ApiError(msgspec.Struct):
    code: int | None = None
    err_code: int | None = None
    description: str | None = None


class _PubAck(msgspec.Struct):
    """JetStream's answer to a publish: the stored sequence, or an error."""

    stream: str = ""
    seq: int = 0
    duplicate: bool = False
    error: _ApiError | None = None


_ENC: Final = msgspec.json.Encoder()
_ACK: Final = msgspec.json.Decoder(_PubAck)
_IDENTITY: Final = msgspec.json.Decoder(_Identity)
HEADROOM: Final = 4096
"""Bytes of ``max_payload`` left for the headers and the protocol line."""
_NO_RESPONDERS: Final = "503"

_subject: Final = functools.lru_cache(maxsize=1 << 14)(subjects.observation)
"""An object changes several times in a row (a pod: created, scheduled, started, ready), and
escaping its five tokens costs more than looking its subject up."""


class ObservationPublisher:
    def __init__(
        self,
        nc: Client,
        *,
        cluster: str,
        max_in_flight: int = 2000,
        ack_timeout: float = 10.0,
        on_lost: LostCallback | None = None,
        on_acked: AckedCallback | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.nc = nc
        self.js = nc.jetstream()
        self.cluster = cluster
        self.max_in_flight = max_in_flight
        self.ack_timeout = ack_timeout
        self.on_lost = on_lost
        self.on_acked = on_acked
        self._in_flight: collections.deque[asyncio.Future[Any]] = collections.deque()
        self._inbox = ""
        self._subscribing = asyncio.Lock()
        self._awaiting: dict[str, asyncio.Future[int]] = {}  # reply token -> its publish
        self._tokens = itertools.count()
        self.published = Counter("spreadbus_watcher_observations", "Observations published",
                                 ["resource", "event"], registry=registry)
        self.lost = Counter("spreadbus_watcher_publish_failures",
                            "Publishes not acknowledged (their resource is relisted)",
                            registry=registry)
        self.in_flight_gauge = Gauge("spreadbus_watcher_in_flight",
                                     "Publishes awaiting acknowledgement", registry=registry)
        # Read when scraped, not set per publish: metric updates take a lock each, a visible
        # share of a publish's CPU.
        self.in_flight_gauge.set_function(lambda: len(self._in_flight))
        self._published: dict[tuple[str, str], Counter] = {}
        self.oversize_total = Counter(
            "spreadbus_watcher_oversize_objects",
            "Observations published as markers because the object exceeds the bus's max_payload",
            ["resource"], registry=registry)
        self.oversize: dict[tuple[str, str, str], int] = {}
        """(resource, namespace, name) -> size, of objects whose latest observation was too
        large; an object leaves it when a later observation fits or it is deleted."""

    async def observation(self, ref: ResourceRef, change: Change, ts: float) -> None:
        wire = _ObservationWire(
            cluster=self.cluster, group=ref.group, version=ref.version, resource=ref.resource,
            event=change.event, object=msgspec.Raw(change.raw), relist=change.relist, ts=ts,
        )
        subject = _subject(self.cluster, ref.group, ref.resource, change.namespace, change.name)
        headers = observation_headers(change.uid, change.resource_version, change.event)
        payload = _ENC.encode(wire)
        if len(payload) > self.nc.max_payload - HEADROOM:
            size = len(change.raw)
            payload = _ENC.encode(_MarkerWire(
                cluster=self.cluster, group=ref.group, version=ref.version,
                resource=ref.resource, event=change.event,
                object=msgspec.Raw(identity_of(change.raw)), relist=change.relist, ts=ts,
                oversize=size,
            ))
            self.oversize_total.labels(ref.resource).inc()
            log.warning("object too large for the bus, published as a marker",
                        extra={"resource": ref.resource, "key": f"{change.namespace}/{change.name}",
                               "bytes": size, "max_payload": self.nc.max_payload})
            if change.event == "DELETED":
                self.oversize.pop((ref.resource, change.namespace, change.name), None)
            else:
                self.oversize[(ref.resource, change.namespace, change.name)] = size
        elif self.oversize:  # a later observation that fits ends the note (rare: no key else)
            self.oversize.pop((ref.resource, change.namespace, change.name), None)
        await self._bound()
        if not self._inbox:
            await self._subscribe()
        token = str(next(self._tokens))
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._awaiting[token] = future  # before publishing: the ack may come during the await
        try:
            await self.nc.publish(subject, payload, reply=f"{self._inbox}.{token}",
                                  headers=headers)
        except BaseException:
            del self._awaiting[token]
            raise
        future.add_done_callback(lambda f: self._done(f, token, ref, change))
        self._in_flight.append(future)
        labels = (ref.resource, change.event)
        published = self._published.get(labels)
        if published is None:  # ``labels()`` builds and looks up its key on every call
            published = self._published[labels] = self.published.labels(*labels)
        published.inc()

    async def _subscribe(self) -> None:
        """The acknowledgement inbox, subscribed once whichever resource publishes first."""
        async with self._subscribing:
            if not self._inbox:
                inbox = self.nc.new_inbox()
                await self.nc.subscribe(f"{inbox}.*", cb=self._on_ack)
                self._inbox = inbox

    async def _on_ack(self, msg: Msg) -> None:
        future = self._awaiting.pop(msg.subject[len(self._inbox) + 1:], None)
        if future is None or future.done():
            return  # given up on (timed out) already
        if msg.headers and msg.headers.get(Header.STATUS) == _NO_RESPONDERS:
            future.set_exception(NoStreamResponseError())  # no stream takes the subject
            return
        try:
            ack = _ACK.decode(msg.data)
        except msgspec.DecodeError as exc:
            future.set_exception(exc)
            return
        if ack.error is not None:
            future.set_exception(APIError(code=ack.error.code, err_code=ack.error.err_code,
                                          description=ack.error.description))
        else:
            future.set_result(ack.seq)

    def _done(self, future: asyncio.Future[int], token: str, ref: ResourceRef,
              change: Change) -> None:
        self._awaiting.pop(token, None)  # a publish given up on keeps no entry
        key = (change.namespace, change.name)
        if future.cancelled() or future.exception() is not None:
            self.lost.inc()
            log.warning("observation not acknowledged", extra={
                "resource": ref.resource, "key": "/".join(key),
                "error": "timed out" if future.cancelled() else str(future.exception())})
            if self.on_lost is not None:
                self.on_lost(ref, key)
        elif change.event == "DELETED" and self.on_acked is not None:
            self.on_acked(ref, change)

    async def _bound(self) -> None:
        while self._in_flight and (self._in_flight[0].done() or
                                   len(self._in_flight) >= self.max_in_flight):
            await self._settle(self._in_flight.popleft())

    async def flush(self) -> None:
        """Wait until every publish so far is acknowledged or reported lost."""
        while self._in_flight:
            await self._settle(self._in_flight.popleft())

    async def _settle(self, publish: asyncio.Future[Any]) -> None:
        """Wait for ``publish``'s acknowledgement, giving up (cancelling it) after
        ``ack_timeout``; either way the done callback reports how it ended."""
        if publish.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(publish), self.ack_timeout)
        except TimeoutError:
            publish.cancel()
        except Exception:
            pass  # reported by the done callback

    async def sync(self, ref: ResourceRef, complete: bool, resource_version: str, count: int,
                   ts: float) -> None:
        await self.flush()
        marker = SyncMarker(cluster=self.cluster, group=ref.group, version=ref.version,
                            resource=ref.resource, complete=complete,
                            resource_version=resource_version, count=count, ts=ts)
        await self.js.publish(subjects.sync(self.cluster, ref.group, ref.resource),
                              _ENC.encode(marker))
