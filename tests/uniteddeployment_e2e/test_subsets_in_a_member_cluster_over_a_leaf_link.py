"""Seed 003's multi-cluster UnitedDeployment, live: the UnitedDeployment in a control-plane host,
its two subsets on different nodes of ``member1``, scaled 6 -> 10 -> 4.

Real parts throughout: a hub nats-server and member1's leaf nats-server dialing it (each domain
set up by ``spreadbus bus-setup``), a host kubesim in control-plane mode (no nodes, no workload
controllers) and member1's kubesim (three zones, its StatefulSet controller running the pods).
The host runs the watcher, the planner and the actuator (``--cluster host``); member1 runs its
watcher and actuator against its own leaf server, the actuator reading the host's
UnitedDeployments through the host's kubeconfig. Each subset's StatefulSet and pods are in
member1 on their own zone's nodes, none in the host; the status in the host sums them. Deleting
the UnitedDeployment deletes its workloads in member1 before the host lets it go.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import pytest
import yaml

from events import streams
from spreadbus.cli import main
from spreadbus.runtime import member_bus
from spreadbus.runtime.stream_setup import ensure_streams
from tests.backbone.service_processes import ServiceProcess, logs_on_failure
from tests.fixtures.kubesim import kubesim_process
from tests.fixtures.polling import wait_until

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = str(Path(sys.executable).parent / "kubectl")
KARMADA = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster"}
ZONE = "topology.kubernetes.io/zone"


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), *args], input=stdin,
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


def get_json(kubeconfig: Path, *args: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(kubectl(kubeconfig, "get", *args, "-o", "json"))
    return found


def united(replicas: int) -> dict[str, Any]:
    labels = {"app": "seed"}

    def subset(name: str, zone: str) -> dict[str, Any]:
        return {"name": name, "targetCluster": {"name": "member1"},
                "nodeSelectorTerm": {"matchExpressions": [
                    {"key": ZONE, "operator": "In", "values": [zone]}]}}

    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
            "metadata": {"name": "seed", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"statefulSetTemplate": {
                         "metadata": {"labels": labels},
                         "spec": {"selector": {"matchLabels": labels}, "serviceName": "seed",
                                  "template": {"metadata": {"labels": labels},
                                               "spec": {"containers": [
                                                   {"name": "c", "image": "nginx:alpine"}]}}}}},
                     "topology": {"clusterRegistry": {"clusterType": KARMADA},
                                  "subsets": [subset("zone-a", "zone-a"),
                                              subset("zone-b", "zone-b")]}}}


@contextlib.contextmanager
def started(*services: ServiceProcess) -> Iterator[None]:
    try:
        for service in services:
            service.start()
        with logs_on_failure(*services):
            yield
    finally:
        for service in services:
            with contextlib.suppress(Exception):
                service.terminate(10)
            service.kill()


async def _agent_streams(url: str) -> None:
    """The two streams a member's services also ask for, which the member's set-up does not
    make yet: its admissions and audit history, kept in its own domain."""
    nc = await nats.connect(url)
    try:
        await ensure_streams(nc.jetstream(), tuple(
            member_bus.replace_spec(spec, subjects=member_bus.member_subjects(spec, "member1"))
            for spec in (streams.ADMISSIONS, streams.HISTORY)))
    finally:
        await nc.close()


def placement(host: Path, member: Path) -> dict[str, Any] | None:
    """Pods per (subset, zone) in member1, and how many in the host; None while a pod is not
    Running and Ready."""
    nodes = {n["metadata"]["name"]: n["metadata"]["labels"][ZONE]
             for n in get_json(member, "nodes")["items"]}
    counts: dict[tuple[str, str], int] = {}
    for pod in get_json(member, "pods", "-n", "default", "-l", "app=seed")["items"]:
        ready = any(c["type"] == "Ready" and c["status"] == "True"
                    for c in pod.get("status", {}).get("conditions", []))
        if pod["metadata"].get("deletionTimestamp") or not ready:
            return None
        key = (pod["metadata"]["labels"]["apps.kruise.io/subset-name"],
               nodes[pod["spec"]["nodeName"]])
        counts[key] = counts.get(key, 0) + 1
    return {"member1": counts,
            "host": len(get_json(host, "pods", "-n", "default")["items"])}


def test_a_host_uniteddeployment_scales_its_subsets_in_a_member_over_the_leaf_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    logs, agent_logs = tmp_path / "logs" / "host", tmp_path / "logs" / "member1"
    logs.mkdir(parents=True)
    agent_logs.mkdir()
    for name in ("host", "member1"):
        (tmp_path / name).mkdir()
    hub = member_bus.start_hub(tmp_path / "hub-store", tmp_path / "conf", {})
    leaf = member_bus.start_member_server(tmp_path / "member1-store", tmp_path / "conf",
                                          "member1", hub.leaf_url, "")
    try:
        assert main(["bus-setup", "--nats-url", leaf.url, "--member", "member1"]) == 0
        asyncio.run(_agent_streams(leaf.url))
        assert main(["bus-setup", "--nats-url", hub.server.url, "--members", "member1"]) == 0
        capsys.readouterr()
        with kubesim_process(tmp_path / "host" / "kubeconfig", "--control-plane") as host, \
                kubesim_process(tmp_path / "member1" / "kubeconfig") as member:
            for kubeconfig in (host.kubeconfig, member.kubeconfig):
                # Every kind the services watch is served in both clusters, as deploy/ has it.
                kubectl(kubeconfig, "apply", "-f", str(ROOT / "deploy" / "crds"))
                kubectl(kubeconfig, "wait", "--for=condition=Established", "--timeout=30s",
                        "crd", "--all")
            kubectl(host.kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump(
                {**KARMADA, "metadata": {"name": "member1"}, "spec": {"syncMode": "Pull"}}))
            hub_args = ["--nats-url", hub.server.url, "--cluster", "host",
                        "--kubeconfig", str(host.kubeconfig)]
            agent = ["--nats-url", leaf.url, "--cluster", "member1",
                     "--kubeconfig", str(member.kubeconfig)]
            services = [
                ServiceProcess("watcher", hub_args, logs),
                ServiceProcess("planner", [*hub_args, "--lease-ttl-seconds", "3",
                                           "--uniteddeployment-control-plane", "true"], logs),
                ServiceProcess("actuator", hub_args, logs),
                ServiceProcess("watcher", agent, agent_logs),
                ServiceProcess("actuator", [*agent, "--host-kubeconfig", str(host.kubeconfig),
                                            "--host-cluster", "host"], agent_logs),
            ]
            with started(*services):
                for service in services:
                    service.wait_ready()
                kubectl(host.kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump(united(6)))
                for replicas, split in ((6, (3, 3)), (10, (5, 5)), (4, (2, 2))):
                    if replicas != 6:
                        kubectl(host.kubeconfig, "patch", "uniteddeployment", "seed",
                                "--type", "merge", "-p",
                                json.dumps({"spec": {"replicas": replicas}}))
                    want = {"member1": {("zone-a", "zone-a"): split[0],
                                        ("zone-b", "zone-b"): split[1]}, "host": 0}
                    wait_until(lambda want=want: placement(host.kubeconfig,
                                                           member.kubeconfig) == want,
                               what=f"{replicas} pods in member1, each subset on its zone",
                               timeout=90, interval=0.5)

                    def summed(replicas: int = replicas) -> dict[str, Any] | None:
                        ud = get_json(host.kubeconfig, "uniteddeployment", "seed")
                        status = ud.get("status", {})
                        done = (status.get("replicas"), status.get("readyReplicas")) == (
                            replicas, replicas)
                        return ud if done else None

                    ud = wait_until(summed, what=f"the host's status summing {replicas}",
                                    timeout=60, interval=0.5)
                    assert ud["status"]["subsetReplicas"] == {"zone-a": split[0],
                                                              "zone-b": split[1]}
                host_workloads = get_json(host.kubeconfig, "statefulsets", "-n", "default")
                assert host_workloads["items"] == []
                revisions = get_json(host.kubeconfig, "controllerrevisions", "-n", "default")
                assert {r["metadata"]["ownerReferences"][0]["kind"]
                        for r in revisions["items"]} == {"UnitedDeployment"}
                in_member = get_json(member.kubeconfig, "controllerrevisions", "-n", "default")
                # member1's own are its StatefulSets' (their controller's), none the UD's.
                assert {r["metadata"]["ownerReferences"][0]["kind"]
                        for r in in_member["items"]} <= {"StatefulSet"}
                sets = get_json(member.kubeconfig, "statefulsets", "-n", "default")["items"]
                uid = ud["metadata"]["uid"]
                for sts in sets:
                    assert sts["metadata"]["labels"][
                        "multicluster.spreadbus.io/united-deployment-uid"] == uid
                    assert "ownerReferences" not in sts["metadata"]
                assert "uniteddeployment.spreadbus.io/member-workloads" in \
                    ud["metadata"]["finalizers"]

                # Deleted in the host: its finalizer holds it until member1's workloads are gone.
                kubectl(host.kubeconfig, "delete", "uniteddeployment", "seed", "--wait=false")

                def all_gone() -> bool:
                    left = get_json(member.kubeconfig, "statefulsets", "-n", "default")["items"]
                    uds = get_json(host.kubeconfig, "uniteddeployments", "-n", "default")
                    return not left and not uds["items"]

                wait_until(all_gone, what="member1's workloads, then the UnitedDeployment, gone",
                           timeout=60, interval=0.5)
    finally:
        leaf.stop()
        hub.stop()
