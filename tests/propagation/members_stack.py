"""``spreadbus up --members`` for the propagation scenarios: one stack per module, read through
kubectl.

The heartbeats can be sped up (1 s, a 3 s grace) through the services' environment, which
``spreadbus up`` hands down; each member's nodes can be given as a topology file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from spreadbus.runtime.parent_death import die_with_parent
from tests.fixtures.polling import wait_until
from tests.stack.test_local_stack import children_of, tear_down, while_up

KUBECTL = str(Path(sys.executable).parent / "kubectl")
SPREADBUS = str(Path(sys.executable).parent / "spreadbus")
FAST_HEARTBEATS = {"SPREADBUS_HEARTBEAT_SECONDS": "1",
                   "SPREADBUS_CLUSTER_MONITOR_GRACE_SECONDS": "3"}


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


@contextmanager
def members_stack(base: Path, members: Sequence[str], *,
                  topologies: Mapping[str, dict[str, Any]] | None = None,
                  env: Mapping[str, str] | None = None) -> Iterator[Stack]:
    """The stack under ``base``; ``topologies``: a member's nodes (kubesim's topology file)."""
    data_dir = base / "clusters"
    args = [SPREADBUS, "up", "--members", ",".join(members), "--data-dir", str(data_dir)]
    if topologies:
        chosen = []
        for member, topology in topologies.items():
            path = base / f"{member}.yaml"
            path.write_text(yaml.safe_dump(topology))
            chosen.append(f"{member}={path}")
        args += ["--topology", ",".join(chosen)]
    with (base / "up.log").open("w") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, text=True,
                                env={**os.environ, **(env or {})},
                                preexec_fn=die_with_parent())
    try:
        wait_until(while_up(proc, (data_dir / "kubeconfig").exists),
                   what="the clusters to be up", timeout=180, interval=0.2)
        yield Stack(proc, data_dir)
    finally:
        tear_down(proc)


def evenly_over(members: Sequence[str]) -> dict[str, Any]:
    """A placement dividing replicas over ``members`` by equal static weights."""
    return {
        "clusterAffinity": {"clusterNames": list(members)},
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {"staticWeightList": [
                {"targetCluster": {"clusterNames": [m]}, "weight": 1} for m in members]}}}


def ready(stack: Stack, member: str) -> bool:
    cluster = stack.get("cluster", member) or {}
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (cluster.get("status") or {}).get("conditions") or [])


def rebalancer(name: str, *deployments: str) -> dict[str, Any]:
    """A WorkloadRebalancer over Deployments of the default namespace."""
    return {"apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
            "metadata": {"name": name},
            "spec": {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": d, "namespace": "default"} for d in deployments]}}


@contextmanager
def agent_stopped(stack: Stack, member: str) -> Iterator[dict[str, Any]]:
    """``member``'s agent stopped (SIGSTOP) for the block, which gets its Cluster once it is no
    longer Ready and tainted (its status and its taints are two writes: both are waited for)."""
    agent = stack.agent_of(member)
    assert len(agent) == 3, agent
    for pid in agent:
        os.kill(pid, signal.SIGSTOP)
    try:
        stack.until(lambda: not ready(stack, member)
                    and (stack.get("cluster", member) or {}).get("spec", {}).get("taints"),
                    f"{member} no longer Ready, and tainted")
        yield stack.get("cluster", member)
    finally:
        for pid in agent:
            os.kill(pid, signal.SIGCONT)


def taint_unreachable(stack: Stack, cluster: dict[str, Any]) -> None:
    """What Karmada's ClusterTaintPolicy adds to an unreachable cluster: NoExecute, since its
    Ready condition turned."""
    (condition,) = [c for c in cluster["status"]["conditions"] if c["type"] == "Ready"]
    stack.kubectl("patch", "cluster", cluster["metadata"]["name"], "--type=json", "-p",
                  json.dumps([{"op": "add", "path": "/spec/taints/-",
                               "value": {"key": "cluster.karmada.io/unreachable",
                                         "effect": "NoExecute",
                                         "timeAdded": condition["lastTransitionTime"]}}]))


def untaint_unreachable(stack: Stack, member: str) -> None:
    """The NoExecute taint :func:`taint_unreachable` added, after the planner's NoSchedule one."""
    stack.kubectl("patch", "cluster", member, "--type=json", "-p",
                  json.dumps([{"op": "remove", "path": "/spec/taints/1"}]))
