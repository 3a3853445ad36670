"""A plan still unanswered long after it was decided was lost by the bus; it is decided again.

nats-server killed before its last writes reached its store can lose a plan, or its outcome,
that a planner already folded as in flight. The slot would then wait forever (a serial status
plan holds its object's next decision until the answer comes). After ``PLAN_LOST_SECONDS`` the
planner decides again under a new id (the old one may still be in the dedup window), and the
held slot is offered to the rules again.
"""

from __future__ import annotations

from collections.abc import Set

from events import codec, subjects
from events.messages import ObjectRef, Plan, ResourceRef
from spreadbus.projection.decision_log import DecisionLog
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.projection.planning import PLAN_LOST_SECONDS, Desired, plans_for
from tests.backbone.log_builders import deployment, observe

DEPLOYMENTS = ResourceRef(group="apps", version="v1", resource="deployments")


class Status:
    """Wants a status written as a whole, one plan at a time (serial), like the spread rules."""

    name = "status"
    resources = (DEPLOYMENTS,)

    def __init__(self, value: str) -> None:
        self.value = value

    def desired(self, view: KubeProjection, changed: Set[tuple[str, str]],
                now: float) -> list[Desired]:
        target = ObjectRef(group="apps", version="v1", resource="deployments",
                           namespace="default", name="web")
        return [Desired(verb="patch_status", target=target, patch={"status": {"x": self.value}},
                        precondition="resource_version", serial=True)]


def decide(rule: Status, projection: KubeProjection, log: DecisionLog, now: float) -> list[Plan]:
    return plans_for(rule, projection, log, rule.desired(projection, set(), now),
                     cluster="c1", now=now)


def record(log: DecisionLog, plan: Plan, seq: int) -> None:
    t = plan.target
    log.apply_plan(seq, subjects.plan("c1", plan.verb, t.group, t.resource, t.namespace,
                                      t.name), codec.encode(plan))


def world() -> tuple[KubeProjection, DecisionLog]:
    projection = KubeProjection()
    projection.apply(1, *observe(deployment("web", 3, 10)))
    return projection, DecisionLog()


def test_a_serial_plan_unanswered_past_the_limit_is_decided_again_under_a_new_id() -> None:
    projection, log = world()
    [first] = decide(Status("a"), projection, log, now=100.0)
    record(log, first, 1)
    # The next status waits for the first one's answer...
    assert decide(Status("b"), projection, log, now=100.0 + PLAN_LOST_SECONDS - 1) == []
    assert log.lost_holds(100.0 + PLAN_LOST_SECONDS - 1, PLAN_LOST_SECONDS) == []
    # ...until the answer is overdue: the held slot is offered again, and decided again.
    late = 100.0 + PLAN_LOST_SECONDS + 1
    [slot] = log.lost_holds(late, PLAN_LOST_SECONDS)
    assert "deployments" in slot
    assert log.lost_holds(late, PLAN_LOST_SECONDS) == [], "offered once"
    [again] = decide(Status("b"), projection, log, now=late)
    assert again.id != first.id
    assert again.patch == {"status": {"x": "b"}}


def test_the_same_decision_lost_gets_a_new_id_too() -> None:
    projection, log = world()
    [first] = decide(Status("a"), projection, log, now=0.0)
    record(log, first, 1)
    assert decide(Status("a"), projection, log, now=PLAN_LOST_SECONDS) == []
    [again] = decide(Status("a"), projection, log, now=PLAN_LOST_SECONDS + 0.5)
    assert again.id != first.id, "the lost plan's id may still be in the dedup window"
    record(log, again, 2)
    assert decide(Status("a"), projection, log, now=PLAN_LOST_SECONDS + 1) == [], \
        "the new plan is in flight"


