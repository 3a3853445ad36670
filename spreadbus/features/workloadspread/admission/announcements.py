"""The audit ``Admission`` event of each steered pod, published without delaying the answer.

The reservation ledger is the record that keeps subsets within their limits
(:mod:`events.reservations`); the ``Admission`` event on the bus only tells observers which
subset a pod was steered into. So it is best effort and stays off the answer path: events are
queued, one background task publishes whatever is queued, and the answer never waits for NATS
beyond the reservation. One task for a burst rather than one per event: a task per steered pod
cost more than encoding and publishing its event.

Trade-offs: at most ``max_pending`` events are queued or being published; beyond that new ones
are dropped and counted (:attr:`Announcements.dropped`) rather than let a slow or disconnected
server pile up memory. Without a connection nothing is published. On shutdown :meth:`drain`
waits a bounded time for the queue to be published and drops the rest, so a stop is never held
up by the bus.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from nats.aio.client import Client

from events import subjects
from events.codec import encode
from events.messages import Admission
from spreadbus.engine.review import AdmissionRequest

log = logging.getLogger(__name__)


class Announcements:
    """The ``Admission`` events of one replica, queued and published in the background."""

    def __init__(
        self,
        *,
        nc: Client | None,
        cluster: str,
        clock: Callable[[], float],
        max_pending: int = 1000,
    ) -> None:
        self.nc = nc
        self.cluster = cluster
        self.clock = clock
        self.max_pending = max_pending
        """Events queued or being published at most; beyond, new ones are dropped (counted)."""
        self.dropped = 0
        self._queue: list[tuple[str, bytes]] = []
        self._publishing = 0
        self._publisher: asyncio.Task[None] | None = None

    @property
    def pending(self) -> int:
        """Events queued or being published."""
        return len(self._queue) + self._publishing

    def announce(self, request: AdmissionRequest, spread: str, subset: str, key: str) -> None:
        """Publish the admission of ``request``'s pod into ``subset`` in the background."""
        if self.nc is None or not self.nc.is_connected:
            return
        if self.pending >= self.max_pending:
            self.dropped += 1
            return
        metadata = (request.object or {}).get("metadata") or {}
        workload = f"WorkloadSpread/{spread}"
        event = Admission(
            cluster=self.cluster,
            namespace=request.namespace,
            request_uid=request.uid,
            pod_name=str(metadata.get("name") or key),
            generate_name=str(metadata.get("generateName") or ""),
            workload=workload,
            subset=subset,
            ts=self.clock(),
        )
        subject = subjects.admission(self.cluster, request.namespace, workload)
        self._queue.append((subject, encode(event)))
        if self._publisher is None:
            self._publisher = asyncio.get_running_loop().create_task(self._publish_queued())

    async def _publish_queued(self) -> None:
        assert self.nc is not None
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                self._publishing = len(batch)
                for subject, data in batch:
                    try:
                        await self.nc.publish(subject, data)
                    except Exception as exc:
                        log.warning("admission event not published: %r", exc)
                    self._publishing -= 1
        finally:
            # No await since the loop's last check: nothing can have been queued meanwhile.
            self._publisher = None
            self._publishing = 0

    async def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` for the queued events to be published, then drop the rest."""
        publisher = self._publisher
        if publisher is None:
            return
        _, late = await asyncio.wait({publisher}, timeout=timeout)
        if late:
            count = self.pending
            publisher.cancel()
            await asyncio.wait({publisher})
            self._queue.clear()
            log.warning("admission events not published at shutdown", extra={"count": count})
