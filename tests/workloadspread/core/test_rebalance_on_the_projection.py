"""The WorkloadSpread rule carrying out a rebalance request on the projection: one eviction at a
time, never sent twice while in flight (as the decision log says), budgets read from the
projection, an eviction a budget refused decided again after its backoff, and ``handled`` written
once nothing more can move."""

from __future__ import annotations

import json
from typing import Any

from events import codec, subjects
from events.messages import ApiError, Observation, Outcome, Plan
from spreadbus.features.workloadspread.core.model import MATCHED_ANNOTATION as MATCHED
from spreadbus.features.workloadspread.core.rebalance import (
    HANDLED_ANNOTATION,
    REQUEST_ANNOTATION,
)
from spreadbus.features.workloadspread.planning.rule import WorkloadSpreadRule
from spreadbus.projection.decision_log import DecisionLog, slot_target
from spreadbus.projection.kube_state import KubeProjection, object_key, resource_key
from spreadbus.projection.planning import Desired, plans_for
from spreadbus.projection.refusal_backoff import backoff_seconds

T0 = 1_800_000_000.0
KINDS = {"Pod": ("", "v1", "pods"), "Deployment": ("apps", "v1", "deployments"),
         "ReplicaSet": ("apps", "v1", "replicasets"),
         "WorkloadSpread": ("apps.kruise.io", "v1alpha1", "workloadspreads"),
         "PodDisruptionBudget": ("policy", "v1", "poddisruptionbudgets")}


class World:
    def __init__(self) -> None:
        self.view = KubeProjection()
        self.rule = WorkloadSpreadRule("c1", min_interval_seconds=0.0)
        self.log = DecisionLog()
        self.rule.read_plans(self.log)
        self.seq = 0
        self.plan_seq = 0
        self.outcome_seq = 0
        self.plans: list[Plan] = []
        """The plans of the last round, folded into the log as the planner folds them."""

    def put(self, obj: dict[str, Any]) -> None:
        self.seq += 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.seq)
        group, version, resource = KINDS[obj["kind"]]
        message = Observation(cluster="c1", group=group, version=version, resource=resource,
                              event="MODIFIED", object=obj)
        subject = subjects.observation("c1", group, resource, meta.get("namespace", ""),
                                       meta["name"])
        self.view.apply(self.seq, subject, codec.encode(message))

    def round(self, at: float) -> list[Desired]:
        changed = self.view.take_changed() | self.rule.due(at)
        for slot in self.log.due_retries(at):  # as the planner offers them
            cluster, group, resource, namespace, name = slot_target(slot)
            changed.add((resource_key(cluster, group, resource), object_key(namespace, name)))
        desired = self.rule.desired(self.view, changed, at)
        self.plans = plans_for(self.rule, self.view, self.log, desired, cluster="c1", now=at)
        for plan in self.plans:
            self.plan_seq += 1
            t = plan.target
            self.log.apply_plan(self.plan_seq, subjects.plan("c1", plan.verb, t.group,
                                                             t.resource, t.namespace, t.name),
                                codec.encode(plan))
        return desired

    def answer(self, plan: Plan, error: ApiError | None) -> None:
        self.outcome_seq += 1
        t = plan.target
        outcome = Outcome(plan_id=plan.id, cluster="c1", verb=plan.verb, target=t,
                          result="failed" if error else "applied", error=error)
        slot = self.log.apply_outcome(self.outcome_seq, subjects.outcome(
            "c1", plan.verb, t.group, t.resource, t.namespace, t.name), codec.encode(outcome))
        if slot is not None:  # offered again, as the planner offers a failed plan's object
            self.view.changed.add((resource_key("c1", t.group, t.resource),
                                   object_key(t.namespace, t.name)))


def spread(*, fixed_max: int, fixed_replicas: int, annotations: dict[str, str]) -> dict[str, Any]:
    missing = fixed_max - fixed_replicas
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
            "metadata": {"name": "ws", "namespace": "default", "uid": "ws-uid",
                         "generation": 1, "annotations": annotations},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                   "name": "web"},
                     "subsets": [{"name": "fixed", "maxReplicas": fixed_max},
                                 {"name": "elastic"}]},
            "status": {"observedGeneration": 1, "subsetStatuses": [
                {"name": "fixed", "replicas": fixed_replicas, "missingReplicas": missing},
                {"name": "elastic", "replicas": 4 - fixed_replicas, "missingReplicas": -1}]}}


