"""The projection of the ``PLANS`` and ``OUTCOMES`` streams: which plans are in flight or done.

The planner uses it to emit a plan only when no equal plan is in flight or already answered.
Plan ids are deterministic (see :func:`spreadbus.projection.planning.plan_id`), and every id
names the observed object version it was decided from, so:

- an equal plan while one is in flight is never re-emitted;
- after an ``applied`` outcome, the same observation cannot produce the plan again; the next
  observation of the object (with the change in it) makes the desired state true instead;
- after a ``failed`` outcome, the plan stays failed until the object changes, unless a
  disruption budget refused it for now (:mod:`spreadbus.projection.refusal_backoff`): then the
  slot is decided again after a backoff (:meth:`DecisionLog.due_retries`), as ``kubectl drain``
  retries a refused eviction. The backoff grows with the refusals in a row of the same verb on the
  same object, counted in the order of ``OUTCOMES`` alone (``refusal_runs``), so that however a
  replay interleaves the two streams, every record gets the same count.

Only the newest plan per (target, rule, verb) is kept, and :meth:`DecisionLog.prune` drops the
slots whose target is gone from the projection and whose plan is settled, so the log stays as
large as the set of live objects the rules touch, however many pod names churn through it. A
settled record of a deleted object cannot matter any more: plan ids cover the object's version,
so a re-created object of the same name never matches it, and only an in-flight newest plan
holds decisions back. Pruning is a pure function of both folds and the time it is given, so
replaying the same log with the same pruning points and times gives byte-identical snapshots; a
snapshot taken after a prune differs from an unpruned replay only by such dead records.

Creates are the exception: their target is absent by nature, and a create's plan id covers the
newest plan of its slot rather than an observed version (see
:mod:`spreadbus.projection.planning`). Forgetting that plan would make the next create of the
same object reuse an older id, which the ``PLANS`` and ``OUTCOMES`` dedup windows would drop as a
duplicate; so a settled create of an absent object is kept until its plan is older than the
longer window (``OUTCOMES``, one hour, measured against the ``now`` given to
:meth:`DecisionLog.prune` and the plan's ``ts``). Forgetting it is also what lets a failed create
be decided again.

The two streams are folded independently (each with its own position) because their relative
order is not defined; an outcome that arrives before its plan is held and matched when the plan
arrives. A plan's first answer settles it: a redelivered outcome (another message for a plan already
answered as the newest of its slot, or in the current run of refusals) changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Literal

import msgspec

from events import codec
from events.messages import Outcome, Plan
from events.streams import OUTCOMES
from events.subjects import SubjectError, unescape
from spreadbus.projection.refusal_backoff import refused_by_budget, retry_at
from spreadbus.projection.tracking import FieldPosition, Tracked
from spreadbus.projection.wake_schedule import WakeSchedule

PlanStatus = Literal["in_flight", "applied", "failed", "skipped"]


CREATE_MEMORY_SECONDS: Final = OUTCOMES.duplicate_window_seconds
"""How long a settled create of an absent object is remembered after its plan."""
REFUSAL_RUN_KEPT: Final = 16
"""Refused plan ids kept per run: the backoff reaches its bound long before."""


class PlanRecord(msgspec.Struct, frozen=True, array_like=True):
    id: str
    status: PlanStatus
    seq: int
    ts: float = 0.0
    """The plan's ``ts`` (the planner's clock when it decided)."""
    refusals: int = 0
    """When a budget refused this plan: the refusals in a row of its verb on its object, this
    one included (at most :data:`REFUSAL_RUN_KEPT`); 0 for any other answer, or none yet."""
    seen: str = ""
    """The object's resourceVersion the plan was decided on (``precondition.seen_version``)."""

    @property
    def refused(self) -> bool:
        """Failed because a budget refused it for now: decided again after a backoff."""
        return self.status == "failed" and self.refusals > 0

    def retry_at(self) -> float:
        """When a refused plan is decided again."""
        return retry_at(self.id, self.ts, self.refusals)


class DecisionState(msgspec.Struct, kw_only=True):
    plans_seq: int = 0
    outcomes_seq: int = 0
    latest: dict[str, PlanRecord] = {}
    """``<slot>`` (target, rule and verb) -> newest plan for it."""
    slots: dict[str, str] = {}
    """plan id -> slot, for the plans in ``latest``."""
    early: dict[str, PlanStatus] = {}
    """Outcomes whose plan has not been folded yet: plan id -> result."""
    early_refused: dict[str, int] = {}
    """Those of them that are budget refusals: plan id -> its refusals (as ``PlanRecord``)."""
    refusal_runs: dict[str, list[str]] = {}
    """:func:`target_key` -> the plans a budget refused in a row (the newest last); any other
    answer about the same verb and object ends the run."""
    retired: dict[str, int] = {}
    """In-flight plans replaced by a newer plan for their slot: id -> plan seq, until answered."""
    skipped: int = 0


class _PreconditionHead(msgspec.Struct, frozen=True):
    seen_version: str = ""


