"""Subsets in other clusters, reconciled: each subset's workload where its ``targetCluster`` is,
naming its UnitedDeployment by labels and an annotation there; found, counted and scaled across
clusters; moved when its target changes; and unschedulable while its cluster takes no pods."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.cli import main
from spreadbus.clusterregistry.registry import CLUSTER_ANNOTATION
from spreadbus.features.uniteddeployment.core.cluster_availability import CLUSTER_UNAVAILABLE
from spreadbus.features.uniteddeployment.core.member_workloads import (
    CLUSTER_LABEL,
    IDENTITY_ANNOTATION,
    UID_LABEL,
    Identity,
    identity_of,
    observed_in,
)
from spreadbus.features.uniteddeployment.core.reconcile import Reconciliation, reconcile
from spreadbus.features.uniteddeployment.offline import subset_clusters
from tests.uniteddeployment.world import NOW, materialize, owned_pod, united, zone

JSON = dict[str, Any]
KARMADA = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster"}
TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "ud", "effect": "NoSchedule"}
PATCH = {"metadata": {"labels": {"patched": "yes"}}}


def cluster(name: str, ready: str | None = "True", taints: list[JSON] | None = None) -> JSON:
    obj: JSON = {**KARMADA, "metadata": {"name": name}, "spec": {"taints": taints or []}}
    if ready is not None:
        obj["status"] = {"conditions": [{"type": "Ready", "status": ready,
                                         "reason": "ClusterReady" if ready == "True"
                                         else "ClusterStatusUnknown"}]}
    return obj


def seed_ud(replicas: int = 6, **kwargs: Any) -> JSON:
    """Seed 003's shape: two subsets on different nodes of member1, one in member2."""
    ud = united([
        zone("subset-a", "node-a", targetCluster={"name": "member1"},
             tolerations=[TOLERATION], patch=PATCH),
        zone("subset-b", "node-b", targetCluster={"name": "member1"}),
        zone("subset-c", "node-c", targetCluster={"name": "member2"}),
    ], replicas=replicas, **kwargs)
    ud["spec"]["topology"]["clusterRegistry"] = {"clusterType": KARMADA}
    return ud


CLUSTERS = [cluster("member1"), cluster("member2")]


class Fleet:
    """The workloads and pods of every cluster, as each reconcile's writes leave them."""

    def __init__(self) -> None:
        self.workloads: dict[tuple[str, str], JSON] = {}

    def apply(self, ud: JSON, result: Reconciliation) -> None:
        clusters = subset_clusters(ud)
        for name, decision in result.subsets.items():
            if decision.action == "none":
                continue
            where = clusters[name]
            workload = materialize(copy.deepcopy(decision.workload), suffix="w")
            self.workloads[(where, workload["metadata"]["name"])] = workload
        for gone in result.deletes:
            where = gone["metadata"].get("annotations", {}).get(CLUSTER_ANNOTATION, "local")
            self.workloads.pop((where, gone["metadata"]["name"]), None)

    def observed(self) -> tuple[list[JSON], list[JSON]]:
        workloads, pods = [], []
        for (where, _), workload in sorted(self.workloads.items()):
            marked = workload if where == "local" else observed_in(workload, where)
            workloads.append(marked)
            for i in range(workload["status"]["replicas"]):
                pod = owned_pod(workload, i,
                                revision=workload["metadata"]["labels"].get(
                                    "apps.kruise.io/controller-revision-hash"))
                pods.append(pod if where == "local" else observed_in(pod, where))
        return workloads, pods

    def replicas(self) -> dict[tuple[str, str], int]:
        return {(where, w["metadata"]["labels"]["apps.kruise.io/subset-name"]):
                w["spec"]["replicas"] for (where, _), w in self.workloads.items()}


def round_(ud: JSON, fleet: Fleet, clusters: list[JSON] | None = CLUSTERS,
           now: Any = NOW) -> Reconciliation:
    workloads, pods = fleet.observed()
    result = reconcile(ud, workloads=workloads, pods=pods, revisions=[], now=now,
                       clusters=clusters)
    fleet.apply(ud, result)
    if result.status:
        ud["status"] = result.status
    return result


