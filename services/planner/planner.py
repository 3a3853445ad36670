"""The planner engine: rebuild the projection, follow the streams, decide when caught up.

Start-up loads the newest snapshot (both folds with their three stream positions) or, if there
is none or it cannot be trusted, starts from nothing; three followers then replay what came after
and keep following live. A snapshot older than ``SNAPSHOT_TRUSTED_SHARE`` of the KUBE tombstone
TTL is not trusted either: a deletion after its position may have expired from the stream, and
tailing would keep the deleted object forever, while a full replay of KUBE (latest observation
per object) is complete. Its age is ``clock()`` minus the time recorded when it was taken; the
share left over covers clock skew between hosts and the messages that arrived between the
snapshot's last position and its time.

- ``KUBE`` (everything of every cluster, one wildcard filter) into :class:`KubeProjection`; a
  planner shard (``shards``) reads ``KUBE_SHARDS_<N>`` instead, the namespaces of its partition,
  the cluster-scoped objects and the sync markers of every cluster (:mod:`events.shards`), and
  its snapshot bears its shard's name;
- ``PLANS`` and ``OUTCOMES`` into :class:`DecisionLog`;
- each feature's side streams (:class:`spreadbus.engine.feature.SideStream`, such as the
  WorkloadSpread reservation bucket's: one entry per key), from their start on every start, each
  change marking the key its fold names changed.

An eviction or deletion a budget refused is decided again after its backoff
(:meth:`DecisionLog.due_retries` names the object; the engine sleeps no longer than until then).
Creates a governor wants beyond the bound on outstanding creates
(:func:`spreadbus.projection.planning.plans_for`) are offered again at the time the decision log
keeps for them (:meth:`DecisionLog.deferred_due`), like a rule's due keys.

Time-based decisions: a rule may expose ``due(now) -> set of keys`` and ``next_wake() -> float |
None`` (:class:`spreadbus.projection.planning.Timed`); the engine adds due keys to ``changed`` on
every round and sleeps no longer than until the next wake-up, so an expiry or a timeout is acted
on at its time without any new event. Time is the injected ``clock``.

Deciding happens only when every follower is caught up and this replica holds the lease, so a
replay never re-issues stale plans and standbys stay warm without acting; each rule decides
once every resource it reads has a complete sync marker (a rule whose resources are not watched
waits without holding back the others, and is offered every object when it can start, with
the objects deleted while it waited). Every
object that changed since the last decision (every object, after a restore or on becoming
leader) is offered to the rules. Plans are published with
``Nats-Msg-Id`` = plan id; the next decision waits until the plans follower has folded them back,
so the decision log is the only memory of what is in flight.

Decisions about objects that left the projection are forgotten once settled
(:meth:`DecisionLog.prune`), on every replica after as many new messages as the log has slots
(at least ``PRUNE_EVERY``) and before every snapshot, so memory and snapshots follow the live
objects, not every pod name ever planned for.

A snapshot is written by the leader when caught up, after ``snapshot_every`` new messages or
``snapshot_interval`` seconds, whichever is later; it is taken synchronously so the three
positions and the state always agree.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from nats.aio.client import Client
from nats.errors import Error as NatsError
from nats.js.errors import Error as JetStreamError
from prometheus_client import CollectorRegistry, Counter, Gauge

from events import codec, subjects
from events.shards import ONE, Shards, shard_filters, stream_name
from events.streams import DEDUP_HEADER, KUBE, OUTCOMES, PLANS, TOMBSTONE_TTL_SECONDS
from retrydelay import Backoff
from spreadbus.engine.feature import SideStream
from spreadbus.projection import snapshot
from spreadbus.projection.decision_log import DecisionLog, slot_target
from spreadbus.projection.kube_state import (
    KubeProjection,
    object_key,
    resource_key,
    side_resource_key,
)
from spreadbus.projection.planning import (
    PLAN_LOST_SECONDS,
    ReadsPlans,
    Rule,
    Timed,
    plans_for,
)
from spreadbus.projection.tracking import Tracked
from spreadbus.runtime.follower import (
    TOMBSTONE_TRUSTED_SHARE,
    FollowerMetrics,
    MessageSink,
    StreamFollower,
    raise_if_ended,
)
from spreadbus.runtime.shutdown import sleep_unless_stopping
from spreadbus.runtime.snapshot_store import SnapshotStore

log = logging.getLogger(__name__)

RULE_RETRY: Final = Backoff(first=0.5, cap=60.0)
"""How long after a failing rule is offered its keys again."""
PRUNE_EVERY: Final = 1000
"""Messages between two passes over the decision log (more when the log is larger)."""
SNAPSHOT_TRUSTED_SHARE: Final = TOMBSTONE_TRUSTED_SHARE
"""A snapshot is trusted while younger than this share of the tombstone TTL."""


@dataclass
class _RuleRetry:
    """What a failed rule is offered again, after how many failures, and from when."""

    keys: set[tuple[str, str]]
    failures: int
    at: float


class PlannerMetrics:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.plans = Counter("spreadbus_planner_plans", "Plans published", ["rule"],
                             registry=registry)
        self.publish_errors = Counter(
            "spreadbus_planner_publish_errors", "Plan publishes that failed", registry=registry
        )
        self.snapshots = Counter("spreadbus_planner_snapshots", "Snapshots written",
                                 registry=registry)
        self.rule_errors = Counter("spreadbus_planner_rule_errors", "Rule evaluations that raised",
                                   ["rule"], registry=registry)
        self.leader = Gauge("spreadbus_planner_leader", "1 while this replica decides",
                            registry=registry)
        self.restore_seconds = Gauge(
            "spreadbus_planner_restore_seconds", "Snapshot load plus replay to caught up",
            registry=registry,
        )
        self.followers = FollowerMetrics(registry)


def planner_name(cluster: str, shards: Shards) -> str:
    """The name of a planner's snapshot: the cluster's, or its shard's."""
    name = f"planner.{subjects.escape(cluster)}"
    return f"{name}.{shards.name}" if shards.sharded else name