class _PlanHead(msgspec.Struct, tag="plan", tag_field="type"):
    id: str
    rule: str
    verb: str
    target: dict[str, str]
    ts: float = 0.0
    precondition: _PreconditionHead = _PreconditionHead()


class _ErrorHead(msgspec.Struct):
    status: int = 0
    message: str = ""


class _OutcomeHead(msgspec.Struct, tag="outcome", tag_field="type"):
    plan_id: str
    result: Literal["applied", "failed", "skipped"]
    cluster: str = ""
    verb: str = ""
    target: dict[str, str] = {}
    error: _ErrorHead | None = None

    @property
    def refused(self) -> bool:
        error = self.error
        return (self.result == "failed" and error is not None
                and refused_by_budget(self.verb, error.status, error.message))


_PLAN: Final = msgspec.json.Decoder(_PlanHead)
_OUTCOME: Final = msgspec.json.Decoder(_OutcomeHead)


def slot_of(cluster: str, rule: str, verb: str, group: str, resource: str, namespace: str,
            name: str) -> str:
    return "\x1f".join((cluster, rule, verb, group, resource, namespace, name))


def target_key(cluster: str, verb: str, target: dict[str, str]) -> str:
    """One verb on one object, whichever rule plans it: what a refusal run is counted for."""
    return "\x1f".join((cluster, verb, target.get("group", ""), target.get("resource", ""),
                        target.get("namespace", ""), target.get("name", "")))


def _run_target(key: str) -> tuple[str, str, str, str, str]:
    """(cluster, group, resource, namespace, name) of a :func:`target_key`."""
    cluster, _verb, group, resource, namespace, name = key.split("\x1f")
    return cluster, group, resource, namespace, name


def slot_verb(slot: str) -> str:
    return slot.split("\x1f")[2]


def slot_target(slot: str) -> tuple[str, str, str, str, str]:
    """(cluster, group, resource, namespace, name) of a slot."""
    cluster, _rule, _verb, group, resource, namespace, name = slot.split("\x1f")
    return cluster, group, resource, namespace, name


