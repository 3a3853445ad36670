"""Projection snapshots in the JetStream object store: one object per projection name.

The object store chunks large blobs and checks a digest on read; whatever the blob means
(schema version, stream positions) is the projection's business (see
:mod:`spreadbus.projection.snapshot`). A missing object, a failed read, a stalled read or a
digest mismatch all come back as ``None``, and the caller replays from the start of the streams
instead.

Writing goes through the client's object store. Reading does not: the client's ``get`` follows the
chunks with a push consumer under flow control and hands every chunk to a thread, which read a 440
MB snapshot (a million objects) at about 60 MB/s, so loading it took half as long as replaying the
whole stream. :meth:`SnapshotStore.load` reads the object's info record through the client, then
takes the chunks itself, as the stream follower takes messages: one ephemeral ``AckNone`` consumer
under a private name, filtered to the object's chunk subject; pull requests for windows of about
``window_bytes`` (the next asked for when half of one has arrived: asking for everything at once
overruns what the server buffers for a client, and it disconnects it as a slow consumer), replies
appended in order to one ``bytearray`` and hashed as they arrive. A gap in the delivery sequence, a
status other than an expired request, or a silence of ``stall_seconds`` abandons the read
(``None``); an expired request is renewed for the chunks still missing.

The chunk reads speak the JetStream API on the connection directly (the pull protocol of
:mod:`spreadbus.runtime.follower`, under the default ``$JS.API`` prefix), so the store holds the
connection and makes its own JetStream context from it; the two can never disagree.

Signature::

    SnapshotStore(nc: Client, *, bucket: str = "spreadbus-snapshots",
                  stall_seconds: float = 10.0, window_bytes: int = 16 << 20)
        .js: JetStreamContext             # made from ``nc``
        async .save(name: str, data: bytes) -> None
        async .load(name: str) -> bytes | bytearray | None   # the blob as saved
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import logging

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    ObjectInfo,
)
from nats.js.errors import Error as JetStreamError
from nats.js.object_store import ObjectStore

from spreadbus.runtime.bus_layout import object_stream
from spreadbus.runtime.consumer_names import private_name
from spreadbus.runtime.follower import delivery_sequences, pull_request, pull_subject

log = logging.getLogger(__name__)

_DIGEST_PREFIX = "SHA-256="


class _Unusable(Exception):
    """The object cannot be read back as saved."""


class SnapshotStore:
    def __init__(
        self,
        nc: Client,
        *,
        bucket: str = "spreadbus-snapshots",
        stall_seconds: float = 10.0,
        window_bytes: int = 16 << 20,
    ) -> None:
        self.nc = nc
        self.js = nc.jetstream()
        self.bucket = bucket
        self.stall_seconds = stall_seconds
        self.window_bytes = window_bytes
        self._store: ObjectStore | None = None

    async def _object_store(self) -> ObjectStore:
        if self._store is None:
            # The setup step creates the store (``spreadbus bus-setup``); a missing one fails
            # the save and makes the load come back empty.
            self._store = await self.js.object_store(self.bucket)
        return self._store

    async def save(self, name: str, data: bytes) -> None:
        store = await self._object_store()
        await store.put(name, data)

    async def load(self, name: str) -> bytes | bytearray | None:
        try:
            store = await self._object_store()
            info = await store.get_info(name)
            if info.is_link() or not info.nuid:
                raise _Unusable("a link or an object without chunks")
            return await self._read_chunks(info)
        except (_Unusable, JetStreamError, NatsError, ValueError, OSError, TimeoutError) as exc:
            log.info("no usable snapshot", extra={"snapshot": name, "why": repr(exc)})
            return None

    async def _read_chunks(self, info: ObjectInfo) -> bytes | bytearray:
        size, chunks = info.size or 0, info.chunks or 0
        if size == 0:
            return b""
        expected = base64.urlsafe_b64decode(
            (info.digest or "").removeprefix(_DIGEST_PREFIX).removeprefix(_DIGEST_PREFIX.lower())
        )
        stream = object_stream(self.bucket)
        consumer = await self.js.add_consumer(stream, config=ConsumerConfig(
            name=private_name(f"snapshot-{self.bucket}"),
            filter_subject=f"$O.{self.bucket}.C.{info.nuid}",
            deliver_policy=DeliverPolicy.ALL, ack_policy=AckPolicy.NONE,
            mem_storage=True, num_replicas=1, inactive_threshold=30.0,
        ))
        nc = self.nc
        next_subject = pull_subject(stream, consumer.name)
        inbox = nc.new_inbox()
        window = max(1, self.window_bytes // max(1, -(-size // chunks)))
        buffer = bytearray()
        digest = hashlib.sha256()
        received = asked = 0
        fault: list[str] = []
        progress = asyncio.Event()

        async def ask() -> None:
            nonlocal asked
            batch = min(window, chunks - asked)
            asked += batch
            body = pull_request(batch, expires_seconds=30.0, heartbeat_seconds=1.0)
            await nc.publish(next_subject, body, reply=inbox)

        async def on_chunk(msg: Msg) -> None:
            nonlocal received, asked
            progress.set()
            sequences = delivery_sequences(msg.reply)
            if sequences is None:
                status = (msg.headers or {}).get("Status", "")
                if status in ("404", "408"):
                    asked = received  # a request ran out early: ask again for the rest
                    await ask()
                elif status != "100":
                    fault.append(f"status {status}")
                return
            _, dseq, _ = sequences
            if dseq != received + 1:
                fault.append(f"delivery gap at chunk {dseq}")
                return
            received = dseq
            buffer.extend(msg.data)
            digest.update(msg.data)
            if asked < chunks and asked - received <= window // 2:
                await ask()

        sub = await nc.subscribe(inbox, cb=on_chunk, pending_msgs_limit=0,
                                 pending_bytes_limit=0)
        try:
            await ask()
            while received < chunks:
                progress.clear()
                try:
                    await asyncio.wait_for(progress.wait(), self.stall_seconds)
                except TimeoutError:
                    raise _Unusable(f"stalled after {received} of {chunks} chunks") from None
                if fault:
                    raise _Unusable(fault[0])
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.js.delete_consumer(stream, consumer.name), 1.0)
        if len(buffer) != size or digest.digest() != expected:
            raise _Unusable("size or digest differs from the object's info")
        return buffer  # not copied into ``bytes``: decoders read any buffer
