"""The propagation rule with a PodUnavailableBudget of the host covering the template: a copy
whose share shrinks is held, recorded on the binding, and given up only as the other copies'
replicas become available; the member's check accepts the held count and nothing else."""

from __future__ import annotations

import json
from typing import Any

from spreadbus.features.propagation.core.member_copy import follows
from spreadbus.features.propagation.core.stepped_replicas import STEPPED_REPLICAS
from tests.propagation.test_the_planner_propagates_through_members import (
    NOW,
    World,
    binding,
    report,
    world,
)


def budget(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
            "metadata": {"name": "demo", "namespace": "default"}, "spec": spec}


def only_member1(w: World) -> None:
    pp = w.get("host", "policy.karmada.io", "propagationpolicies", "default", "demo")
    assert pp is not None
    pp["spec"]["placement"]["clusterAffinity"]["clusterNames"] = ["member1"]
    w.put("host", "policy.karmada.io", "propagationpolicies", pp)


def replicas(w: World, member: str) -> int | None:
    placed = w.get(member, "apps", "deployments", "default", "demo-deploy")
    return None if placed is None else int(placed["spec"]["replicas"])


def held(w: World) -> dict[str, int]:
    text = binding(w)["metadata"].get("annotations", {}).get(STEPPED_REPLICAS)
    return {} if text is None else dict(json.loads(text))


def test_a_dropped_cluster_keeps_its_copy_until_the_others_are_available() -> None:
    w = world()
    w.settle()
    report(w, "member1", 2, 2)
    report(w, "member2", 1, 1)
    w.put("host", "policy.kruise.io", "podunavailablebudgets",
          budget(targetRef={"apiVersion": "apps/v1", "kind": "Deployment",
                            "name": "demo-deploy"}, maxUnavailable=0))
    w.settle(NOW + 1)
    assert held(w) == {}
    only_member1(w)
    w.settle(NOW + 2)
    # member1 grows at once; member2's one available replica is all the budget has.
    assert binding(w)["spec"]["clusters"] == [{"name": "member1", "replicas": 3}]
    assert (replicas(w, "member1"), replicas(w, "member2")) == (3, 1)
    assert held(w) == {"member2": 1}
    report(w, "member1", 2, 3)
    w.settle(NOW + 3)
    assert replicas(w, "member2") == 1, "the new replica is not available yet"
    report(w, "member1", 3, 3)
    w.settle(NOW + 4)
    assert replicas(w, "member2") is None
    assert held(w) == {}


def test_a_shrinking_copy_steps_down_within_max_unavailable() -> None:
    """3 in member1 (2) and member2 (1) become 3 in member1 under maxUnavailable 1 (a
    selector budget): member2's one replica is the one the budget spares, so it goes at once."""
    w = world()
    w.settle()
    report(w, "member1", 2, 2)
    report(w, "member2", 1, 1)
    w.put("host", "policy.kruise.io", "podunavailablebudgets",
          budget(selector={"matchLabels": {"app": "demo"}}, maxUnavailable=1))
    only_member1(w)
    w.settle(NOW + 2)
    assert (replicas(w, "member1"), replicas(w, "member2")) == (3, None)


def test_the_member_accepts_a_held_copy_only_at_the_held_count() -> None:
    w = world()
    w.settle()
    report(w, "member1", 2, 2)
    report(w, "member2", 1, 1)
    w.put("host", "policy.kruise.io", "podunavailablebudgets",
          budget(targetRef={"apiVersion": "apps/v1", "kind": "Deployment",
                            "name": "demo-deploy"}, minAvailable=3))
    only_member1(w)
    w.settle(NOW + 2)
    rb = binding(w)
    placed = w.get("member2", "apps", "deployments", "default", "demo-deploy")
    assert placed is not None
    assert follows(rb, placed, placed) == ""
    placed["spec"]["replicas"] = 0
    assert "holds it at 1" in follows(rb, placed, placed)
    # Not a copy already there: a create follows spec.clusters alone.
    placed["spec"]["replicas"] = 1
    assert "does not schedule it" in follows(rb, placed, None)


def test_without_a_budget_the_dropped_cluster_loses_its_copy_at_once() -> None:
    w = world()
    w.settle()
    report(w, "member1", 2, 2)
    report(w, "member2", 1, 1)
    only_member1(w)
    w.settle(NOW + 2)
    assert (replicas(w, "member1"), replicas(w, "member2")) == (3, None)
    assert STEPPED_REPLICAS not in binding(w)["metadata"].get("annotations", {})


def test_a_copy_in_a_cluster_that_is_not_ready_goes_at_once() -> None:
    """Its pods are not known to serve: the budget counts none of them, so removing the copy
    costs nothing (a failover from a lost cluster is not held up)."""
    w = world()
    w.settle()
    report(w, "member1", 2, 2)
    report(w, "member2", 1, 1)
    w.put("host", "policy.kruise.io", "podunavailablebudgets",
          budget(targetRef={"apiVersion": "apps/v1", "kind": "Deployment",
                            "name": "demo-deploy"}, maxUnavailable=0))
    member2 = w.get("host", "cluster.karmada.io", "clusters", "", "member2")
    assert member2 is not None
    member2["status"]["conditions"] = [{"type": "Ready", "status": "Unknown"}]
    w.put("host", "cluster.karmada.io", "clusters", member2)
    only_member1(w)
    w.settle(NOW + 2)
    assert (replicas(w, "member1"), replicas(w, "member2")) == (3, None)
