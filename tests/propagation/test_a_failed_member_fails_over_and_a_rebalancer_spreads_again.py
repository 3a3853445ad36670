"""The WorkloadRebalancer's first scenario (cluster failover) end to end, on ``spreadbus up
--members member1,member2``: a Deployment of 4 propagated 2:2 (and a ConfigMap copied whole to
both) by a Divided/Weighted PropagationPolicy that tolerates an unreachable cluster's NoExecute
taint for 2 s (``failover.cluster``, purged directly). member1's agent stops (SIGSTOP: its
watcher's heartbeats, its actuator and its webhook), the planner turns member1 Ready Unknown and
taints it unreachable NoSchedule, and the NoExecute taint that Karmada's ClusterTaintPolicy would
add is added: after the toleration every replica is in member2. member1 comes back: Ready again,
its stale copy deleted by its own actuator, and nothing moves back. A WorkloadRebalancer then
spreads the replicas over both again, its status as Karmada's controller writes it.

The heartbeats are sped up (1 s, a 3 s grace) through the services' environment, which
``spreadbus up`` hands down.

On the same stack, the same failover and rebalance of two more Deployments, one of them covered
by a PodUnavailableBudget in the host: the available replicas of each, summed over both members,
are sampled every 50 ms; the budget's never go below its minimum, the other's do.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from tests.propagation.members_stack import (
    FAST_HEARTBEATS,
    Stack,
    agent_stopped,
    evenly_over,
    members_stack,
    ready,
    rebalancer,
    taint_unreachable,
    untaint_unreachable,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
MEMBERS = ("member1", "member2")
TOLERATION_SECONDS = 2

TEMPLATE_AND_POLICY = [
    {"apiVersion": "apps/v1", "kind": "Deployment",
     "metadata": {"name": "web", "namespace": "default"},
     "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "web"}},
              "template": {"metadata": {"labels": {"app": "web"}},
                           "spec": {"containers": [{"name": "main",
                                                    "image": "nginx:alpine"}]}}}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web", "namespace": "default"},
     "data": {"greeting": "hello"}},
    {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
     "metadata": {"name": "web", "namespace": "default"},
     "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                     "name": "web"},
                                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "web"}],
              "placement": {
                  **evenly_over(MEMBERS),
                  "clusterTolerations": [{"key": "cluster.karmada.io/unreachable",
                                          "operator": "Exists", "effect": "NoExecute",
                                          "tolerationSeconds": TOLERATION_SECONDS}]},
              "failover": {"cluster": {"purgeMode": "Directly"}}}},
]
REBALANCER = rebalancer("demo", "web")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with members_stack(tmp_path_factory.mktemp("failover"), MEMBERS,
                       env=FAST_HEARTBEATS) as running:
        yield running


def scheduled(stack: Stack) -> dict[str, int]:
    binding = stack.get("rb", "web-deployment") or {}
    return {c["name"]: c.get("replicas", 0) for c in binding.get("spec", {}).get("clusters", [])}


def ready_replicas(stack: Stack, member: str) -> int | None:
    """member's copy's ready replicas; ``None`` when it has no copy."""
    copy = stack.get("--context", member, "deployment", "web")
    return None if copy is None else int(copy.get("status", {}).get("readyReplicas", 0))


def spread(stack: Stack, shares: dict[str, int]) -> Callable[[], bool]:
    return lambda: (scheduled(stack) == shares
                    and all(ready_replicas(stack, m) == n for m, n in shares.items()))


def rebalancer_status(stack: Stack) -> dict[str, Any]:
    status: dict[str, Any] = (stack.get("workloadrebalancer", "demo") or {}).get("status", {})
    return status


def test_member1_fails_over_stays_away_and_a_rebalancer_spreads_it_again(stack: Stack) -> None:
    stack.until(lambda: all(ready(stack, m) for m in MEMBERS), "both members Ready")
    stack.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(TEMPLATE_AND_POLICY))
    stack.until(spread(stack, {"member1": 2, "member2": 2}), "2 replicas ready in each member")
    # The ConfigMap goes whole to both: the stack's watchers watch ConfigMaps.
    stack.until(lambda: all((stack.get("--context", m, "configmap", "web") or {}).get("data")
                            == {"greeting": "hello"} for m in MEMBERS),
                "the ConfigMap copied into both members")

    with agent_stopped(stack, "member1") as cluster:
        assert [(t["key"], t["effect"]) for t in cluster["spec"]["taints"]] == [
            ("cluster.karmada.io/unreachable", "NoSchedule")]
        taint_unreachable(stack, cluster)
        stack.until(spread(stack, {"member2": 4}), "every replica in member2")
        untaint_unreachable(stack, "member1")

    stack.until(lambda: ready(stack, "member1")
                and not (stack.get("cluster", "member1") or {}).get("spec", {}).get("taints")
                and ready_replicas(stack, "member1") is None,
                "member1 Ready and untainted again, its stale copy deleted by its actuator")
    assert scheduled(stack) == {"member2": 4}, "a recovered cluster pulls nothing back"
    assert ready_replicas(stack, "member2") == 4

    stack.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(REBALANCER))
    stack.until(spread(stack, {"member1": 2, "member2": 2}), "spread over both again")
    stack.until(lambda: "finishTime" in rebalancer_status(stack), "the rebalancer finished")
    status = rebalancer_status(stack)
    assert set(status) == {"finishTime", "observedGeneration", "observedWorkloads"}, status
    assert status["observedGeneration"] == 1
    assert status["observedWorkloads"] == [{
        "result": "Successful",
        "workload": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                     "namespace": "default"}}]


# -- the same failover and rebalance within a budget ---------------------------------------------

PACED, UNPACED = "paced", "unpaced"
MAINTENANCE = "example.com/maintenance"


def _deployment(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 4, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "main",
                                                           "image": "nginx:alpine"}]}}}}


BUDGETED = [
    _deployment(PACED), _deployment(UNPACED),
    {"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
     "metadata": {"name": PACED, "namespace": "default"},
     "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": PACED},
              "maxUnavailable": 1}},
    {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
     "metadata": {"name": "budgeted", "namespace": "default"},
     "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": n}
                                    for n in (PACED, UNPACED)],
              "placement": evenly_over(MEMBERS),
              "failover": {"cluster": {"purgeMode": "Directly"}}}},
]
BUDGET_MINIMUM = 3
"""4 replicas, at most 1 unavailable."""


class Sampler(threading.Thread):
    """Every 50 ms, the available pods (Ready, not being deleted) of each app, summed over the
    members. Replicas move one way at a time (out of ``losing``); that cluster is listed first,
    so a pod that moves between the two lists is counted, never missed: a sample is never
    below the true count."""

    def __init__(self, kubeconfig: Path, losing: str) -> None:
        super().__init__(daemon=True)
        self.apis = {m: client.CoreV1Api(config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig), context=m)) for m in MEMBERS}
        self.losing = losing
        self.lowest: dict[str, int] = {}
        self.samples = 0
        self.failure: BaseException | None = None
        self.done = threading.Event()

    def _available(self, member: str) -> dict[str, int]:
        response: Any = self.apis[member].list_namespaced_pod(
            "default", label_selector=f"app in ({PACED},{UNPACED})", _request_timeout=10,
            _preload_content=False)
        out = {PACED: 0, UNPACED: 0}
        for pod in json.loads(response.data)["items"]:
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in pod.get("status", {}).get("conditions") or [])
            if ready and not pod["metadata"].get("deletionTimestamp"):
                out[pod["metadata"]["labels"]["app"]] += 1
        return out

    def run(self) -> None:
        try:
            while not self.done.is_set():
                started = time.monotonic()
                first = self.losing
                counts = [self._available(m) for m in (first, *(m for m in MEMBERS
                                                                 if m != first))]
                for app in (PACED, UNPACED):
                    total = sum(c[app] for c in counts)
                    self.lowest[app] = min(self.lowest.get(app, total), total)
                self.samples += 1
                # The sampling period: the next sample starts 50 ms after this one did.
                self.done.wait(max(0.0, 0.05 - (time.monotonic() - started)))
        except BaseException as exc:  # reported by the test
            self.failure = exc

    def stop(self) -> None:
        self.done.set()
        self.join(timeout=30)
        for api in self.apis.values():
            api.api_client.close()
        if self.failure is not None:
            raise AssertionError("the sampler failed") from self.failure


def placed(stack: Stack, name: str, shares: dict[str, int]) -> Callable[[], bool]:
    """``name``'s binding schedules ``shares``, each member's copy has that many ready and no
    other member has a copy."""
    def check() -> bool:
        binding = stack.get("rb", f"{name}-deployment") or {}
        clusters = {c["name"]: c.get("replicas", 0)
                    for c in binding.get("spec", {}).get("clusters", [])}
        if clusters != shares:
            return False
        for member in MEMBERS:
            copy = stack.get("--context", member, "deployment", name)
            if member not in shares:
                if copy is not None:
                    return False
                continue
            status = (copy or {}).get("status", {})
            if (copy or {}).get("spec", {}).get("replicas") != shares[member] or int(
                    status.get("readyReplicas", 0)) != shares[member] or int(
                    status.get("replicas", 0)) != shares[member]:
                return False
        return True
    return check


def test_within_a_budget_a_failover_and_a_rebalance_keep_enough_replicas_available(
        stack: Stack) -> None:
    stack.until(lambda: all(ready(stack, m) for m in MEMBERS), "both members Ready")
    stack.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(BUDGETED))
    for name in (PACED, UNPACED):
        stack.until(placed(stack, name, {"member1": 2, "member2": 2}), f"{name} spread 2:2")
    stack.until(lambda: ((stack.get("pub", PACED) or {}).get("status") or {}).get(
        "currentAvailable") == 4, "the host's budget counting the pods of both members")

    sampler = Sampler(stack.kubeconfig, losing="member1")
    sampler.start()
    try:
        # member1 drained: every replica fails over to member2.
        stack.kubectl("patch", "cluster", "member1", "--type=merge", "-p", json.dumps(
            {"spec": {"taints": [{"key": MAINTENANCE, "effect": effect}
                                 for effect in ("NoSchedule", "NoExecute")]}}))
        for name in (PACED, UNPACED):
            stack.until(placed(stack, name, {"member2": 4}), f"{name} all in member2")
        stack.kubectl("patch", "cluster", "member1", "--type=merge", "-p",
                      json.dumps({"spec": {"taints": None}}))
        stack.until(lambda: ready(stack, "member1") and not (
            stack.get("cluster", "member1") or {}).get("spec", {}).get("taints"),
            "member1 untainted")
        # A rebalancer spreads both again: replicas now leave member2.
        sampler.losing = "member2"
        stack.kubectl("apply", "-f", "-",
                      stdin=yaml.safe_dump(rebalancer("budgeted", PACED, UNPACED)))
        for name in (PACED, UNPACED):
            stack.until(placed(stack, name, {"member1": 2, "member2": 2}),
                        f"{name} spread over both again")
    finally:
        sampler.stop()
    assert sampler.samples > 20, sampler.samples
    assert sampler.lowest[PACED] >= BUDGET_MINIMUM, sampler.lowest
    # Without the budget the same moves leave fewer available: the check above can fail.
    assert sampler.lowest[UNPACED] < BUDGET_MINIMUM, sampler.lowest
