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

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures.member_clusters import get_json, kubectl, member_clusters
from tests.fixtures.polling import wait_until

pytestmark = pytest.mark.e2e

KARMADA = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster"}
ZONE = "topology.kubernetes.io/zone"


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
    tmp_path: Path,
) -> None:
    with member_clusters(tmp_path, ("member1",)) as stack:
        host, member = stack.host, stack.members["member1"].kube
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