def test_a_member_subsets_workload_names_its_uniteddeployment_and_no_owner() -> None:
    result = reconcile(seed_ud(), workloads=[], pods=[], revisions=[], now=NOW,
                       home="host", clusters=CLUSTERS)
    a = result.subsets["subset-a"].workload
    assert result.subsets["subset-a"].action == "create"
    assert "ownerReferences" not in a["metadata"]
    assert identity_of(a) == Identity("host", "default", "sample-ud", "sample-ud-uid")
    assert a["metadata"]["labels"][UID_LABEL] == "sample-ud-uid"
    assert a["metadata"]["labels"][CLUSTER_LABEL] == "host"
    assert json.loads(a["metadata"]["annotations"][IDENTITY_ANNOTATION]) == {
        "cluster": "host", "namespace": "default", "name": "sample-ud", "uid": "sample-ud-uid"}
    assert CLUSTER_ANNOTATION not in a["metadata"]["annotations"]
    pod = a["spec"]["template"]
    terms = pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "node", "operator": "In",
                                            "values": ["node-a"]}]}]
    assert pod["spec"]["tolerations"] == [TOLERATION]
    assert pod["metadata"]["labels"]["patched"] == "yes"


def test_a_subset_without_a_target_keeps_its_owner_reference() -> None:
    ud = seed_ud()
    ud["spec"]["topology"]["subsets"].append(zone("subset-d", "node-d"))
    result = reconcile(ud, workloads=[], pods=[], revisions=[], now=NOW, home="host")
    d = result.subsets["subset-d"].workload
    assert d["metadata"]["ownerReferences"][0]["uid"] == "sample-ud-uid"
    assert identity_of(d) is None


def test_scaled_6_10_4_across_clusters_with_the_status_summed() -> None:
    fleet = Fleet()
    ud = seed_ud(6)
    round_(ud, fleet)
    assert fleet.replicas() == {("member1", "subset-a"): 2, ("member1", "subset-b"): 2,
                                ("member2", "subset-c"): 2}
    settled = round_(ud, fleet)
    assert {d.action for d in settled.subsets.values()} == {"none"}
    assert settled.deletes == []
    assert settled.status["replicas"] == 6
    assert settled.status["readyReplicas"] == 6
    for replicas, expected in ((10, (3, 3, 4)), (4, (1, 1, 2))):
        ud["spec"]["replicas"] = replicas
        assert {d.action for d in round_(ud, fleet).subsets.values()} == {"update"}
        status = round_(ud, fleet).status
        assert tuple(fleet.replicas().values()) == expected
        assert status["replicas"] == replicas
        by_subset = dict(zip(("subset-a", "subset-b", "subset-c"), expected, strict=True))
        assert status["subsetReplicas"] == by_subset
        assert {s["name"]: s["replicas"] for s in status["subsetStatuses"]} == by_subset


def test_manual_partitions_reach_every_cluster() -> None:
    fleet = Fleet()
    ud = seed_ud(8, partitions={"subset-a": 1, "subset-c": 2})
    round_(ud, fleet)
    parts = {where_subset: w["spec"]["updateStrategy"]["rollingUpdate"]["partition"]
             for where_subset, w in zip(fleet.replicas(), fleet.workloads.values(),
                                        strict=True)}
    assert parts == {("member1", "subset-a"): 1, ("member1", "subset-b"): 0,
                     ("member2", "subset-c"): 2}


def test_a_workload_of_another_uniteddeployment_in_a_member_is_not_adopted() -> None:
    fleet = Fleet()
    ud = seed_ud()
    round_(ud, fleet)
    workloads, pods = fleet.observed()
    other = copy.deepcopy(ud)
    other["metadata"]["uid"] = "another-uid"
    result = reconcile(other, workloads=workloads, pods=pods, revisions=[], now=NOW,
                       clusters=CLUSTERS)
    assert {d.action for d in result.subsets.values()} == {"create"}
    assert result.deletes == []


