"""Projection snapshots in the JetStream object store: one object per projection name.

The object store chunks large blobs and checks a digest on read; whatever the blob means
(schema version, stream positions) is the projection's business (see
:mod:`spreadbus.projection.snapshot`). A missing object, a failed read or a digest mismatch all
come back as ``None``, and the caller replays from the start of the streams instead.

A read goes into one growing buffer (``writeinto``): the client's default appends each chunk
to an immutable ``bytes``, which copies the whole blob per chunk and made loading a snapshot of
a few hundred thousand objects take longer than replaying the stream.

Signature::

    SnapshotStore(js: JetStreamContext, *, bucket: str = "spreadbus-snapshots",
                  replicas: int = 1)   # replicas of the bucket, when this store creates it
        async .save(name: str, data: bytes) -> None
        async .load(name: str) -> bytes | None
"""

from __future__ import annotations

import io
import logging

from nats.errors import Error as NatsError
from nats.js.api import ObjectStoreConfig
from nats.js.client import JetStreamContext
from nats.js.errors import Error as JetStreamError
from nats.js.object_store import ObjectStore

log = logging.getLogger(__name__)


class SnapshotStore:
    def __init__(
        self, js: JetStreamContext, *, bucket: str = "spreadbus-snapshots", replicas: int = 1
    ) -> None:
        self.js = js
        self.bucket = bucket
        self.replicas = replicas
        self._store: ObjectStore | None = None

    async def _object_store(self) -> ObjectStore:
        if self._store is None:
            try:
                self._store = await self.js.object_store(self.bucket)
            except JetStreamError:
                self._store = await self.js.create_object_store(
                    self.bucket, config=ObjectStoreConfig(replicas=self.replicas))
        return self._store

    async def save(self, name: str, data: bytes) -> None:
        store = await self._object_store()
        await store.put(name, data)

    async def load(self, name: str) -> bytes | None:
        buffer = io.BytesIO()
        try:
            store = await self._object_store()
            await store.get(name, writeinto=buffer)
        except (JetStreamError, NatsError, ValueError, OSError) as exc:
            log.info("no usable snapshot", extra={"snapshot": name, "why": repr(exc)})
            return None
        return buffer.getvalue()
