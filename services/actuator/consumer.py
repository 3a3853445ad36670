"""The actuator's share of the plans: one durable pull consumer shared by every replica.

The consumer's name is fixed per cluster (:func:`~spreadbus.runtime.bus_permissions.
actuator_consumer`): the bus allows it to the actuator's user alone, so no other user can pull
from it, acknowledge on it, change its filter or delete it.

JetStream hands each plan to one replica at a time (explicit acks, ``ack_wait`` 15 s, kept
alive while a plan is being applied, so a replica killed mid-plan delays it by at most that).
A renewal is ``in_progress`` followed by a flush, so it fails visibly while NATS is away instead
of sitting in the client's reconnect buffer. Failed renewals are counted and logged; once the
last good renewal is older than ``ack_wait``, the server may already have handed the plan to
another replica, so the apply is cancelled (no outcome, no ack) and the plan is left to its
next delivery: one plan is never applied by two replicas at once for longer than that.
At shutdown, plans still being applied get a short grace (``shutdown_grace_seconds``), then are
cancelled, awaited, and handed back (``nak``) so another replica takes them at once.

Fairness: a replica reads up to ``read_ahead`` plans ahead of its ``workers`` and keeps those not
started in a :class:`~services.actuator.fair_queue.FairQueue`, one queue per governor: the next
plan to start is the oldest of the governor with the fewest plans running, ties taking turns. So
one governor's backlog cannot hold back another's plans that are within the read-ahead: a
UnitedDeployment creating its workloads leaves a WorkloadSpread's status to the next free
worker. (The planner bounds the creates a governor has outstanding well below the read-ahead.)
Plans waiting there are kept alive like the running ones (``in_progress`` every third of
``ack_wait``, then one flush); one whose renewals failed for ``ack_wait`` is dropped unstarted, as
its delivery is the server's to give again; at shutdown the waiting plans are handed back
(``nak``) before the running ones get their grace.

For each:

1. decode; a message that is not a plan can never apply: it is terminated (``term``) and logged.
   A plan whose verb this code does not know (from a newer planner) is never applied either, but
   it is answered: its one outcome is ``failed`` with reason ``UnknownVerb``, so the planner
   sees it settled rather than in flight forever. It is logged and counted
   (``spreadbus_actuator_unknown_verbs{verb}``), and the consumer goes on;
2. a plan for another cluster than the actuator's own (``cluster``; the subject filter alone
   would let a plan whose body names another cluster through) fails unsent with reason
   ``Forbidden`` (status 403), counted in ``spreadbus_actuator_forbidden_plans_total{rule}``:
   a member never holds another member's share;
3. if it was delivered ``max_deliveries`` times already (replicas kept dying on it), it fails;
4. otherwise :class:`Applier` applies it (``in_progress`` keeps the delivery while it retries);
5. the one outcome is published, on the actuator's own cluster's subject, with ``Nats-Msg-Id``
   = ``outcome:<plan id>`` and only then the plan is acked.

A crash between 5's publish and ack redelivers the plan; re-applying finds the change already
made (``skipped``), and the outcome stream's dedup window (one hour) drops the second outcome, so
the stream holds exactly one outcome per plan. If publishing fails (NATS away) the plan is not
acked and comes back.

Signature::

    PlanConsumer(nc: Client, applier: Applier, *, cluster: str, workers: int = 8,
                 read_ahead: int = 256, max_deliveries: int = 5, ack_wait_seconds: float = 15.0,
                 shutdown_grace_seconds: float = 1.0, registry: CollectorRegistry | None = None,
                 clock: Callable[[], float] = time.time)
        async .run(stopping: asyncio.Event) -> None
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Final, cast

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import Error as JetStreamError
from prometheus_client import CollectorRegistry, Counter, Histogram

from events import codec, subjects
from events.codec import PlanHead, Undecodable
from events.messages import ApiError, Outcome, Plan, Verb
from events.streams import DEDUP_HEADER, PLANS
from services.actuator.application import Applier, Result
from services.actuator.fair_queue import FairQueue
from spreadbus.engine.plan_names import shown
from spreadbus.runtime.bus_permissions import actuator_consumer
from spreadbus.runtime.shutdown import sleep_unless_stopping

log = logging.getLogger(__name__)

PENDING_PER_READ_AHEAD: Final = 4
"""The durable consumer's ``max_ack_pending`` is this many replicas' read-ahead: the server never
holds back a plan from a replica with room while others hold theirs."""


@dataclass
class _Waiting:
    """A plan read ahead and not started: its delivery, what it decoded to, and when its
    delivery was last known to be alive (read, or renewed)."""

    msg: Msg
    decoded: object
    renewed: float


def governor_key(decoded: object) -> str:
    """The queue a delivery waits in: its plan's governor (its rule, for a plan naming none);
    what is no plan waits in a queue of its own, being answered or refused at once."""
    if not isinstance(decoded, Plan):
        return ""
    governor = decoded.governor
    if governor is None:
        return f"rule\x1f{decoded.rule}"
    return "\x1f".join(("governor", governor.group, governor.resource, governor.namespace,
                        governor.name))


class PlanConsumer:
    def __init__(
        self,
        nc: Client,
        applier: Applier,
        *,
        cluster: str,
        workers: int = 8,
        read_ahead: int = 256,
        max_deliveries: int = 5,
        ack_wait_seconds: float = 15.0,
        shutdown_grace_seconds: float = 1.0,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.nc = nc
        self.applier = applier
        self.cluster = cluster
        self.workers = workers
        self.read_ahead = max(read_ahead, workers)
        self.max_deliveries = max_deliveries
        self.ack_wait = ack_wait_seconds
        self.shutdown_grace = shutdown_grace_seconds
        self.clock = clock
        self.durable = actuator_consumer(cluster)
        self.outcomes = Counter("spreadbus_actuator_outcomes", "Plan outcomes published",
                                ["result"], registry=registry)
        self.renewal_failures = Counter(
            "spreadbus_actuator_renewal_failures",
            "Failed in-progress renewals of a plan being applied", registry=registry)
        self.abandoned = Counter(
            "spreadbus_actuator_abandoned_plans",
            "Applies cancelled because their delivery lapsed or the actuator stopped",
            ["why"], registry=registry)
        self.unknown_verbs = Counter(
            "spreadbus_actuator_unknown_verbs",
            "Plans answered unapplied because this actuator does not know their verb",
            ["verb"], registry=registry)
        self.apply_seconds = Histogram("spreadbus_actuator_apply_seconds",
                                       "Time to apply one plan", registry=registry)

    async def run(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            try:
                await self._consume(stopping)
            except (NatsError, JetStreamError, OSError) as exc:
                log.warning("plan consumer error", extra={"error": repr(exc)})
                await sleep_unless_stopping(stopping, 1.0)

    async def _consume(self, stopping: asyncio.Event) -> None:
        js = self.nc.jetstream()
        sub = await js.pull_subscribe(
            f"{subjects.PLANS}.{subjects.escape(self.cluster)}.>",
            durable=self.durable,
            stream=PLANS.name,
            config=ConsumerConfig(
                ack_policy=AckPolicy.EXPLICIT,
                deliver_policy=DeliverPolicy.ALL,
                ack_wait=self.ack_wait,
                max_ack_pending=PENDING_PER_READ_AHEAD * self.read_ahead,
            ),
        )
        loop = asyncio.get_running_loop()
        queue: FairQueue[_Waiting] = FairQueue()
        running: set[asyncio.Task[None]] = set()
        finished = asyncio.Event()

        def start_waiting() -> None:
            while len(running) < self.workers and not stopping.is_set():
                popped = queue.pop()
                if popped is None:
                    return
                key, waiting = popped
                if loop.time() - waiting.renewed >= self.ack_wait:
                    queue.done(key)  # lapsed unstarted: its next delivery carries it
                    self.abandoned.labels("delivery_lapsed").inc()
                    log.warning("plan delivery lapsed before it started, left to its next "
                                "delivery", extra={"subject": waiting.msg.subject})
                    continue
                task = asyncio.create_task(self._handle(waiting.msg, waiting.decoded))
                running.add(task)
                task.add_done_callback(partial(finish, key))

        def finish(key: str, task: asyncio.Task[None]) -> None:
            running.discard(task)
            queue.done(key)
            finished.set()
            start_waiting()  # a worker is free: the next plan starts now, not after a fetch

        renewing = asyncio.create_task(self._keep_waiting_alive(queue))
        try:
            while not stopping.is_set():
                start_waiting()
                room = self.read_ahead - len(queue) - len(running)
                if room <= 0:
                    finished.clear()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(1.0):
                            await finished.wait()
                    continue
                try:
                    msgs = await sub.fetch(room, timeout=1.0)
                except (NatsTimeoutError, TimeoutError):
                    continue
                now = loop.time()
                for msg in msgs:
                    decoded = codec.decode(msg.data)
                    queue.push(governor_key(decoded), _Waiting(msg, decoded, now))
        finally:
            renewing.cancel()
            await asyncio.gather(renewing, return_exceptions=True)
            # Plans not started go back at once, for another replica to take.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._hand_back(queue.drain()), 1.0)
            # A short grace for plans about to record their outcome; the rest are cancelled
            # and awaited, never left running behind a stopped consumer.
            if running:
                await asyncio.wait(set(running), timeout=self.shutdown_grace)
            leftover = set(running)
            for task in leftover:
                task.cancel()
            if leftover:
                await asyncio.gather(*leftover, return_exceptions=True)
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def _hand_back(self, waiting: list[_Waiting]) -> None:
        for item in waiting:
            await item.msg.nak()
        if waiting:
            await self.nc.flush(timeout=1)

    async def _keep_waiting_alive(self, queue: FairQueue[_Waiting]) -> None:
        """Renew the deliveries of the plans read ahead and not started yet."""
        loop = asyncio.get_running_loop()
        interval = self.ack_wait / 3
        while True:
            await asyncio.sleep(interval)
            waiting = list(queue.waiting())
            if not waiting:
                continue
            sent = loop.time()
            try:
                if not self.nc.is_connected:
                    raise ConnectionError("not connected to NATS")
                for item in waiting:
                    await item.msg.in_progress()
                await self.nc.flush(timeout=max(1, int(interval)))
            except (NatsError, JetStreamError, OSError, TimeoutError) as exc:
                self.renewal_failures.inc()
                log.warning("renewal of plans waiting to start failed",
                            extra={"waiting": len(waiting), "error": repr(exc)})
                continue
            for item in waiting:
                item.renewed = sent

    async def _handle(self, msg: Msg, decoded: object) -> None:
        try:
            await self._handle_one(msg, decoded)
        except asyncio.CancelledError:
            self.abandoned.labels("stopping").inc()
            log.warning("plan abandoned at shutdown, handed back", extra={"subject": msg.subject})
            with contextlib.suppress(Exception):
                await asyncio.wait_for(msg.nak(), 0.5)
            raise
        except Exception:
            # Top of the per-plan loop: log, leave the plan unacked so it is redelivered.
            log.exception("plan handling failed")

    async def _handle_one(self, msg: Msg, decoded: object) -> None:
        if isinstance(decoded, Undecodable) and decoded.plan is not None:
            await self._refuse_unknown_verb(msg, decoded.plan)
            return
        if not isinstance(decoded, Plan):
            log.error("not a plan, terminating it", extra={"subject": msg.subject,
                                                          "problem": repr(decoded)})
            await msg.term()
            return
        plan = decoded
        deliveries = msg.metadata.num_delivered
        if plan.cluster != self.cluster:
            result = self.applier.refuse(
                plan, f"the plan is for cluster {shown(plan.cluster)!r}, this actuator acts on "
                      f"cluster {self.cluster!r}")
        elif deliveries > self.max_deliveries:
            result = Result(result="failed", attempts=0, error=ApiError(
                status=0, reason="GaveUp",
                message=f"delivered {deliveries} times without completing"))
        else:
            started = asyncio.get_running_loop().time()
            applying = asyncio.create_task(self.applier.apply(plan))
            keepalive = asyncio.create_task(self._keep_in_progress(msg, plan, applying))
            try:
                result = await applying
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if keepalive.done() and current is not None and not current.cancelling():
                    return  # the delivery lapsed: the plan belongs to its next delivery now
                raise
            finally:
                keepalive.cancel()
            self.apply_seconds.observe(asyncio.get_running_loop().time() - started)
        await self._publish_outcome(plan, result)
        await msg.ack_sync()

    async def _refuse_unknown_verb(self, msg: Msg, head: PlanHead) -> None:
        self.unknown_verbs.labels(head.verb).inc()
        log.warning("plan verb unknown to this actuator, answered without applying it", extra={
            "plan": head.id, "verb": head.verb, "subject": msg.subject})
        result = Result(result="failed", attempts=0, error=ApiError(
            status=0, reason="UnknownVerb",
            message=f"this actuator does not know the verb {head.verb!r}"))
        await self._publish_outcome(head, result)
        await msg.ack_sync()

    async def _keep_in_progress(self, msg: Msg, plan: Plan, applying: asyncio.Task[Result]) -> None:
        """Renew the delivery; cancel ``applying`` once renewals failed for ``ack_wait``."""
        loop = asyncio.get_running_loop()
        renewed = loop.time()
        failures = 0
        interval = self.ack_wait / 3
        while True:
            await asyncio.sleep(interval)
            # Raced, not awaited: while reconnecting, the client may park either call and
            # ignore its cancellation.
            renewal = asyncio.ensure_future(self._renew(msg, interval))
            done, _ = await asyncio.wait({renewal}, timeout=interval)
            if not done:
                renewal.cancel()
            exc = (TimeoutError("renewal unanswered") if not done
                   else renewal.exception())
            if exc is None:
                renewed = loop.time()
                failures = 0
            else:
                failures += 1
                self.renewal_failures.inc()
                log.warning("plan renewal failed", extra={"plan": plan.id, "failures": failures,
                                                          "error": repr(exc)})
            if loop.time() - renewed >= self.ack_wait:
                self.abandoned.labels("delivery_lapsed").inc()
                log.error("plan delivery lapsed, cancelling its apply", extra={
                    "plan": plan.id, "seconds_since_renewal": loop.time() - renewed})
                applying.cancel()
                return

    async def _renew(self, msg: Msg, interval: float) -> None:
        if not self.nc.is_connected:
            raise ConnectionError("not connected to NATS")  # in_progress would only be buffered
        await msg.in_progress()
        await self.nc.flush(timeout=max(1, int(interval)))

    async def _publish_outcome(self, plan: Plan | PlanHead, result: Result) -> None:
        # The actuator's own cluster, not the plan's: a refused plan for another cluster is
        # answered where this actuator may publish, and the planner matches it by plan id.
        outcome = Outcome(
            plan_id=plan.id,
            cluster=self.cluster,
            # A plan's head may name a verb Verb does not list yet: the outcome repeats it.
            verb=cast(Verb, plan.verb),
            target=plan.target,
            result=result.result,
            error=result.error,
            resource_version=result.resource_version,
            attempts=result.attempts,
            ts=self.clock(),
        )
        t = plan.target
        subject = subjects.outcome(self.cluster, plan.verb, t.group, t.resource, t.namespace,
                                   t.name)
        await self.nc.jetstream().publish(subject, codec.encode(outcome),
                                          headers={DEDUP_HEADER: f"outcome:{plan.id}"})
        self.outcomes.labels(result.result).inc()
        log.info("outcome", extra={"plan": plan.id, "result": result.result,
                                   "error": repr(result.error) if result.error else ""})
