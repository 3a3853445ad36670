"""The audit ``Admission`` event of each steered pod, published without delaying the answer.

The reservation ledger is the record that keeps subsets within their limits
(:mod:`events.reservations`); the ``Admission`` event on the bus only tells observers which
subset a pod was steered into. So it is best effort and stays off the answer path: each one is
published by a background task, and the answer never waits for NATS beyond the reservation.

Trade-offs: at most ``max_pending`` publications are in flight; beyond that new ones are dropped
and counted (:attr:`Announcements.dropped`) rather than let a slow or disconnected server pile up
tasks and memory. Without a connection nothing is published. On shutdown :meth:`drain` waits a
bounded time for those in flight and cancels the rest, so a stop is never held up by the bus.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from nats.aio.client import Client

from events import subjects
from events.codec import encode
from events.messages import Admission
from services.webhook.review import AdmissionRequest

log = logging.getLogger(__name__)


class Announcements:
    """The ``Admission`` events of one replica being published in the background."""

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
        """Events being published at most; beyond, new ones are dropped (counted)."""
        self.pending: set[asyncio.Task[None]] = set()
        self.dropped = 0

    def announce(self, request: AdmissionRequest, spread: str, subset: str, key: str) -> None:
        """Publish the admission of ``request``'s pod into ``subset`` in the background."""
        if self.nc is None or not self.nc.is_connected:
            return
        if len(self.pending) >= self.max_pending:
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
        task = asyncio.get_running_loop().create_task(self._publish(subject, encode(event)))
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def _publish(self, subject: str, data: bytes) -> None:
        assert self.nc is not None
        try:
            await self.nc.publish(subject, data)
        except Exception as exc:
            log.warning("admission event not published: %r", exc)

    async def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` for admission events being published, then cancel the rest."""
        pending = set(self.pending)
        if not pending:
            return
        _, late = await asyncio.wait(pending, timeout=timeout)
        for task in late:
            task.cancel()
        if late:
            await asyncio.wait(late)
            log.warning("admission events not published at shutdown", extra={"count": len(late)})
