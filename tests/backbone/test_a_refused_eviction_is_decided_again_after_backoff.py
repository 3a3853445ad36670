"""An eviction or deletion a disruption budget refused is decided again after a backoff.

A budget refuses a disruption only for now (429, or 403 from a budget's webhook), so the planner
decides the same eviction again once its backoff is over, under a new id, as ``kubectl drain``
retries; any other failure stays final for the object's version. The backoff is a pure function of
the refused plan (doubling, bounded, jittered from the plan id), the refusals are counted by the
decision log from the outcomes alone, a redelivered outcome changes nothing, and replaying the log
(in any interleaving of plans and outcomes, from a snapshot or not) gives the same state and the
same retry times.
"""

from __future__ import annotations

from collections.abc import Set
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from events import codec, subjects
from events.messages import ApiError, ObjectRef, Observation, Outcome, Plan, ResourceRef
from spreadbus.projection.decision_log import DecisionLog, DecisionState
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.projection.planning import Desired, plans_for
from spreadbus.projection.refusal_backoff import (
    FIRST_SECONDS,
    MAX_SECONDS,
    backoff_seconds,
    refused_by_budget,
)

PODS = ResourceRef(group="", version="v1", resource="pods")
PUB_REFUSAL = ApiError(
    status=429, reason="TooManyRequests",
    message='admission webhook "pub.kruise.io" denied the request: '
            'podunavailablebudget.policy.kruise.io "web-pub" is forbidden: '
            "pub unavailable allowed is negative")
PUB_DELETE_REFUSAL = msgspec.structs.replace(PUB_REFUSAL, status=403, reason="Forbidden")
CONFLICT = ApiError(status=409, reason="Conflict", message="the object has been modified")
NOT_GRANTED = ApiError(status=403, reason="Forbidden",
                       message="rule evicter may not evict pods default/web-pub-0")


class Evicter:
    """Wants the pod ``web-0`` evicted, whatever else holds."""

    name = "evicter"
    resources = (PODS,)

    def desired(self, view: KubeProjection, changed: Set[tuple[str, str]],
                now: float) -> list[Desired]:
        target = ObjectRef(group="", version="v1", resource="pods", namespace="default",
                           name="web-0")
        return [Desired(verb="evict", target=target, reason="rebalance")]


def pod(version: int) -> tuple[str, bytes]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "web-0", "namespace": "default", "uid": "uid-web-0",
        "resourceVersion": str(version)}}
    message = Observation(cluster="c1", group="", version="v1", resource="pods",
                          event="MODIFIED", object=obj)
    return subjects.observation("c1", "", "pods", "default", "web-0"), codec.encode(message)


def plan_entry(plan: Plan) -> tuple[str, bytes]:
    t = plan.target
    return (subjects.plan("c1", plan.verb, t.group, t.resource, t.namespace, t.name),
            codec.encode(plan))


def outcome_entry(plan: Plan, error: ApiError | None) -> tuple[str, bytes]:
    t = plan.target
    answer = Outcome(plan_id=plan.id, cluster="c1", verb=plan.verb, target=t,
                     result="failed" if error is not None else "applied", error=error)
    return (subjects.outcome("c1", plan.verb, t.group, t.resource, t.namespace, t.name),
            codec.encode(answer))


class World:
    """The projection of one pod and the decision log, fed as the planner's followers feed them."""

    def __init__(self) -> None:
        self.view = KubeProjection()
        self.view.apply(1, *pod(1))
        self.log = DecisionLog()
        self.plans: list[tuple[int, str, bytes]] = []
        self.outcomes: list[tuple[int, str, bytes]] = []

    def decide(self, now: float) -> list[Plan]:
        rule = Evicter()
        found = plans_for(rule, self.view, self.log, rule.desired(self.view, set(), now),
                          cluster="c1", now=now)
        for plan in found:
            entry = (len(self.plans) + 1, *plan_entry(plan))
            self.plans.append(entry)
            self.log.apply_plan(*entry)
        return found

    def answer(self, plan: Plan, error: ApiError | None) -> str | None:
        entry = (len(self.outcomes) + 1, *outcome_entry(plan, error))
        self.outcomes.append(entry)
        return self.log.apply_outcome(*entry)