def pod(name: str, subset: str, *, terminating: bool = False,
        ready: bool = True) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name, "namespace": "default", "uid": f"uid-{name}",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "labels": {"app": "web", "pod-template-hash": "h1"},
        "annotations": {MATCHED: json.dumps({"name": "ws", "subset": subset})},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-h1",
                             "uid": "rs-uid", "controller": True}]}
    if terminating:
        metadata["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"nodeName": "n1"},
            "status": {"phase": "Running",
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def setup(annotations: dict[str, str]) -> World:
    world = World()
    world.put({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web", "namespace": "default", "uid": "d-uid"},
               "spec": {"replicas": 4, "template": {"metadata": {"labels": {"app": "web"}}}}})
    world.put({"apiVersion": "apps/v1", "kind": "ReplicaSet",
               "metadata": {"name": "web-h1", "namespace": "default", "uid": "rs-uid",
                            "labels": {"pod-template-hash": "h1"},
                            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                                 "name": "web", "uid": "d-uid",
                                                 "controller": True}]},
               "spec": {"template": {"metadata": {"labels": {"app": "web"}}}}})
    world.put(spread(fixed_max=3, fixed_replicas=1, annotations=annotations))
    world.put(pod("f0", "fixed"))
    for i in range(3):
        world.put(pod(f"e{i}", "elastic"))
    return world


def evictions(desired: list[Desired]) -> list[str]:
    return sorted(d.target.name for d in desired if d.verb == "evict")


def evicting(plans: list[Plan]) -> list[Plan]:
    return [p for p in plans if p.verb == "evict"]


def handled(desired: list[Desired]) -> list[Any]:
    return [d.patch for d in desired
            if d.verb == "patch" and d.target.resource == "workloadspreads"]


def test_without_a_request_nothing_moves() -> None:
    world = setup({})
    assert evictions(world.round(T0)) == []


def test_one_at_a_time_until_nothing_more_can_move_then_handled() -> None:
    world = setup({REQUEST_ANNOTATION: "r1"})
    request = {REQUEST_ANNOTATION: "r1"}
    first = world.round(T0)
    (moved,) = evictions(first)
    assert handled(first) == []
    # Nothing observed yet: the eviction is in flight, nothing else goes meanwhile.
    world.put(pod("f0", "fixed"))
    assert evictions(world.round(T0 + 1)) == []
    # It lands: the pod goes, its replacement is steered to the fixed subset, not ready yet.
    world.put(pod(moved, "elastic", terminating=True))
    world.put(pod("f1", "fixed", ready=False))
    world.put(spread(fixed_max=3, fixed_replicas=2, annotations=request))
    assert evictions(world.round(T0 + 2)) == [], "one replica is unavailable already"
    world.put(pod("f1", "fixed"))
    (second,) = evictions(world.round(T0 + 3))
    assert second != moved
    world.put(pod(second, "elastic", terminating=True))
    world.put(pod("f2", "fixed"))
    world.put(spread(fixed_max=3, fixed_replicas=3, annotations=request))
    last = world.round(T0 + 4)
    assert evictions(last) == []
    assert handled(last) == [{"metadata": {"annotations": {HANDLED_ANNOTATION: "r1"}}}]


def test_handled_when_the_fixed_subset_is_full() -> None:
    world = setup({REQUEST_ANNOTATION: "r1"})
    world.put(spread(fixed_max=1, fixed_replicas=1, annotations={REQUEST_ANNOTATION: "r1"}))
    desired = world.round(T0)
    assert evictions(desired) == []
    assert handled(desired) == [{"metadata": {"annotations": {HANDLED_ANNOTATION: "r1"}}}]


def test_a_disruption_budget_on_the_projection_holds_moves_back() -> None:
    world = setup({REQUEST_ANNOTATION: "r1"})
    world.put({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
               "metadata": {"name": "pdb", "namespace": "default"},
               "spec": {"selector": {"matchLabels": {"app": "web"}}},
               "status": {"disruptionsAllowed": 0}})
    desired = world.round(T0)
    assert evictions(desired) == []
    assert handled(desired) == []
    assert world.rule.next_wake() is not None, "looked at again while pods wait"


def test_an_eviction_a_budget_refused_is_not_on_its_way_and_is_decided_again_after_backoff(
) -> None:
    world = setup({REQUEST_ANNOTATION: "r1"})
    world.round(T0)
    [plan] = evicting(world.plans)
    world.answer(plan, ApiError(status=429, reason="TooManyRequests",
                                message="Cannot evict pod as it would violate the pod's "
                                        "disruption budget."))
    # Refused: the pod is not leaving, so the rebalance still wants it, and holds it back
    # only for the backoff.
    assert evictions(world.round(T0 + 0.1)) == [plan.target.name]
    assert evicting(world.plans) == [], "still backing off"
    retry = T0 + backoff_seconds(plan.id, 1)
    assert world.rule.next_wake() is not None, "looked at again while the pod waits"
    assert evictions(world.round(retry)) == [plan.target.name]
    [again] = evicting(world.plans)
    assert again.target == plan.target
    assert again.id != plan.id
    # On its way now: not sent twice.
    world.put(spread(fixed_max=3, fixed_replicas=1, annotations={REQUEST_ANNOTATION: "r1"}))
    assert evictions(world.round(retry + 0.1)) == []
    world.answer(again, None)
    assert evictions(world.round(retry + 0.2)) == [], "applied: leaving until it is seen gone"
