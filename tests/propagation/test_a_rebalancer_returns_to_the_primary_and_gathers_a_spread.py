"""Two more of the WorkloadRebalancer's scenarios end to end, on ``spreadbus up --members
member1,member2``, sharing one stack.

Primary/backup: a Deployment placed by ``clusterAffinities`` (member1 the primary term, member2
the backup) fails over to member2 when member1's agent stops and member1 carries the NoExecute
unreachable taint past its toleration; member1 comes back and nothing moves; a WorkloadRebalancer
makes the next schedule Fresh, which starts the terms again from the first: back on member1.

Aggregated: member1 has 8 cpu, member2 16, and a filler Deployment in each leaves room for 2 of
the workload's 2-cpu replicas in each, so Karmada's Aggregated division spreads the 4 replicas
2:2. The filler in member2 goes: nothing moves by itself, and a WorkloadRebalancer gathers all 4
in member2, the only cluster that now holds them all.

"Nothing moves" is every version of the binding, watched from before the recovery (or the room)
until the rebalancer's trigger is in its spec: each keeps the earlier clusters. Looking once
would not do: the rebalancer's Fresh schedule ends where a move of the planner's own would, and
would hide it.

The heartbeats are sped up (1 s, a 3 s grace) through the services' environment, which
``spreadbus up`` hands down.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from tests.fixtures.polling import wait_until
from tests.propagation.members_stack import (
    FAST_HEARTBEATS,
    KUBECTL,
    Stack,
    agent_stopped,
    members_stack,
    ready,
    rebalancer,
    taint_unreachable,
    untaint_unreachable,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
MEMBERS = ("member1", "member2")
TOLERATION_SECONDS = 2
# Nodes of 4 cpu: 2 in member1, 4 in member2.
NODES = {"member1": 2, "member2": 4}
REPLICA_CPU = 2
# Each filler leaves room for 2 replicas of 2 cpu: 8 - 4 in member1, 16 - 12 in member2.
FILLER = {"member1": 2, "member2": 6}


def topology(name: str, nodes: int) -> dict[str, Any]:
    return {"name": name, "groups": [{
        "name": name, "count": nodes,
        "labels": {"topology.kubernetes.io/region": "region-1",
                   "topology.kubernetes.io/zone": f"{name}-a", "kubernetes.io/arch": "amd64"},
        "allocatable": {"cpu": "4", "memory": "16Gi", "pods": 110}}]}


def deployment(name: str, replicas: int, cpu: int | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "nginx:alpine"}
    if cpu is not None:
        container["resources"] = {"requests": {"cpu": str(cpu)}}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [container]}}}}


def policy(name: str, placement: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                            "name": name}],
                     "placement": placement, **spec}}



@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with members_stack(tmp_path_factory.mktemp("rebalance"), MEMBERS, env=FAST_HEARTBEATS,
                       topologies={m: topology(m, n) for m, n in NODES.items()}) as running:
        yield running


def clusters_of(binding: dict[str, Any]) -> dict[str, int]:
    return {c["name"]: c.get("replicas", 0) for c in binding.get("spec", {}).get("clusters", [])}


def scheduled(stack: Stack, name: str) -> dict[str, int]:
    return clusters_of(stack.get("rb", f"{name}-deployment") or {})


class BindingVersions(contextlib.AbstractContextManager["BindingVersions"]):
    """Every version of the workload's binding from now on (the current one first), as
    ``kubectl get -w`` prints them, until the block ends."""

    def __init__(self, stack: Stack, name: str) -> None:
        self.seen: list[dict[str, Any]] = []
        self._proc = subprocess.Popen(
            [KUBECTL, "--kubeconfig", str(stack.kubeconfig), "get", "rb", f"{name}-deployment",
             "-w", "-o", "json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        lines: list[str] = []
        for line in self._proc.stdout:
            lines.append(line)
            if line.rstrip("\n") == "}":  # the end of one object (printed indented)
                self.seen.append(json.loads("".join(lines)))
                lines = []

    def latest(self) -> dict[str, int] | None:
        return clusters_of(self.seen[-1]) if self.seen else None

    def untriggered(self) -> list[dict[str, int]]:
        """The clusters of each version before the rebalancer's trigger reached its spec."""
        return [clusters_of(v) for v in self.seen
                if "rescheduleTriggeredAt" not in v.get("spec", {})]

    def __exit__(self, *_: object) -> None:
        self._proc.terminate()
        self._proc.wait(10)
        self._reader.join(10)
        if self._proc.stdout is not None:
            self._proc.stdout.close()


def ready_replicas(stack: Stack, member: str, name: str) -> int | None:
    """member's copy's ready replicas; ``None`` when it has no copy."""
    copy = stack.get("--context", member, "deployment", name)
    return None if copy is None else int(copy.get("status", {}).get("readyReplicas", 0))


def placed(stack: Stack, name: str, shares: dict[str, int]) -> Callable[[], bool]:
    """The binding says ``shares``, each member runs its share ready, and the others no copy."""
    return lambda: (scheduled(stack, name) == shares
                    and all(ready_replicas(stack, m, name) == shares.get(m) for m in MEMBERS))


def observed_affinity(stack: Stack, name: str) -> str | None:
    binding = stack.get("rb", f"{name}-deployment") or {}
    term: str | None = binding.get("status", {}).get("schedulerObservedAffinityName")
    return term