def state_bytes(log: DecisionLog) -> bytes:
    return msgspec.msgpack.Encoder(order="deterministic").encode(log.state)


# -- what a refusal is ------------------------------------------------------------------------


def test_a_budget_refusal_is_a_429_or_a_budget_webhooks_403_on_an_eviction_or_deletion() -> None:
    for verb in ("evict", "delete"):
        assert refused_by_budget(verb, 429, "")
        assert refused_by_budget(verb, 429, PUB_REFUSAL.message)
        assert refused_by_budget(verb, 403, PUB_DELETE_REFUSAL.message)
        assert refused_by_budget(verb, 429, "Cannot evict pod as it would violate the pod's "
                                            "disruption budget.")
        assert not refused_by_budget(verb, 403, NOT_GRANTED.message), "a grant refusal is final"
        assert not refused_by_budget(verb, 403, 'admission webhook "x" denied the request: no')
        for status in (400, 404, 409, 422, 500, 503):
            assert not refused_by_budget(verb, status, PUB_REFUSAL.message)
    for verb in ("patch", "patch_status", "create"):
        assert not refused_by_budget(verb, 429, PUB_REFUSAL.message)


# -- the backoff ------------------------------------------------------------------------------

plan_ids = st.text(alphabet="0123456789abcdef", min_size=1, max_size=40)


@given(plan_ids, st.integers(min_value=1, max_value=10_000))
def test_the_backoff_is_bounded(plan_id: str, refusals: int) -> None:
    delay = backoff_seconds(plan_id, refusals)
    assert FIRST_SECONDS / 2 <= delay < MAX_SECONDS
    assert delay == backoff_seconds(plan_id, refusals), "a pure function of its inputs"


@given(plan_ids, plan_ids, st.integers(min_value=1, max_value=5))
def test_the_backoff_grows_with_the_refusals_until_its_bound(first: str, second: str,
                                                              refusals: int) -> None:
    # Below the bound, the next refusal waits at least as long as any plan's previous one.
    assert FIRST_SECONDS * 2.0**refusals <= MAX_SECONDS
    assert backoff_seconds(second, refusals + 1) >= backoff_seconds(first, refusals)


def test_the_jitter_spreads_plans_refused_together() -> None:
    for refusals in (1, 3, 20):
        delays = {backoff_seconds(f"plan-{i}", refusals) for i in range(200)}
        ceiling = min(MAX_SECONDS, FIRST_SECONDS * 2.0 ** (refusals - 1))
        assert len(delays) == 200
        assert min(delays) < ceiling * 0.6
        assert max(delays) > ceiling * 0.9


# -- the planner decides again ------------------------------------------------------------------


def test_a_refused_eviction_waits_out_its_backoff_then_is_decided_again_under_a_new_id() -> None:
    world = World()
    [first] = world.decide(100.0)
    assert world.answer(first, PUB_REFUSAL) is not None, "a failed plan offers its object"
    [slot] = world.log.state.latest
    record = world.log.newest(slot)
    assert record is not None
    assert record.refused
    assert record.refusals == 1
    retry = 100.0 + backoff_seconds(first.id, 1)
    assert world.log.next_retry() == retry
    assert world.decide(retry - 0.01) == [], "still backing off"
    assert world.log.due_retries(retry - 0.01) == []
    assert world.log.due_retries(retry) == [slot]
    assert world.log.due_retries(retry) == [], "offered once"
    [second] = world.decide(retry)
    assert second.id != first.id, "the refused id may still be in the dedup window"
    assert world.decide(retry + 1) == [], "the retry is on its way"
    # Refused again: it waits longer (its backoff doubles before jitter).
    world.answer(second, PUB_REFUSAL)
    assert world.log.newest(slot) is not None
    assert world.log.newest(slot).refusals == 2  # type: ignore[union-attr]
    again = retry + backoff_seconds(second.id, 2)
    assert world.log.next_retry() == again
    assert world.decide(again - 0.01) == []
    [third] = world.decide(again)
    assert third.id not in (first.id, second.id)
    world.answer(third, None)
    assert world.log.newest(slot).refusals == 0  # type: ignore[union-attr]
    assert world.log.next_retry() is None
    assert world.decide(again + 10_000) == [], "applied: nothing more to decide"