def test_a_subset_whose_target_changes_moves_its_workload() -> None:
    fleet = Fleet()
    ud = seed_ud()
    round_(ud, fleet)
    ud["spec"]["topology"]["subsets"][2]["targetCluster"] = {"name": "member1"}
    result = round_(ud, fleet)
    assert result.subsets["subset-c"].action == "create"
    (gone,) = result.deletes
    assert gone["metadata"]["annotations"][CLUSTER_ANNOTATION] == "member2"


def test_an_unreachable_cluster_moves_adaptive_pods_on_and_nothing_moves_back() -> None:
    strategy = {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30,
                                                 "unschedulableDuration": 300}}
    ud = united([zone("subset-a", targetCluster={"name": "member1"}, maxReplicas=4),
                 zone("subset-b", targetCluster={"name": "member2"})],
                replicas=6, strategy=strategy)
    ud["spec"]["topology"]["clusterRegistry"] = {"clusterType": KARMADA}
    fleet = Fleet()
    for _ in range(2):
        result = round_(ud, fleet)
    ud["status"] = result.status
    assert fleet.replicas() == {("member1", "subset-a"): 4, ("member2", "subset-b"): 2}

    down = [cluster("member1", "Unknown",
                    [{"key": "cluster.karmada.io/unreachable", "effect": "NoSchedule"}]),
            cluster("member2")]
    result = round_(ud, fleet, down)
    ud["status"] = result.status
    assert fleet.replicas() == {("member1", "subset-a"): 0, ("member2", "subset-b"): 6}
    (a_status,) = [s for s in result.status["subsetStatuses"] if s["name"] == "subset-a"]
    (schedulable,) = a_status["conditions"]
    assert (schedulable["type"], schedulable["status"], schedulable["reason"]) == (
        "Schedulable", "False", CLUSTER_UNAVAILABLE)
    assert "cluster.karmada.io/unreachable" in schedulable["message"]

    later = NOW + timedelta(seconds=600)
    for _ in range(2):
        result = round_(ud, fleet, CLUSTERS, now=later)
        ud["status"] = result.status
    assert fleet.replicas() == {("member1", "subset-a"): 0, ("member2", "subset-b"): 6}
    ud["metadata"]["annotations"] = {"rebalance.spreadbus.io/request": "r1"}
    for _ in range(10):
        result = round_(ud, fleet, CLUSTERS, now=later)
        if result.rebalance_handled == "r1":
            break
    assert result.rebalance_handled == "r1"
    assert fleet.replicas() == {("member1", "subset-a"): 4, ("member2", "subset-b"): 2}


def test_a_deleted_cluster_makes_its_subset_unschedulable() -> None:
    fleet = Fleet()
    ud = seed_ud()
    round_(ud, fleet)
    result = round_(ud, fleet, [cluster("member1")])
    (c_status,) = [s for s in result.status["subsetStatuses"] if s["name"] == "subset-c"]
    assert c_status["conditions"][0]["reason"] == CLUSTER_UNAVAILABLE
    assert c_status["conditions"][0]["message"] == (
        "spec.topology.clusterRegistry no longer finds cluster member2")
    result = round_(ud, fleet, CLUSTERS)
    (c_status,) = [s for s in result.status["subsetStatuses"] if s["name"] == "subset-c"]
    assert c_status["conditions"][0]["status"] == "True"


def test_without_the_registrys_objects_nothing_is_judged_unavailable() -> None:
    result = reconcile(seed_ud(), workloads=[], pods=[], revisions=[], now=NOW, clusters=[])
    assert all(not s.get("conditions") for s in result.status.get("subsetStatuses", []))


# -- spreadbus plan -----------------------------------------------------------------------------