class Planner:
    def __init__(
        self,
        nc: Client,
        *,
        cluster: str,
        rules: Sequence[Rule],
        snapshots: SnapshotStore | None = None,
        snapshot_name: str = "",
        snapshot_every: int = 50_000,
        snapshot_interval_seconds: float = 60.0,
        batch: int = 8192,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], float] = time.time,
        streams: Sequence[SideStream] = (),
        tombstone_ttl_seconds: float = TOMBSTONE_TTL_SECONDS,
        round_spacing_seconds: float = 0.02,
        shards: Shards = ONE,
    ) -> None:
        self.nc = nc
        self.shards = shards
        self.round_spacing = round_spacing_seconds
        self.cluster = cluster
        self.rules = list(rules)
        # A runtime protocol check costs a walk of the protocol's attributes; asked twice a round.
        self._timed: list[Timed] = [rule for rule in self.rules if isinstance(rule, Timed)]
        self._reading: list[ReadsPlans] = [rule for rule in self.rules
                                           if isinstance(rule, ReadsPlans)]
        self.snapshots = snapshots
        self.snapshot_name = snapshot_name or planner_name(cluster, shards)
        self.snapshot_every = snapshot_every
        self.snapshot_interval = snapshot_interval_seconds
        self.batch = batch
        self.clock = clock
        self.streams = list(streams)
        self.snapshot_max_age = SNAPSHOT_TRUSTED_SHARE * tombstone_ttl_seconds
        self.metrics = PlannerMetrics(registry)
        self.projection = KubeProjection()
        self.decisions = DecisionLog()
        self.leader = False
        self.restored_from = "nothing"
        self._wake = asyncio.Event()
        self._waiting_rules: dict[str, set[tuple[str, str]]] = {}
        """Rules waiting for their resources' sync, each with the objects deleted while it
        waited (kept only for rules in ``_decided``, the ones that may hold state about them)."""
        self._decided: set[str] = set()
        self._retries: dict[str, _RuleRetry] = {}
        self._followers: list[StreamFollower] = []
        self._followers_ran = False
        self._awaiting_plan_seq = 0
        self._snapshot_position = 0
        self._pruned_position = 0
        self._snapshot_at = 0.0

    # -- lifecycle -----------------------------------------------------------------------------

    async def restore(self) -> str:
        """Load the newest trustworthy snapshot; ``"snapshot"`` or ``"replay"``."""
        self.restored_from = "replay"
        if self.snapshots is not None:
            data = await self.snapshots.load(self.snapshot_name)
            loaded = snapshot.load(data) if data is not None else None
            if loaded is None:
                if data is not None:
                    log.warning("snapshot unusable, replaying from the start")
            elif (age := self.clock() - loaded.taken_at) >= self.snapshot_max_age:
                log.warning("snapshot older than KUBE keeps deletions, replaying from the start",
                            extra={"age_seconds": round(age, 3),
                                   "max_age_seconds": self.snapshot_max_age})
            else:
                self.projection = KubeProjection(loaded.kube)
                self.decisions = DecisionLog(loaded.decisions)
                self.restored_from = "snapshot"
        self.projection.mark_all_changed()
        self._snapshot_position = self._position()
        return self.restored_from

    def _kube_subjects(self) -> list[str]:
        # One wildcard filter for every cluster: the server serves a single filter fast, while
        # a list of per-resource filters slows its delivery by an order of magnitude. The rules
        # see the objects of all clusters, each keyed by its cluster. A shard's two or three
        # filters cover its partition, the cluster-scoped objects and the syncs.
        if self.shards.sharded:
            return shard_filters("*", self.shards)
        return ["kube.*.*.>"]

    def _kube_stream(self) -> str:
        return stream_name(self.shards.count) if self.shards.sharded else KUBE.name

    def followers(self) -> list[StreamFollower]:
        if not self._followers:
            state = self.decisions.state
            self._followers = [
                self._follower(self._kube_stream(), self.projection.apply,
                               self.projection.last_seq, self._kube_subjects()),
                self._follower(PLANS.name, self.decisions.apply_plan, state.plans_seq),
                self._follower(OUTCOMES.name, self._apply_outcome, state.outcomes_seq),
            ]
            for side in self.streams:
                # Not in snapshots: replaying a side stream costs one message per key.
                self._followers.append(self._follower(side.stream, self._side_sink(side), 0))
        return self._followers

    def _follower(
        self, stream: str, sink: MessageSink, position: int, wanted: Sequence[str] = ()
    ) -> StreamFollower:
        return StreamFollower(
            self.nc, stream=stream, sink=sink, subjects=wanted, start_seq=position + 1,
            batch=self.batch, on_progress=self._wake.set, metrics=self.metrics.followers,
            max_silence_seconds=self.snapshot_max_age, wall_clock=self.clock,
        )

    def _apply_outcome(self, seq: int, subject: str, data: bytes) -> None:
        failed = self.decisions.apply_outcome(seq, subject, data)
        if failed is not None:
            # A failed plan, or one a held-back plan waited for: decide again from the state now.
            cluster, group, resource, namespace, name = slot_target(failed)
            self.projection.changed.add(
                (resource_key(cluster, group, resource), object_key(namespace, name))
            )

    def _side_sink(self, side: SideStream) -> MessageSink:
        fold, resource = Tracked(side.fold).apply, side.resource

        def sink(seq: int, subject: str, data: bytes) -> None:
            found = fold(seq, subject, data)
            if found is not None:
                cluster, key = found
                self.projection.changed.add((side_resource_key(cluster, resource), key))

        return sink

    def _due(self, now: float) -> set[tuple[str, str]]:
        # Governors whose creates the bound held back are offered again too.
        due: set[tuple[str, str]] = self.decisions.deferred_due(now)
        for rule in self._timed:
            due |= rule.due(now)
        return due

    def seconds_to_next_wake(self) -> float | None:
        """How long until a rule wants to look again, if any rule does."""
        wakes = [w for rule in self._timed if (w := rule.next_wake()) is not None]
        wakes += [retry.at for retry in self._retries.values()]
        if (refused := self.decisions.next_retry()) is not None:
            wakes.append(refused)
        if (deferred := self.decisions.next_deferred()) is not None:
            wakes.append(deferred)
        return max(0.0, min(wakes) - self.clock()) if wakes else None

    def rule_ready(self, rule: Rule) -> bool:
        """Every resource this rule reads has a complete sync marker."""
        return all(self.projection.synced(self.cluster, ref.group, ref.resource)
                   for ref in rule.resources)

    @property
    def caught_up(self) -> bool:
        """Every follower is caught up and at least one rule can decide.

        Rules are gated one by one: a rule whose resources are not watched (or not listed yet)
        waits without holding back the others, and is offered every object once it can decide.
        """
        followers = self.followers()
        return all(f.caught_up for f in followers) and (
            not self.rules or any(self.rule_ready(rule) for rule in self.rules)
        )

    def set_leader(self, leader: bool) -> None:
        self.leader = leader
        self.metrics.leader.set(1 if leader else 0)
        if leader:
            # A new leader reconsiders everything: the old one may have died mid-decision.
            self.projection.mark_all_changed()
        self._wake.set()

    async def run(self, stopping: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        if self._followers_ran:
            self._followers = []  # a second run: fresh followers resume from the folds' positions
        self._followers_ran = True
        tasks = [asyncio.create_task(f.run()) for f in self.followers()]
        for task in tasks:
            task.add_done_callback(lambda _: self._wake.set())
        restore_recorded = False
        try:
            while not stopping.is_set():
                self._wake.clear()
                raise_if_ended(tasks)
                if self.caught_up and not restore_recorded:
                    restore_recorded = True
                    elapsed = loop.time() - started
                    self.metrics.restore_seconds.set(elapsed)
                    log.info("projection ready", extra={"from": self.restored_from,
                                                        "seconds": round(elapsed, 3)})
                round_started = loop.time()
                await self.step()
                pause = 1.0
                if self.leader and (until := self.seconds_to_next_wake()) is not None:
                    pause = min(pause, until + 0.01)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(pause):
                        await self._wake.wait()
                # Messages arrive one by one while a workload starts; a round for each would
                # pay its fixed cost thousands of times, so the next round takes all that came
                # in the spacing after this one began.
                rest = round_started + self.round_spacing - loop.time()
                if rest > 0:
                    await sleep_unless_stopping(stopping, rest)
        finally:
            for follower in self.followers():
                follower.stop()
            await asyncio.gather(*tasks, return_exceptions=True)

    # -- one decision round ----------------------------------------------------------------------

    async def step(self) -> int:
        """Decide and publish if allowed; returns the number of plans published."""
        self._maybe_prune()
        if not self.caught_up:
            return 0
        published = 0
        plans_follower = self.followers()[1]
        if self.leader and plans_follower.last_seq >= self._awaiting_plan_seq:
            published = await self._decide()
        if self.leader:
            await self._maybe_snapshot()
        return published

    async def _decide(self) -> int:
        now = self.clock()
        changed = self.projection.take_changed() | self._due(now)
        for slot in (*self.decisions.lost_holds(now, PLAN_LOST_SECONDS),
                     *self.decisions.due_retries(now)):
            cluster, group, resource, namespace, name = slot_target(slot)
            changed.add((resource_key(cluster, group, resource), object_key(namespace, name)))
        newly_ready = any(r.name in self._waiting_rules and self.rule_ready(r) for r in self.rules)
        retry_due = any(retry.at <= now for retry in self._retries.values())
        if not changed and not newly_ready and not retry_due:
            return 0
        for reader in self._reading:
            reader.read_plans(self.decisions)  # the log restore() may have replaced
        js = self.nc.jetstream()
        published = 0
        everything: set[tuple[str, str]] | None = None
        for rule in self.rules:
            if not self.rule_ready(rule):
                # The objects deleted meanwhile are kept for it (a relist publishes the
                # deletions the watcher missed while its resource is not synced): a rule that
                # keeps state between rounds must hear of them, and the objects still there
                # are offered to it anyway once it can decide.
                missed = self._waiting_rules.setdefault(rule.name, set())
                if rule.name in self._decided:
                    missed.update(k for k in changed if self.projection.stored(*k) is None)
                continue
            offered = changed
            if rule.name in self._waiting_rules:
                missed = self._waiting_rules.pop(rule.name)
                # It could not decide until now: every object is new to it.
                if everything is None:
                    everything = changed | self.projection.all_keys()
                offered = everything | missed
            retry = self._retries.pop(rule.name, None)
            if retry is not None:
                if retry.at > now:
                    # Still backing off: keep what it has not seen yet for its next attempt.
                    retry.keys |= offered
                    self._retries[rule.name] = retry
                    continue
                offered = offered | retry.keys
            try:
                self._decided.add(rule.name)
                desired = rule.desired(self.projection, offered, now)
                plans = plans_for(rule, self.projection, self.decisions, desired,
                                  cluster=self.cluster, now=now)
            except Exception:
                # A failing rule must not stop the others or the planner; it is logged,
                # counted, and offered the same keys again (and any newer) after a backoff.
                log.exception("rule failed", extra={"rule": rule.name})
                self.metrics.rule_errors.labels(rule.name).inc()
                failures = retry.failures + 1 if retry is not None else 1
                delay = RULE_RETRY.delay(failures)
                self._retries[rule.name] = _RuleRetry(set(offered), failures, now + delay)
                continue
            for plan in plans:
                if not self.leader:
                    return published  # stepped down mid-round: the new leader decides
                target = plan.target
                subject = subjects.plan(plan.cluster, plan.verb, target.group, target.resource,
                                        target.namespace, target.name)
                try:
                    ack = await js.publish(subject, codec.encode(plan),
                                           headers={DEDUP_HEADER: plan.id})
                except (NatsError, JetStreamError, TimeoutError) as exc:
                    # PLANS discards new when full: the publish fails loudly and we retry later.
                    log.warning("plan not published", extra={"plan": plan.id, "error": repr(exc)})
                    self.metrics.publish_errors.inc()
                    self.projection.changed |= changed | offered
                    return published
                self._awaiting_plan_seq = max(self._awaiting_plan_seq, ack.seq)
                self.metrics.plans.labels(rule.name).inc()
                published += 1
                log.info("plan published", extra={"plan": plan.id, "subject": subject,
                                                   "reason": plan.reason, "causes": plan.causes})
        return published

    def _maybe_prune(self) -> None:
        """Forget decisions about deleted objects, on every replica, at amortised O(1) per
        message: a pass costs one look per slot, and runs once as many messages arrived."""
        position = self._position()
        if position - self._pruned_position < max(PRUNE_EVERY, len(self.decisions.state.latest)):
            return
        self._pruned_position = position
        self.decisions.prune(self.projection.exists, self.clock())

    def _position(self) -> int:
        state = self.decisions.state
        return self.projection.last_seq + state.plans_seq + state.outcomes_seq

    async def _maybe_snapshot(self) -> None:
        if self.snapshots is None:
            return
        position = self._position()
        now = asyncio.get_running_loop().time()
        if position - self._snapshot_position < self.snapshot_every and not (
            position > self._snapshot_position and now - self._snapshot_at > self.snapshot_interval
        ):
            return
        await self.save_snapshot()

    async def save_snapshot(self) -> None:
        assert self.snapshots is not None
        self.decisions.prune(self.projection.exists, self.clock())
        data = snapshot.dump(self.projection.state, self.decisions.state,  # one synchronous read
                             taken_at=self.clock())
        position = self._position()
        try:
            await self.snapshots.save(self.snapshot_name, data)
        except (NatsError, JetStreamError, TimeoutError, OSError) as exc:
            log.warning("snapshot not saved", extra={"error": repr(exc)})
            return
        self._snapshot_position = position
        self._snapshot_at = asyncio.get_running_loop().time()
        self.metrics.snapshots.inc()
        log.info("snapshot saved", extra={"bytes": len(data), "kube_seq": self.projection.last_seq})
