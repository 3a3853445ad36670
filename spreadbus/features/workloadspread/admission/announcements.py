"""The audit ``Admission`` event of each decided pod, published without delaying the answer.

Each event carries the decision's evidence (:class:`Evidence`): the reason, every subset as the
decision counted it, the workload and its replicas, the ledger revision and this replica's name;
the server copies it into ``HISTORY`` for the audit log. The evidence is worked out, and the
event encoded, by the publisher after the answer is sent, from what the decision kept.

The reservation ledger is the record that keeps subsets within their limits
(:mod:`..core.reservation_contract`); the ``Admission`` event on the bus only tells observers which
subset a pod was steered into. So it is best effort and stays off the answer path: events are
queued, one background task publishes whatever is queued, and the answer never waits for NATS
beyond the reservation. One task for a burst rather than one per event: a task per steered pod
cost more than encoding and publishing its event. The task gathers events for ``batch_seconds``
before it publishes them, so that many go to the server in one socket write: each write to the
server wakes it, and at a few hundred reviews a second those writes, not the answers, were the
replica's largest cost.

Trade-offs: at most ``max_pending`` events are queued or being published; beyond that new ones
are dropped and counted (:attr:`Announcements.dropped`) rather than let a slow or disconnected
server pile up memory. Without a connection nothing is published. On shutdown :meth:`drain`
publishes what is queued at once, in order, waits a bounded time for it to be sent and drops the
rest, so a stop is never held up by the bus.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import msgspec
from nats.aio.client import Client

from events import subjects
from events.codec import encode
from events.messages import Admission, SubsetView
from spreadbus.engine.review import AdmissionRequest
from spreadbus.features.workloadspread.core.admission_reasons import SubsetSeen

log = logging.getLogger(__name__)

BATCH_SECONDS = 0.01
"""Short beside how soon an observer wants to know (the audit log's lag is seconds), long
beside the time between reviews under load, so a busy replica writes one batch per 10 ms."""


@dataclass(frozen=True)
class Evidence:
    """What a decision saw, for the audit log."""

    reason: str
    subsets: Sequence[SubsetSeen]
    target: str = ""
    replicas: int = 0
    version: str = ""
    ledger_revision: int = 0


Gathered = Callable[[], Evidence]
"""Works out a decision's evidence from what the decision kept."""


class Announcements:
    """The ``Admission`` events of one replica, queued and published in the background."""

    def __init__(
        self,
        *,
        nc: Client | None,
        cluster: str,
        clock: Callable[[], float],
        max_pending: int = 1000,
        replica: str | None = None,
        batch_seconds: float = BATCH_SECONDS,
    ) -> None:
        self.nc = nc
        self.replica = socket.gethostname() if replica is None else replica
        self.cluster = cluster
        self.clock = clock
        self.max_pending = max_pending
        """Events queued or being published at most; beyond, new ones are dropped (counted)."""
        self.dropped = 0
        self.batch_seconds = batch_seconds
        """How long the first event of a batch waits for others to be published with it."""
        self._draining = False
        self._gathering: asyncio.Future[None] | None = None
        self._queue: list[tuple[str, Admission, Gathered | None]] = []
        self._publishing = 0
        self._publisher: asyncio.Task[None] | None = None

    @property
    def pending(self) -> int:
        """Events queued or being published."""
        return len(self._queue) + self._publishing

    def announce(self, request: AdmissionRequest, spread: str, subset: str, key: str,
                 evidence: Gathered | None = None) -> None:
        """Publish the admission of ``request``'s pod into ``subset`` (``""``: none had room)
        in the background, with its ``evidence``, worked out there too."""
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
            replica=self.replica,
        )
        subject = subjects.admission(self.cluster, request.namespace, workload)
        self._queue.append((subject, event, evidence))
        if self._publisher is None:
            self._publisher = asyncio.get_running_loop().create_task(self._publish_queued())

    async def _publish_queued(self) -> None:
        assert self.nc is not None
        try:
            while self._queue:
                await self._gather()
                batch, self._queue = self._queue, []
                self._publishing = len(batch)
                for subject, event, evidence in batch:
                    try:
                        await self.nc.publish(subject, encode(_evidenced(event, evidence)))
                    except Exception as exc:
                        log.warning("admission event not published: %r", exc)
                    self._publishing -= 1
        finally:
            # No await since the loop's last check: nothing can have been queued meanwhile.
            self._publisher = None
            self._publishing = 0

    async def _gather(self) -> None:
        """Wait ``batch_seconds`` for more events, unless draining."""
        if self._draining or self.batch_seconds <= 0:
            return
        loop = asyncio.get_running_loop()
        self._gathering = gathering = loop.create_future()
        timer = loop.call_later(self.batch_seconds, _resolve, gathering)
        try:
            await gathering
        finally:
            timer.cancel()
            self._gathering = None

    async def drain(self, timeout: float) -> None:
        """Publish the queued events now and wait up to ``timeout`` for them to be sent, then
        drop the rest; events announced meanwhile are published at once too."""
        self._draining = True
        if self._gathering is not None:
            _resolve(self._gathering)
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


def _evidenced(event: Admission, evidence: Gathered | None) -> Admission:
    """The event with its evidence; without it, rather than not at all, if that fails."""
    if evidence is None:
        return event
    try:
        return _with_evidence(event, evidence())
    except Exception:
        log.exception("admission evidence not worked out", extra={"request": event.request_uid})
        return event


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _with_evidence(event: Admission, evidence: Evidence) -> Admission:
    return msgspec.structs.replace(
        event,
        reason=evidence.reason,
        subsets=[SubsetView(name=s.name, occupancy=s.occupancy, limit=s.limit,
                            minimum=s.minimum, schedulable=s.schedulable)
                 for s in evidence.subsets],
        target=evidence.target,
        replicas=evidence.replicas,
        version=evidence.version,
        ledger_revision=evidence.ledger_revision,
    )