def finished(stack: Stack, name: str) -> Callable[[], dict[str, Any] | None]:
    def status() -> dict[str, Any] | None:
        found: dict[str, Any] = (stack.get("workloadrebalancer", name) or {}).get("status", {})
        return found if "finishTime" in found else None
    return status


def assert_successful(status: dict[str, Any], workload: str) -> None:
    assert set(status) == {"finishTime", "observedGeneration", "observedWorkloads"}, status
    assert status["observedWorkloads"] == [{
        "result": "Successful",
        "workload": {"apiVersion": "apps/v1", "kind": "Deployment", "name": workload,
                     "namespace": "default"}}]


def allocated_cpu(stack: Stack, member: str) -> str | None:
    """The cpu member's pods on nodes request, once no pod that requests cpu waits for a node."""
    cluster = stack.get("cluster", member) or {}
    summary = cluster.get("status", {}).get("resourceSummary", {})
    cpu: str | None = summary.get("allocated", {}).get("cpu")
    return None if "cpu" in summary.get("allocating", {}) else cpu


def test_a_primary_fails_over_to_its_backup_and_a_rebalancer_brings_it_back(stack: Stack) -> None:
    stack.until(lambda: all(ready(stack, m) for m in MEMBERS), "both members Ready")
    stack.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all([
        deployment("app", 3),
        policy("app", {
            "clusterAffinities": [{"affinityName": "primary", "clusterNames": ["member1"]},
                                  {"affinityName": "backup", "clusterNames": ["member2"]}],
            "clusterTolerations": [{"key": "cluster.karmada.io/unreachable",
                                    "operator": "Exists", "effect": "NoExecute",
                                    "tolerationSeconds": TOLERATION_SECONDS}],
            "replicaScheduling": {"replicaSchedulingType": "Divided",
                                  "replicaDivisionPreference": "Aggregated"}},
            failover={"cluster": {"purgeMode": "Directly"}})]))
    stack.until(placed(stack, "app", {"member1": 3}), "3 replicas ready in the primary")
    stack.until(lambda: observed_affinity(stack, "app") == "primary",
                "the primary term observed in the binding's status")

    with agent_stopped(stack, "member1") as cluster:
        taint_unreachable(stack, cluster)
        stack.until(lambda: scheduled(stack, "app") == {"member2": 3}
                    and ready_replicas(stack, "member2", "app") == 3,
                    "every replica in the backup")
        stack.until(lambda: observed_affinity(stack, "app") == "backup",
                    "the backup term observed in the binding's status")
        untaint_unreachable(stack, "member1")

    with BindingVersions(stack, "app") as versions:
        stack.until(lambda: ready(stack, "member1")
                    and not (stack.get("cluster", "member1") or {}).get("spec", {}).get("taints")
                    and ready_replicas(stack, "member1", "app") is None,
                    "member1 Ready and untainted again, its stale copy deleted by its actuator")
        assert observed_affinity(stack, "app") == "backup"

        stack.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(rebalancer("back", "app")))
        stack.until(placed(stack, "app", {"member1": 3}), "back on the primary alone")
        stack.until(lambda: observed_affinity(stack, "app") == "primary",
                    "a Fresh schedule starts again from the primary term")
        stack.until(lambda: versions.latest() == {"member1": 3}, "the watch seeing it too")
    before = versions.untriggered()
    assert before, "the watch saw no version before the rebalancer's"
    assert all(c == {"member2": 3} for c in before), f"a recovered primary pulls back: {before}"
    assert_successful(wait_until(finished(stack, "back"), what="the rebalancer finished",
                                 timeout=60, interval=0.2), "app")


def test_a_rebalancer_gathers_an_aggregated_workload_where_there_is_room(stack: Stack) -> None:
    stack.until(lambda: all(ready(stack, m) for m in MEMBERS), "both members Ready")
    for member, replicas in FILLER.items():
        stack.kubectl("--context", member, "apply", "-f", "-",
                      stdin=yaml.safe_dump(deployment("filler", replicas, cpu=REPLICA_CPU)))
    stack.until(lambda: all(allocated_cpu(stack, m) == str(n * REPLICA_CPU)
                            for m, n in FILLER.items()),
                "each member's resource summary counts its filler")
    stack.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all([
        deployment("batch", 4, cpu=REPLICA_CPU),
        policy("batch", {"clusterAffinity": {"clusterNames": list(MEMBERS)},
                         "replicaScheduling": {"replicaSchedulingType": "Divided",
                                               "replicaDivisionPreference": "Aggregated"}})]))
    stack.until(placed(stack, "batch", {"member1": 2, "member2": 2}),
                "spread 2:2 for lack of room in either")

    with BindingVersions(stack, "batch") as versions:
        stack.kubectl("--context", "member2", "scale", "deployment", "filler", "--replicas=0")
        # member2's summary: only the workload's 2 replicas are left allocated there.
        stack.until(lambda: allocated_cpu(stack, "member2") == str(2 * REPLICA_CPU),
                    "member2's resource summary shows its room")

        stack.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(rebalancer("gather", "batch")))
        stack.until(placed(stack, "batch", {"member2": 4}), "gathered in member2")
        stack.until(lambda: versions.latest() == {"member2": 4}, "the watch seeing it too")
    before = versions.untriggered()
    assert before, "the watch saw no version before the rebalancer's"
    assert all(c == {"member1": 2, "member2": 2} for c in before), f"room alone moves: {before}"
    assert_successful(wait_until(finished(stack, "gather"), what="the rebalancer finished",
                                 timeout=60, interval=0.2), "batch")
