"""Leadership through a lease in a NATS KV bucket: one holder at a time, takeover in seconds.

The bucket's TTL (``max_age``) is the lease duration: a key not rewritten within it disappears.
The leader rewrites its key every ``ttl/3`` with ``update(last=revision)``, which the server
rejects if anyone else wrote in between; standbys try ``create`` every ``ttl/4``, which
succeeds only once the key is gone (expired after the leader died, or deleted by a leader
stepping down).

A leader that cannot renew (NATS away) steps down on its own after ``0.8 * ttl`` measured on its
own loop clock, before the key can expire and a standby can take over, so two leaders never act
at once as long as clocks tick at similar rates. Plans carry deterministic ids and are
deduplicated anyway, so a brief overlap would be harmless.

Signature::

    Lease(js: JetStreamContext, *, key: str, holder: str, bucket: str = "spreadbus-leases",
          ttl_seconds: float = 6.0, on_change: Callable[[bool], None] | None = None)
        async .run() -> None        # until .stop(); steps down (deletes its key) on the way out
        .stop() -> None
        .is_leader: bool
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from nats.errors import Error as NatsError
from nats.js.client import JetStreamContext
from nats.js.errors import Error as JetStreamError
from nats.js.errors import KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from spreadbus.runtime.shutdown import sleep_unless_stopping

log = logging.getLogger(__name__)

STEP_DOWN_SECONDS = 2.0


class Lease:
    def __init__(
        self,
        js: JetStreamContext,
        *,
        key: str,
        holder: str,
        bucket: str = "spreadbus-leases",
        ttl_seconds: float = 6.0,
        on_change: Callable[[bool], None] | None = None,
    ) -> None:
        self.js = js
        self.key = key
        self.holder = holder
        self.bucket = bucket
        self.ttl = ttl_seconds
        self.on_change = on_change
        self.is_leader = False
        self._revision = 0
        self._renewed_at = 0.0
        self._stopping = asyncio.Event()
        self._kv: KeyValue | None = None

    async def _bucket(self) -> KeyValue:
        if self._kv is None:
            # The setup step creates the bucket (``spreadbus bus-setup``); its TTL wins over this
            # replica's, so replicas configured differently still agree on how long a lease lasts.
            self._kv = await self.js.key_value(self.bucket)
            ttl = (await self._kv.status()).ttl
            if ttl:
                self.ttl = ttl
        return self._kv

    def _set_leader(self, leader: bool) -> None:
        if leader != self.is_leader:
            self.is_leader = leader
            log.info(
                "leadership changed",
                extra={"lease": self.key, "holder": self.holder, "leader": leader},
            )
            if self.on_change is not None:
                self.on_change(leader)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while not self._stopping.is_set():
                try:
                    await self._tick(loop.time())
                except (NatsError, JetStreamError, OSError, TimeoutError) as exc:
                    log.warning("lease error", extra={"lease": self.key, "error": repr(exc)})
                    self._kv = None
                if self.is_leader and loop.time() - self._renewed_at > 0.8 * self.ttl:
                    self._set_leader(False)
                interval = self.ttl / 3 if self.is_leader else self.ttl / 4
                await sleep_unless_stopping(self._stopping, interval)
        finally:
            await self._step_down()

    async def _tick(self, now: float) -> None:
        kv = await self._bucket()
        value = self.holder.encode()
        if self.is_leader:
            try:
                self._revision = await kv.update(self.key, value, last=self._revision)
                self._renewed_at = now
            except KeyWrongLastSequenceError:
                self._set_leader(False)
            return
        try:
            self._revision = await kv.create(self.key, value)
        except KeyWrongLastSequenceError:
            return
        self._renewed_at = now
        self._set_leader(True)

    async def _step_down(self) -> None:
        if not self.is_leader:
            return
        self._set_leader(False)
        # Best effort and bounded as a whole (binding the bucket included): with NATS away the
        # key simply expires after the TTL, which is what a crashed leader leaves behind too.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._delete_key(), STEP_DOWN_SECONDS)

    async def _delete_key(self) -> None:
        kv = await self._bucket()
        await kv.delete(self.key, last=self._revision)

    def stop(self) -> None:
        self._stopping.set()