def test_plan_reads_the_member_objects_of_each_subsets_cluster(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fleet = Fleet()
    ud = seed_ud()
    round_(ud, fleet)
    workloads, pods = fleet.observed()
    host_pod = copy.deepcopy(pods[0])
    del host_pod["metadata"]["annotations"]
    path = tmp_path / "objects.yaml"
    path.write_text(yaml.safe_dump_all([*CLUSTERS, ud, *workloads, *pods]))
    assert main(["plan", "-f", str(path), "--now", "2026-01-01T12:00:00Z", "-o", "json"]) == 0
    body = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    entry = body["unitedDeployments"]["default/sample-ud"]
    assert {n: (s["action"], s["cluster"]) for n, s in entry["subsets"].items()} == {
        "subset-a": ("none", "member1"), "subset-b": ("none", "member1"),
        "subset-c": ("none", "member2")}
    assert entry["status"]["readyReplicas"] == 6
    assert entry["deletes"] == []


# -- a control-plane host runs no workloads -----------------------------------------------------

def with_a_local_subset() -> JSON:
    ud = seed_ud()
    ud["spec"]["topology"]["subsets"].append(zone("subset-d", "node-d"))
    return ud


def test_in_a_control_plane_a_subset_without_a_target_is_an_error_naming_its_field() -> None:
    from spreadbus.features.uniteddeployment.core.validation import validate_uniteddeployment

    ud = with_a_local_subset()
    assert validate_uniteddeployment(ud) == []
    (error,) = validate_uniteddeployment(ud, control_plane=True)
    assert (error.field, error.type) == ("spec.topology.subsets[3].targetCluster", "Required")
    assert "control plane" in error.message
    assert validate_uniteddeployment(seed_ud(), control_plane=True) == []


async def test_the_webhook_of_a_control_plane_refuses_a_local_subset() -> None:
    from spreadbus.engine.review import AdmissionRequest
    from spreadbus.features.uniteddeployment.admission.handlers import validate

    request = AdmissionRequest(
        uid="u", api_version="admission.k8s.io/v1", operation="CREATE", group="apps.kruise.io",
        version="v1alpha1", resource="uniteddeployments", sub_resource="", namespace="default",
        name="sample-ud", dry_run=False, object=with_a_local_subset(), old_object=None)
    assert (await validate(request)).allowed
    refused = await validate(request, control_plane=True)
    assert not refused.allowed
    assert "spec.topology.subsets[3].targetCluster" in refused.message


def test_in_a_control_plane_the_planner_provisions_nothing_and_says_why() -> None:
    result = reconcile(with_a_local_subset(), workloads=[], pods=[], revisions=[], now=NOW,
                       home="host", clusters=CLUSTERS, control_plane=True)
    assert result.subsets == {}
    assert result.error is not None
    assert result.error.startswith("spec.topology.subsets[3].targetCluster: ")
    (condition,) = [c for c in result.status["conditions"] if c["type"] == "SubsetProvisioned"]
    assert (condition["status"], condition["reason"]) == ("False", "Error")
    assert condition["message"] == result.error
    fine = reconcile(seed_ud(), workloads=[], pods=[], revisions=[], now=NOW, home="host",
                     clusters=CLUSTERS, control_plane=True)
    assert {d.action for d in fine.subsets.values()} == {"create"}


def test_in_a_control_plane_a_uniteddeployment_naming_no_cluster_is_a_template() -> None:
    """Naming no cluster at all, it is a resource template a PropagationPolicy carries whole to
    the members: valid in the host, and the host's planner leaves it to them."""
    from spreadbus.features.uniteddeployment.core.validation import validate_uniteddeployment

    template = seed_ud()
    for subset in template["spec"]["topology"]["subsets"]:
        del subset["targetCluster"]
    assert validate_uniteddeployment(template, control_plane=True) == []
    result = reconcile(template, workloads=[], pods=[], revisions=[], now=NOW, home="host",
                       clusters=CLUSTERS, control_plane=True)
    assert (result.subsets, result.error, result.status) == ({}, None, {})
