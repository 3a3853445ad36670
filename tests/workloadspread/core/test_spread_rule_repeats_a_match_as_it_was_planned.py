"""Pods made before their WorkloadSpread: the match written to them is planned once.

The first round plans each pod's match (label, ``matched-workloadspread``) together with its
deletion cost. Until the pod is observed with it, every later round plans the match again; that
repeat must be the same write (same intent, so the planner's decision log holds it back while the
first is in flight or answered for the same observation), not the match alone, which would be a
second plan the actuator finds already true.
"""

from __future__ import annotations

from typing import Any, Literal

from hypothesis import given, settings
from hypothesis import strategies as st

from events import codec, subjects
from events.messages import Outcome, Plan
from spreadbus.projection.decision_log import DecisionLog
from spreadbus.projection.planning import plans_for
from tests.workloadspread.core.test_spread_rule_hands_out_what_changed import (
    DELETION_COST,
    T0,
    World,
    setup,
)

MATCHED = "apps.kruise.io/matched-workloadspread"


def bare_pod(name: str) -> dict[str, Any]:
    """A running pod of the Deployment that no WorkloadSpread annotated."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                         "labels": {"app": "web", "pod-template-hash": "h1"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                              "name": "web-h1", "uid": "rs-uid",
                                              "controller": True}]},
            "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}


Answer = Literal["applied"] | None


def fold(log: DecisionLog, plans: list[Plan], seq: int, answer: Answer) -> int:
    """Fold ``plans`` into the log, each answered ``answer`` (``None``: still in flight)."""
    for plan in plans:
        seq += 1
        where = (plan.target.group, plan.target.resource, plan.target.namespace,
                 plan.target.name)
        subject = subjects.plan("c1", plan.verb, *where)
        log.apply_plan(seq, subject, codec.encode(plan))
        if answer is not None:
            outcome = Outcome(plan_id=plan.id, cluster="c1", verb=plan.verb,
                              target=plan.target, result=answer)
            log.apply_outcome(seq, subjects.outcome("c1", plan.verb, *where), codec.encode(outcome))
    return seq


def pod_plans(plans: list[Plan]) -> list[Plan]:
    return [p for p in plans if p.verb == "patch" and p.target.resource == "pods"]


@settings(max_examples=30, deadline=None)
@given(pods=st.integers(1, 8), answered=st.sampled_from([None, "applied"]),
       rounds=st.integers(1, 4))
def test_a_match_not_observed_yet_is_not_planned_again(
    pods: int, answered: Answer, rounds: int
) -> None:
    world: World = setup()
    world.put({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "n1"}})
    for i in range(pods):
        world.put(bare_pod(f"p{i}"))
    log = DecisionLog()
    first = pod_plans(plans_for(world.rule, world.view, log,
                                world.round(T0), cluster="c1", now=T0))
    assert {p.target.name for p in first} == {f"p{i}" for i in range(pods)}
    for plan in first:
        annotations = plan.patch["metadata"]["annotations"]
        assert MATCHED in annotations
        assert DELETION_COST in annotations
    seq = fold(log, first, 0, answered)
    for step in range(1, rounds + 1):
        # p0 is observed again, still without its write (a status change): another round
        # while none of the pods' writes has been observed yet.
        world.put(world.objects["Pod/p0"])
        again = plans_for(world.rule, world.view, log, world.round(T0 + step),
                          cluster="c1", now=T0 + step)
        repeated = [p for p in pod_plans(again) if p.target.name != "p0"]
        assert repeated == [], [(p.target.name, p.patch) for p in repeated]
        seq = fold(log, again, seq, answered)
