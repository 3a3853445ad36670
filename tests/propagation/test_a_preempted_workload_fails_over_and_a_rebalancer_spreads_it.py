"""The WorkloadRebalancer's second scenario (application failover) end to end, on ``spreadbus up
--members member1,member2``: a low-priority Deployment of 4 (300m cpu each) is propagated 2:2 by
a Divided/Weighted PropagationPolicy with ``failover.application`` (a short toleration, purged
gracefully). member1 has one node of 1 cpu, member2 one of 2. A high-priority Deployment
applied in member1 (800m) makes member1's scheduler preempt both low-priority pods there, whose
replacements cannot be placed: member1's copy is unhealthy as Karmada's interpreter judges a
Deployment, and after the toleration the binding evicts member1 and every replica runs in
member2. The high-priority workload goes and nothing moves by itself; a WorkloadRebalancer
spreads the replicas over both again, its status as Karmada's controller writes it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from tests.fixtures.polling import wait_until
from tests.propagation.members_stack import (
    Stack,
    evenly_over,
    members_stack,
    ready,
    rebalancer,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
MEMBERS = ("member1", "member2")
CPU = {"member1": "1", "member2": "2"}
TOLERATION_SECONDS = 8
"""Long enough for a copy's new pods to become available while it scales up, so only the copy
whose pods cannot be placed stays unhealthy past it."""


def topology(name: str) -> dict[str, Any]:
    return {"name": name, "groups": [{
        "name": name, "count": 1,
        "labels": {"topology.kubernetes.io/region": "region-1",
                   "topology.kubernetes.io/zone": f"{name}-a", "kubernetes.io/arch": "amd64"},
        "allocatable": {"cpu": CPU[name], "memory": "16Gi", "pods": 110}}]}


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value}


def deployment(name: str, replicas: int, cpu: str, priority: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"priorityClassName": priority, "containers": [{
                                      "name": "main", "image": "nginx:alpine",
                                      "resources": {"requests": {"cpu": cpu}}}]}}}}


POLICY = {
    "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": "web"}],
             "propagateDeps": True,
             "placement": evenly_over(MEMBERS),
             "failover": {"application": {
                 "decisionConditions": {"tolerationSeconds": TOLERATION_SECONDS},
                 "purgeMode": "Gracefully", "gracePeriodSeconds": 120}}}}
REBALANCER = rebalancer("demo", "web")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with members_stack(tmp_path_factory.mktemp("preemption"), MEMBERS,
                       topologies={m: topology(m) for m in MEMBERS}) as running:
        yield running


def binding(stack: Stack) -> dict[str, Any]:
    found: dict[str, Any] = stack.get("rb", "web-deployment") or {}
    return found


def scheduled(stack: Stack) -> dict[str, int]:
    return {c["name"]: c.get("replicas", 0)
            for c in binding(stack).get("spec", {}).get("clusters", [])}


def ready_replicas(stack: Stack, member: str, name: str = "web") -> int | None:
    """member's copy's ready replicas; ``None`` when it has no copy."""
    copy = stack.get("--context", member, "deployment", name)
    return None if copy is None else int(copy.get("status", {}).get("readyReplicas", 0))


def placed(stack: Stack, shares: dict[str, int]) -> Callable[[], bool]:
    """The binding says ``shares``, each member runs its share ready, the others no copy."""
    return lambda: (scheduled(stack) == shares
                    and all(ready_replicas(stack, m) == shares.get(m) for m in MEMBERS))


def preempted(stack: Stack) -> list[str]:
    events = stack.get("--context", "member1", "events",
                       "--field-selector", "reason=Preempted") or {}
    return sorted(e["involvedObject"]["name"] for e in events.get("items", []))


def test_a_preempted_workload_fails_over_and_a_rebalancer_spreads_it_again(
        stack: Stack) -> None:
    stack.until(lambda: all(ready(stack, m) for m in MEMBERS), "both members Ready")
    for member, classes in (("member1", [priority_class("low", 10),
                                         priority_class("high", 1000)]),
                            ("member2", [priority_class("low", 10)])):
        stack.kubectl("--context", member, "apply", "-f", "-", stdin=yaml.safe_dump_all(classes))
    stack.kubectl("apply", "-f", "-",
                  stdin=yaml.safe_dump_all([deployment("web", 4, "300m", "low"), POLICY]))
    stack.until(placed(stack, {"member1": 2, "member2": 2}), "2 replicas ready in each member")
    low_pods = {p["metadata"]["name"] for p in stack.get(
        "--context", "member1", "pods", "-l", "app=web")["items"]}
    assert len(low_pods) == 2

    # 800m of member1's 1 cpu: neither low-priority pod of 300m may stay.
    stack.kubectl("--context", "member1", "apply", "-f", "-",
                  stdin=yaml.safe_dump(deployment("hog", 1, "800m", "high")))
    stack.until(lambda: ready_replicas(stack, "member1", "hog") == 1,
                "the high-priority pod running in member1")
    stack.until(lambda: preempted(stack) == sorted(low_pods),
                "both low-priority pods in member1 preempted")
    stack.until(placed(stack, {"member2": 4}),
                "every replica in member2, member1's copy gone with its eviction task")
    assert "gracefulEvictionTasks" not in binding(stack)["spec"]
    # member2's copy was unhealthy while it scaled up: its timer ends once it is seen healthy.
    stack.until(lambda: "propagation.spreadbus.io/unhealthy-since" not in binding(
        stack)["metadata"].get("annotations", {}), "no application failover timer left")

    stack.kubectl("--context", "member1", "delete", "deployment", "hog")
    stack.until(lambda: not stack.get("--context", "member1", "pods")["items"],
                "member1 without a pod")
    assert scheduled(stack) == {"member2": 4}, "room alone moves nothing"
    assert ready_replicas(stack, "member1") is None

    stack.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(REBALANCER))
    stack.until(placed(stack, {"member1": 2, "member2": 2}), "spread over both again")
    status = wait_until(lambda: (s := (stack.get("workloadrebalancer", "demo") or {}).get(
        "status", {})) and "finishTime" in s and s, what="the rebalancer finished",
        timeout=60, interval=0.2)
    assert set(status) == {"finishTime", "observedGeneration", "observedWorkloads"}, status
    assert status["observedGeneration"] == 1
    assert status["observedWorkloads"] == [{
        "result": "Successful",
        "workload": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                     "namespace": "default"}}]
    assert json.loads(json.dumps(binding(stack)["spec"]["rescheduleTriggeredAt"])) == (
        stack.get("workloadrebalancer", "demo")["metadata"]["creationTimestamp"])