def test_a_change_of_the_pod_does_not_cut_the_backoff_short() -> None:
    world = World()
    [first] = world.decide(100.0)
    world.answer(first, PUB_DELETE_REFUSAL)
    world.view.apply(2, *pod(2))
    assert world.decide(100.0 + FIRST_SECONDS / 2 - 0.01) == []
    [again] = world.decide(100.0 + backoff_seconds(first.id, 1))
    assert again.precondition.seen_version == "2"


def test_any_other_failure_stays_final_for_the_pods_version() -> None:
    for error in (CONFLICT, NOT_GRANTED):
        world = World()
        [first] = world.decide(100.0)
        world.answer(first, error)
        assert world.log.next_retry() is None
        assert world.decide(100.0 + 100 * MAX_SECONDS) == [], f"{error.reason} retried"


def test_a_redelivered_outcome_changes_nothing() -> None:
    world = World()
    [first] = world.decide(100.0)
    world.answer(first, PUB_REFUSAL)
    before = state_bytes(world.log)
    retry = world.log.next_retry()
    for _ in range(3):
        assert world.answer(first, PUB_REFUSAL) is None
    after = msgspec.structs.replace(world.log.state, outcomes_seq=1)
    assert msgspec.msgpack.Encoder(order="deterministic").encode(after) == before
    assert world.log.next_retry() == retry


answers = st.lists(st.sampled_from(["refused", "refused_403", "conflict", "applied"]),
                   min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(answers, st.randoms(use_true_random=False), st.booleans())
def test_replaying_the_log_in_any_interleaving_gives_the_same_state(
    kinds: list[str], rng: Any, snapshot_midway: bool,
) -> None:
    errors = {"refused": PUB_REFUSAL, "refused_403": PUB_DELETE_REFUSAL, "conflict": CONFLICT,
              "applied": None}
    world = World()
    now = 100.0
    version = 1
    for kind in kinds:
        planned = world.decide(now)
        if not planned:
            # A final failure, or applied: the pod changes and the rule asks again.
            version += 1
            world.view.apply(version, *pod(version))
            planned = world.decide(now)
        [plan] = planned
        world.answer(plan, errors[kind])
        if kind == "refused" and rng.random() < 0.5:
            world.answer(plan, errors[kind])  # redelivered
        now = world.log.next_retry() or now + 1.0
    # The planner's followers fold the two streams independently: any interleaving.
    replay = DecisionLog()
    plans, outcomes = list(world.plans), list(world.outcomes)
    halfway = rng.randrange(len(plans) + len(outcomes) + 1)
    step = 0
    while plans or outcomes:
        if snapshot_midway and step == halfway:
            state = msgspec.msgpack.decode(state_bytes(replay), type=DecisionState)
            replay = DecisionLog(state)
        step += 1
        if plans and (not outcomes or rng.random() < 0.5):
            replay.apply_plan(*plans.pop(0))
        else:
            replay.apply_outcome(*outcomes.pop(0))
    assert state_bytes(replay) == state_bytes(world.log)
    assert replay.next_retry() == world.log.next_retry()


def test_a_refused_eviction_of_a_pod_that_went_is_forgotten() -> None:
    world = World()
    [first] = world.decide(100.0)
    world.answer(first, PUB_REFUSAL)
    assert world.log.state.refusal_runs
    assert world.log.prune(lambda *_: True, 200.0) == 0, "the pod is still there"
    assert world.log.next_retry() is not None
    assert world.log.prune(lambda *_: False, 200.0) == 1
    assert world.log.state.refusal_runs == {}
    assert world.log.next_retry() is None
    assert world.log.due_retries(10_000.0) == []
