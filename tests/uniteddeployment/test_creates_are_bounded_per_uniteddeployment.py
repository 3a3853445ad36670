"""A UnitedDeployment with more subsets than the bound has at most that many creates outstanding.

The real rule and reconcile on the projection: each round's creates are planned, folded into the
decision log, answered and their workloads observed, as on the bus. A create is outstanding from
its plan until its workload is observed; the subsets beyond the bound wait for the next round,
which the workloads' observations (or the deferral's time) bring.
"""

from __future__ import annotations

from typing import Any

from events import codec, subjects
from events.messages import Observation, Outcome, Plan
from spreadbus.features.uniteddeployment.core.reconcile import reconcile_grouped
from spreadbus.features.uniteddeployment.core.validation import MAX_SUBSETS
from spreadbus.features.uniteddeployment.planning.rule import UnitedDeploymentRule
from spreadbus.projection.decision_log import DecisionLog
from spreadbus.projection.kube_state import KubeProjection, object_key, resource_key
from spreadbus.projection.planning import (
    DEFERRED_CREATES_RETRY_SECONDS,
    MAX_OUTSTANDING_CREATES,
    plans_for,
)
from tests.uniteddeployment.world import template

T0 = 1_800_000_000.0
SUBSETS = 300
UD_KEY = (resource_key("c1", "apps.kruise.io", "uniteddeployments"), object_key("default", "big"))


def big_ud(subsets: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
        "metadata": {"namespace": "default", "name": "big", "uid": "big-uid", "generation": 1,
                     "resourceVersion": "1"},
        "spec": {"replicas": subsets, "selector": {"matchLabels": {"app": "sample"}},
                 "template": template("deploymentTemplate"),
                 "topology": {"subsets": [{"name": f"s{i}", "replicas": 1}
                                          for i in range(subsets)]}},
    }


class Bus:
    """The projection and the decision log, fed as the planner's followers feed them."""

    def __init__(self) -> None:
        self.view = KubeProjection()
        self.log = DecisionLog()
        self.rule = UnitedDeploymentRule("c1", reconcile=reconcile_grouped,
                                         min_interval_seconds=0.0)
        self.seq = 0

    def observe(self, obj: dict[str, Any], group: str, resource: str) -> None:
        self.seq += 1
        meta = obj["metadata"]
        meta.setdefault("uid", f"uid-{meta['name']}")
        meta["resourceVersion"] = str(self.seq)
        message = Observation(cluster="c1", group=group, version="v1", resource=resource,
                              event="ADDED", object=obj)
        subject = subjects.observation("c1", group, resource, meta["namespace"], meta["name"])
        self.view.apply(self.seq, subject, codec.encode(message))

    def decide(self, now: float) -> list[Plan]:
        changed = self.view.take_changed() | self.log.deferred_due(now)
        desired = self.rule.desired(self.view, changed, now)
        plans = plans_for(self.rule, self.view, self.log, desired, cluster="c1", now=now)
        for plan in plans:
            self.seq += 1
            t = plan.target
            self.log.apply_plan(self.seq, subjects.plan("c1", plan.verb, t.group, t.resource,
                                                        t.namespace, t.name), codec.encode(plan))
        return plans

    def answer(self, plan: Plan, result: str = "applied") -> None:
        self.seq += 1
        outcome = Outcome(plan_id=plan.id, cluster="c1", verb=plan.verb, target=plan.target,
                          result=result)  # type: ignore[arg-type]
        self.log.apply_outcome(self.seq, "outcome.c1.x", codec.encode(outcome))

    def workload_creates(self, plans: list[Plan]) -> list[Plan]:
        return [p for p in plans if p.verb == "create" and p.target.resource == "deployments"]


def test_the_bound_is_above_what_a_valid_uniteddeployment_creates_at_once() -> None:
    assert MAX_OUTSTANDING_CREATES >= MAX_SUBSETS + 1  # every workload and a revision


def test_creates_beyond_the_bound_wait_until_the_outstanding_ones_are_observed() -> None:
    bus = Bus()
    bus.observe(big_ud(SUBSETS), "apps.kruise.io", "uniteddeployments")
    now = T0
    first = bus.decide(now)
    creates = [p for p in first if p.verb == "create"]
    assert len(creates) == MAX_OUTSTANDING_CREATES  # the revision is one of them
    assert all(p.governor is not None and p.governor.name == "big" for p in creates)
    assert bus.log.deferred == {UD_KEY: now + DEFERRED_CREATES_RETRY_SECONDS}

    # Offered again before anything landed: no other subset's create (in flight, then
    # answered and not observed yet, both count). An answered create is planned again, as
    # before any bound (the next finds its object and is skipped): it holds its own place.
    batch = {p.target.name for p in creates}
    now += DEFERRED_CREATES_RETRY_SECONDS
    assert [p for p in bus.decide(now) if p.verb == "create"] == []
    for plan in creates:
        bus.answer(plan)
    now += DEFERRED_CREATES_RETRY_SECONDS
    assert {p.target.name for p in bus.decide(now) if p.verb == "create"} <= batch

    created: set[str] = set()
    pending = bus.workload_creates(creates)
    rounds = 1
    while pending:
        # The workloads land: observed, which brings the UnitedDeployment's next round.
        for plan in pending:
            assert plan.object is not None
            bus.observe(dict(plan.object), "apps", "deployments")
            created.add(plan.target.name)
        now += 1.0
        plans = bus.decide(now)
        pending = bus.workload_creates(plans)
        assert len(pending) <= MAX_OUTSTANDING_CREATES
        assert not created & {p.target.name for p in pending}
        for plan in plans:
            if plan.verb == "create":
                bus.answer(plan)
        rounds += 1
    assert len(created) == SUBSETS
    assert rounds == 4  # 127 (and the revision), 128, 45, then nothing left


def test_a_failed_create_frees_its_place() -> None:
    bus = Bus()
    bus.observe(big_ud(MAX_OUTSTANDING_CREATES + 10), "apps.kruise.io", "uniteddeployments")
    first = bus.workload_creates(bus.decide(T0))
    for plan in first[:5]:
        bus.answer(plan, "failed")
    again = bus.workload_creates(bus.decide(T0 + DEFERRED_CREATES_RETRY_SECONDS))
    # Five places are free: five subsets never planned before are, the refused ones are not.
    assert len(again) == 5
    assert not {p.target.name for p in again} & {p.target.name for p in first}
