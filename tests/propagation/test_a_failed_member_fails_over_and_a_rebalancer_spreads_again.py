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
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.runtime.parent_death import die_with_parent
from tests.fixtures.polling import wait_until
from tests.stack.test_local_stack import children_of, tear_down, while_up

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
KUBECTL = str(Path(sys.executable).parent / "kubectl")
SPREADBUS = str(Path(sys.executable).parent / "spreadbus")
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
                  "clusterAffinity": {"clusterNames": list(MEMBERS)},
                  "clusterTolerations": [{"key": "cluster.karmada.io/unreachable",
                                          "operator": "Exists", "effect": "NoExecute",
                                          "tolerationSeconds": TOLERATION_SECONDS}],
                  "replicaScheduling": {
                      "replicaSchedulingType": "Divided",
                      "replicaDivisionPreference": "Weighted",
                      "weightPreference": {"staticWeightList": [
                          {"targetCluster": {"clusterNames": [m]}, "weight": 1}
                          for m in MEMBERS]}}},
              "failover": {"cluster": {"purgeMode": "Directly"}}}},
]
REBALANCER = {"apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
              "metadata": {"name": "demo"},
              "spec": {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                      "name": "web", "namespace": "default"}]}}


class Stack:
    def __init__(self, proc: subprocess.Popen[str], data_dir: Path) -> None:
        self.proc = proc
        self.kubeconfig = data_dir / "kubeconfig"

    def kubectl(self, *args: str, stdin: str | None = None,
                check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([KUBECTL, "--kubeconfig", str(self.kubeconfig), *args],
                              input=stdin, capture_output=True, text=True, timeout=60,
                              check=check)

    def get(self, *args: str) -> Any:
        """The object, or ``None`` when it is not there."""
        done = self.kubectl("get", *args, "-o", "json", check=False)
        return json.loads(done.stdout) if done.returncode == 0 else None

    def until(self, check: Callable[[], object], what: str) -> None:
        wait_until(while_up(self.proc, check), what=what, timeout=60, interval=0.2)

    def agent_of(self, member: str) -> list[int]:
        """The pids of ``member``'s webhook, watcher and actuator."""
        found = []
        for pid in children_of(self.proc.pid):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if f"--cluster={member}".encode() in argv and any(
                    a.startswith(b"services.") for a in argv):
                found.append(pid)
        return found


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data_dir = tmp_path_factory.mktemp("failover") / "clusters"
    env = {**os.environ, "SPREADBUS_HEARTBEAT_SECONDS": "1",
           "SPREADBUS_CLUSTER_MONITOR_GRACE_SECONDS": "3"}
    with (data_dir.parent / "up.log").open("w") as log:
        proc = subprocess.Popen(
            [SPREADBUS, "up", "--members", ",".join(MEMBERS), "--data-dir", str(data_dir)],
            stdout=log, stderr=subprocess.STDOUT, text=True, env=env,
            preexec_fn=die_with_parent())
    try:
        wait_until(while_up(proc, (data_dir / "kubeconfig").exists),
                   what="the clusters to be up", timeout=180, interval=0.2)
        yield Stack(proc, data_dir)
    finally:
        tear_down(proc)


def ready(stack: Stack, member: str) -> bool:
    cluster = stack.get("cluster", member) or {}
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in cluster.get("status", {}).get("conditions", []))


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

    agent = stack.agent_of("member1")
    assert len(agent) == 3, agent
    for pid in agent:
        os.kill(pid, signal.SIGSTOP)
    try:
        # Its status and its taints are two writes: wait for both.
        stack.until(lambda: not ready(stack, "member1")
                    and (stack.get("cluster", "member1") or {}).get("spec", {}).get("taints"),
                    "member1 no longer Ready, and tainted")
        cluster = stack.get("cluster", "member1")
        (condition,) = [c for c in cluster["status"]["conditions"] if c["type"] == "Ready"]
        assert [(t["key"], t["effect"]) for t in cluster["spec"]["taints"]] == [
            ("cluster.karmada.io/unreachable", "NoSchedule")]
        # What Karmada's ClusterTaintPolicy adds to an unreachable cluster.
        stack.kubectl("patch", "cluster", "member1", "--type=json", "-p", json.dumps([
            {"op": "add", "path": "/spec/taints/-",
             "value": {"key": "cluster.karmada.io/unreachable", "effect": "NoExecute",
                       "timeAdded": condition["lastTransitionTime"]}}]))
        stack.until(spread(stack, {"member2": 4}), "every replica in member2")
        stack.kubectl("patch", "cluster", "member1", "--type=json", "-p", json.dumps([
            {"op": "remove", "path": "/spec/taints/1"}]))
    finally:
        for pid in agent:
            os.kill(pid, signal.SIGCONT)

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
