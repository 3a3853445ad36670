"""Creates are bounded per governor: never a new object planned while its governor already has
the bound outstanding, and every wanted object is created in the end.

A property over arbitrary interleavings of decisions, answers, observations and deletions, with
plans_for and the decision log as the planner drives them and a small bound.
"""

from __future__ import annotations

from collections.abc import Set
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from events import codec, subjects
from events.messages import ObjectRef, Observation, Outcome, Plan, ResourceRef
from spreadbus.projection.decision_log import DecisionLog, slot_of
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.projection.planning import (
    CREATE_EXPECTATION_SECONDS,
    PLAN_LOST_SECONDS,
    Desired,
    plans_for,
)

BOUND = 3
GOVERNORS = ("g0", "g1")
OBJECTS = 7


def governor(name: str) -> ObjectRef:
    return ObjectRef(group="apps.kruise.io", version="v1alpha1", resource="uniteddeployments",
                     namespace="default", name=name, uid=f"uid-{name}")


def target(gov: str, i: int) -> ObjectRef:
    return ObjectRef(group="apps", version="v1", resource="deployments", namespace="default",
                     name=f"{gov}-w{i}")


def wanted(gov: str) -> list[Desired]:
    return [Desired(verb="create", target=target(gov, i), governor=governor(gov),
                    object={"apiVersion": "apps/v1", "kind": "Deployment",
                            "metadata": {"labels": {"i": str(i)}}})
            for i in range(OBJECTS)]


class EveryCreate:
    """Wants every object of every governor, whatever changed (a whole reconcile per round)."""

    name = "every"
    resources: tuple[ResourceRef, ...] = (
        ResourceRef(group="apps", version="v1", resource="deployments"),)

    def desired(self, view: KubeProjection, changed: Set[tuple[str, str]],
                now: float) -> list[Desired]:
        return [want for gov in GOVERNORS for want in wanted(gov)]


class Stack:
    def __init__(self) -> None:
        self.view = KubeProjection()
        self.log = DecisionLog()
        self.rule = EveryCreate()
        self.seq = 0
        self.now = 1000.0
        self.in_flight: list[Plan] = []
        self.made: set[str] = set()  # created in the cluster, maybe not observed yet

    def _next(self) -> int:
        self.seq += 1
        return self.seq

    def outstanding(self, gov: str) -> int:
        """Objects of ``gov`` planned and not observed: the newest create in flight, or
        answered as made recently."""
        count = 0
        for i in range(OBJECTS):
            t = target(gov, i)
            if self.view.exists("c1", t.group, t.resource, t.namespace, t.name):
                continue
            record = self.log.newest(slot_of("c1", self.rule.name, "create", t.group,
                                             t.resource, t.namespace, t.name))
            if record is None:
                continue
            age = self.now - record.ts
            if (record.status == "in_flight" and age <= PLAN_LOST_SECONDS) or (
                    record.status in ("applied", "skipped")
                    and age < CREATE_EXPECTATION_SECONDS):
                count += 1
        return count

    def decide(self) -> None:
        before = {gov: self.outstanding(gov) for gov in GOVERNORS}
        self.log.deferred_due(self.now)
        plans = plans_for(self.rule, self.view, self.log, self.rule.desired(
            self.view, set(), self.now), cluster="c1", now=self.now, max_outstanding_creates=BOUND)
        for plan in plans:
            t = plan.target
            self.log.apply_plan(self._next(), subjects.plan("c1", plan.verb, t.group, t.resource,
                                                            t.namespace, t.name),
                                codec.encode(plan))
            self.in_flight.append(plan)
        for gov in GOVERNORS:
            assert self.outstanding(gov) <= max(BOUND, before[gov]), gov

    def answer(self, pick: int, fail: bool) -> None:
        if not self.in_flight:
            return
        plan = self.in_flight.pop(pick % len(self.in_flight))
        made = plan.target.name in self.made
        result = "failed" if fail and not made else ("skipped" if made else "applied")
        if result != "failed":
            self.made.add(plan.target.name)
        outcome = Outcome(plan_id=plan.id, cluster="c1", verb=plan.verb, target=plan.target,
                          result=result)  # type: ignore[arg-type]
        self.log.apply_outcome(self._next(), "outcome.c1.x", codec.encode(outcome))

    def watch(self, pick: int, event: str) -> None:
        names = sorted(self.made)
        if not names:
            return
        name = names[pick % len(names)]
        obj: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "Deployment",
                               "metadata": {"namespace": "default", "name": name,
                                            "uid": f"uid-{name}", "resourceVersion": "1"}}
        if event == "DELETED":
            self.made.discard(name)
        message = Observation(cluster="c1", group="apps", version="v1", resource="deployments",
                              event=event, object=obj)  # type: ignore[arg-type]
        self.view.apply(self._next(), subjects.observation("c1", "apps", "deployments",
                                                           "default", name),
                        codec.encode(message))


STEP = st.one_of(
    st.tuples(st.just("decide"), st.integers(0, 0), st.booleans()),
    st.tuples(st.just("answer"), st.integers(0, 50), st.booleans()),
    st.tuples(st.just("observe"), st.integers(0, 50), st.booleans()),
    st.tuples(st.just("tick"), st.integers(1, 90), st.booleans()),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(STEP, max_size=60))
def test_no_new_object_is_planned_past_the_bound_and_every_object_is_made_in_the_end(
    steps: list[tuple[str, int, bool]],
) -> None:
    stack = Stack()
    for kind, number, flag in steps:
        if kind == "decide":
            stack.decide()
        elif kind == "answer":
            stack.answer(number, fail=flag)
        elif kind == "observe":
            stack.watch(number, "DELETED" if flag else "ADDED")
        else:
            stack.now += number
    # Then a calm cluster: every plan answered as made, every object observed, round after
    # round; the failed creates are forgotten by the log after their memory, as in the planner.
    for _ in range(40):
        stack.decide()
        while stack.in_flight:
            stack.answer(0, fail=False)
        for name in sorted(stack.made):
            if not stack.view.exists("c1", "apps", "deployments", "default", name):
                stack.watch(sorted(stack.made).index(name), "ADDED")
        stack.log.prune(lambda *key: stack.view.exists(*key), stack.now)
        stack.now += 400.0
    for gov in GOVERNORS:
        for i in range(OBJECTS):
            t = target(gov, i)
            assert stack.view.exists("c1", t.group, t.resource, t.namespace, t.name), t.name