class DecisionLog:
    def __init__(self, state: DecisionState | None = None) -> None:
        self.state = state or DecisionState()
        self.apply_plan = Tracked(self.fold_plan, FieldPosition(self.state, "plans_seq")).apply
        """The plan fold behind its position, ``plans_seq``: what the follower delivers to."""
        self.apply_outcome = Tracked(
            self.fold_outcome, FieldPosition(self.state, "outcomes_seq")).apply
        """The outcome fold behind its position, ``outcomes_seq``."""
        self.held: set[str] = set()
        """Slots whose next plan waits for the newest one's answer (not in snapshots: after a
        restore every object is offered to the rules anyway)."""
        self.retries = WakeSchedule()
        """Slots whose newest plan a budget refused, at the time they are decided again
        (derived from ``state``, rebuilt here)."""
        for slot, record in self.state.latest.items():
            if record.refused:
                self.retries.set(slot, record.retry_at())
        self.deferred: dict[tuple[str, str], float] = {}
        """Governors (resource key, object key) whose creates were held back by the bound on
        outstanding creates -> when to offer them again (not in snapshots, like ``held``)."""

    def due_retries(self, now: float) -> list[str]:
        """Slots whose refused plan's backoff is over at ``now`` (each handed out once)."""
        return self.retries.due(now)

    def next_retry(self) -> float | None:
        return self.retries.next_wake()

    def defer(self, governor: tuple[str, str], at: float) -> None:
        """Offer ``governor`` again at ``at`` (the earliest of the times asked for)."""
        known = self.deferred.get(governor)
        self.deferred[governor] = at if known is None else min(known, at)

    def deferred_due(self, now: float) -> set[tuple[str, str]]:
        """Deferred governors whose time has come, each handed out once."""
        due = {key for key, at in self.deferred.items() if at <= now}
        for key in due:
            del self.deferred[key]
        return due

    def next_deferred(self) -> float | None:
        return min(self.deferred.values(), default=None)

    def hold(self, slot: str) -> None:
        """A plan for ``slot`` was held back; :attr:`apply_outcome` names the slot once it
        is answered."""
        self.held.add(slot)

    def lost_holds(self, now: float, after: float) -> list[str]:
        """Held slots whose newest plan has waited longer than ``after`` seconds for its answer:
        the bus lost it, so the slot is decided again (and held no more)."""
        lost = [slot for slot in self.held
                if (record := self.state.latest.get(slot)) is not None
                and record.status == "in_flight" and now - record.ts > after]
        self.held.difference_update(lost)
        return lost

    def fold_plan(self, seq: int, subject: str, data: bytes) -> None:
        state = self.state
        try:
            head = _PLAN.decode(data)
            cluster = unescape(subject.split(".")[1])
        except (msgspec.DecodeError, IndexError, SubjectError):
            event = codec.decode(data)
            if not isinstance(event, Plan):
                state.skipped += 1
                return
            head = _PlanHead(
                id=event.id, rule=event.rule, verb=event.verb,
                target={"group": event.target.group, "resource": event.target.resource,
                        "namespace": event.target.namespace, "name": event.target.name},
                ts=event.ts,
                precondition=_PreconditionHead(event.precondition.seen_version),
            )
            cluster = event.cluster
        target = head.target
        slot = slot_of(
            cluster, head.rule, head.verb, target.get("group", ""), target.get("resource", ""),
            target.get("namespace", ""), target.get("name", ""),
        )
        previous = state.latest.get(slot)
        if previous is not None and previous.id == head.id:
            return  # a duplicate publish of the same plan
        if previous is not None:
            state.slots.pop(previous.id, None)
            if previous.status == "in_flight":
                state.retired[previous.id] = previous.seq
        status: PlanStatus = state.early.pop(head.id, "in_flight")
        record = PlanRecord(head.id, status, seq, head.ts, state.early_refused.pop(head.id, 0),
                            head.precondition.seen_version)
        state.latest[slot] = record
        state.slots[head.id] = slot
        self.retries.set(slot, record.retry_at() if record.refused else None)

    def fold_outcome(self, seq: int, subject: str, data: bytes) -> str | None:
        """Fold one outcome; the slot to decide again, if any: its newest plan failed, or a
        plan for it was held back waiting for this answer."""
        state = self.state
        try:
            head = _OUTCOME.decode(data)
        except msgspec.DecodeError:
            event = codec.decode(data)
            if not isinstance(event, Outcome):
                state.skipped += 1
                return None
            error = event.error
            t = event.target
            head = _OutcomeHead(
                plan_id=event.plan_id, result=event.result, cluster=event.cluster,
                verb=event.verb, target={"group": t.group, "resource": t.resource,
                                         "namespace": t.namespace, "name": t.name},
                error=_ErrorHead(error.status, error.message) if error is not None else None)
        refusals = self._count_refusal(head)  # from OUTCOMES alone, before any plan is read
        if refusals is None:
            return None  # in the current run already: redelivered
        slot = state.slots.get(head.plan_id)
        record = state.latest[slot] if slot is not None else None
        if record is not None and record.status != "in_flight":
            return None  # answered already: a redelivered outcome changes nothing else
        if slot is None or record is None:
            if (state.retired.pop(head.plan_id, None) is None
                    and head.plan_id not in state.early):
                state.early[head.plan_id] = head.result
                if refusals:
                    state.early_refused[head.plan_id] = refusals
            return None
        record = msgspec.structs.replace(record, status=head.result, refusals=refusals)
        state.latest[slot] = record
        if record.refused:
            self.retries.set(slot, record.retry_at())
        if head.result == "failed" or slot in self.held:
            self.held.discard(slot)
            return slot
        return None

    def _count_refusal(self, head: _OutcomeHead) -> int | None:
        """Fold one answer into its object's refusal run: the run's length if a budget refused
        it, 0 if not (the run ends), ``None`` if the run holds it already."""
        runs = self.state.refusal_runs
        key = target_key(head.cluster, head.verb, head.target)
        run = runs.get(key, [])
        if head.plan_id in run:
            return None
        if not head.refused:
            runs.pop(key, None)
            return 0
        run = [*run, head.plan_id][-REFUSAL_RUN_KEPT:]
        runs[key] = run
        return len(run)

    def prune(self, exists: Callable[[str, str, str, str, str], bool],
              now: float | None = None) -> int:
        """Forget settled slots whose target ``exists(cluster, group, resource, namespace,
        name)`` denies; returns how many were dropped. A create's slot also needs its plan
        older than :data:`CREATE_MEMORY_SECONDS` at ``now`` (never, without ``now``). The
        refusal runs of objects that are gone go too: one created again under the name is
        another object, whose refusals count afresh."""
        state = self.state
        gone = [
            slot for slot, record in state.latest.items()
            if record.status != "in_flight" and not exists(*slot_target(slot))
            and (slot_verb(slot) != "create"
                 or (now is not None and record.ts + CREATE_MEMORY_SECONDS < now))
        ]
        for slot in gone:
            record = state.latest.pop(slot)
            state.slots.pop(record.id, None)
            self.held.discard(slot)
            self.retries.set(slot, None)
        for key in [k for k in state.refusal_runs if not exists(*_run_target(k))]:
            del state.refusal_runs[key]
        return len(gone)

    def status(self, slot: str, plan_id: str) -> PlanStatus | None:
        """The status of ``plan_id`` if it is the newest plan of its slot, else ``None``."""
        record = self.state.latest.get(slot)
        if record is None or record.id != plan_id:
            return None
        return record.status

    def newest(self, slot: str) -> PlanRecord | None:
        """The newest plan of ``slot``, whatever its status."""
        return self.state.latest.get(slot)

    def in_flight(self) -> list[str]:
        """Every plan still waiting for its outcome, newest or replaced."""
        newest = [r.id for r in self.state.latest.values() if r.status == "in_flight"]
        return newest + list(self.state.retired)
