"""The decision log forgets settled decisions about deleted objects, deterministically."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from events import codec, subjects
from events.messages import ObjectRef, Outcome, Plan
from spreadbus.projection import snapshot
from spreadbus.projection.decision_log import DecisionLog, slot_target
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.projection.planning import plans_for
from tests.backbone.log_builders import deployment, observe, random_log
from tests.fixtures.observed_generation import ObservedGeneration

RULE = ObservedGeneration("c1")


class Pipeline:
    """Kube fold -> rule -> plans folded -> every other plan answered, as the planner runs it."""

    def __init__(self) -> None:
        self.kube = KubeProjection()
        self.log = DecisionLog()
        self.plan_seq = 0
        self.outcome_seq = 0
        self.emitted: list[str] = []

    def observe(self, seq: int, subject: str, data: bytes) -> None:
        self.kube.apply(seq, subject, data)
        changed = self.kube.take_changed()
        plans = plans_for(RULE, self.kube, self.log, RULE.desired(self.kube, changed, 1.0),
                          cluster="c1", now=1.0)
        for plan in plans:
            self.emitted.append(plan.id)
            self.plan_seq += 1
            t = plan.target
            self.log.apply_plan(self.plan_seq, subjects.plan("c1", plan.verb, t.group,
                                                             t.resource, t.namespace, t.name),
                                codec.encode(plan))
            if self.plan_seq % 2:
                self.answer(plan)

    def answer(self, plan: Plan, result: str = "applied") -> None:
        self.outcome_seq += 1
        outcome = Outcome(plan_id=plan.id, cluster="c1", verb=plan.verb, target=plan.target,
                          result=result)  # type: ignore[arg-type]
        self.log.apply_outcome(self.outcome_seq, "outcome.c1", codec.encode(outcome))

    def prune(self) -> int:
        return self.log.prune(self.kube.exists)

    def dump(self) -> bytes:
        return snapshot.dump(self.kube.state, self.log.state, taken_at=0.0)


def test_churning_names_leave_only_live_or_in_flight_slots() -> None:
    pipeline = Pipeline()
    seq = 0
    for i in range(300):
        for event, obj in (("ADDED", deployment(f"pod-{i}", 1, 2 * i)),
                           ("DELETED", deployment(f"pod-{i}", 1, 2 * i + 1))):
            seq += 1
            pipeline.observe(seq, *observe(obj, event))
        if i % 50 == 49:
            pipeline.prune()
    pipeline.prune()
    state = pipeline.log.state
    in_flight = [r for r in state.latest.values() if r.status == "in_flight"]
    # Every settled decision about a deleted object is gone; unanswered ones wait for their answer.
    assert len(state.latest) == len(in_flight) == 150
    assert set(state.slots) == {r.id for r in state.latest.values()}


def test_a_live_object_and_an_in_flight_plan_are_kept_until_settled_and_gone() -> None:
    pipeline = Pipeline()
    pipeline.observe(1, *observe(deployment("live", 1, 1), "ADDED"))   # answered
    pipeline.observe(2, *observe(deployment("gone", 1, 2), "ADDED"))   # left in flight
    pipeline.observe(3, *observe(deployment("gone", 1, 3), "DELETED"))
    assert pipeline.prune() == 0
    (in_flight,) = [r for r in pipeline.log.state.latest.values() if r.status == "in_flight"]
    target = ObjectRef(group="apps", version="v1", resource="deployments",
                       namespace="default", name="gone")
    plan = Plan(id=in_flight.id, cluster="c1", verb="patch", target=target, rule=RULE.name)
    pipeline.answer(plan, "failed")
    assert pipeline.prune() == 1
    assert [r.id for r in pipeline.log.state.latest.values()] == [pipeline.emitted[0]]


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), every=st.integers(10, 120))
def test_pruning_changes_no_decision_and_replays_to_identical_snapshots(
    seed: int, every: int
) -> None:
    log = random_log(seed, 300)
    runs = [Pipeline(), Pipeline(), Pipeline()]
    for i, entry in enumerate(log):
        for run in runs:
            run.observe(*entry)
        if i % every == 0:
            runs[0].prune()
            runs[1].prune()
    runs[0].prune()
    runs[1].prune()
    pruned, again, unpruned = runs
    assert pruned.dump() == again.dump()
    assert pruned.emitted == unpruned.emitted
    assert len(pruned.dump()) <= len(unpruned.dump())
    assert _settled_targets(pruned) <= _live_names(pruned.kube)


def _settled_targets(pipeline: Pipeline) -> set[tuple[str, str]]:
    return {
        (slot_target(slot)[3], slot_target(slot)[4])
        for slot, record in pipeline.log.state.latest.items() if record.status != "in_flight"
    }


def _live_names(kube: KubeProjection) -> set[tuple[str, str]]:
    return {(o["metadata"]["namespace"], o["metadata"]["name"])
            for _, o in kube.iter_decoded("c1", "apps", "deployments")}
