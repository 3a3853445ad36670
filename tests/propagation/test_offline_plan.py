"""``spreadbus plan`` for Karmada propagation: the ``resourceBindings`` key of the offline
contract, the WorkloadRebalancer's result when a binding exists, and ``spreadbus validate`` on
the propagation kinds. The inputs are the seed's manifests (``examples/propagation/``) and
small variations of them for its four scenarios."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.cli import main

JSON = dict[str, Any]
MANIFESTS = Path(__file__).resolve().parents[2] / "examples" / "propagation"
CREATED = "2024-05-22T11:36:10Z"
EARLIER = "2024-05-22T11:00:00Z"


def load(name: str) -> list[JSON]:
    return [d for d in yaml.safe_load_all((MANIFESTS / name).read_text()) if d]


def run_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], objects: list[JSON],
             now: str = CREATED) -> JSON:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    assert main(["plan", "-f", str(path), "--now", now, "-o", "json"]) == 0
    answer: JSON = json.loads(capsys.readouterr().out)
    return answer


def named(objects: list[JSON], kind: str, name: str) -> JSON:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


def spread_of(entry: JSON) -> dict[str, int]:
    return {c["name"]: c["replicas"] for c in entry["clusters"]}


def binding(name: str, clusters: dict[str, int], *, placement: JSON, replicas: int = 3,
            last: str = EARLIER, observed: str = "", namespace: str = "default",
            kind: str = "Deployment", resource_name: str = "demo-deploy") -> JSON:
    """A stored ResourceBinding as Karmada's scheduler leaves it after a successful round."""
    status: JSON = {"lastScheduledTime": last, "schedulerObservedGeneration": 1}
    if observed:
        status["schedulerObservedAffinityName"] = observed
    return {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": name, "namespace": namespace, "generation": 1,
                         "annotations": {"policy.karmada.io/applied-placement":
                                         json.dumps(placement)}},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": kind,
                                  "namespace": namespace, "name": resource_name},
                     "replicas": replicas, "placement": placement,
                     "clusters": [{"name": n, "replicas": r} for n, r in clusters.items()]},
            "status": status}


def test_the_seed_batch_rebalancer_succeeds_for_all_three(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answer = run_plan(tmp_path, capsys, load("members.yaml") + load("batch.yaml"))
    assert answer["workloadRebalancers"]["demo"]["status"] == {
        "finishTime": CREATED, "observedGeneration": 1, "observedWorkloads": [
            {"result": "Successful", "workload": {"apiVersion": "apps/v1",
                                                  "kind": "Deployment", "name": "demo-deploy",
                                                  "namespace": "default"}},
            {"result": "Successful", "workload": {"apiVersion": "rbac.authorization.k8s.io/v1",
                                                  "kind": "ClusterRole", "name": "demo-role"}},
            {"result": "Successful", "workload": {"apiVersion": "v1", "kind": "ConfigMap",
                                                  "name": "demo-config",
                                                  "namespace": "default"}}]}
    bindings = answer["resourceBindings"]
    assert sorted(bindings) == ["default/demo-config-configmap", "default/demo-deploy-deployment",
                                "demo-role-clusterrole"]


def test_a_first_schedule_divides_by_room_and_renders_each_clusters_share(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answer = run_plan(tmp_path, capsys, load("members.yaml") + load("batch.yaml"))
    deploy = answer["resourceBindings"]["default/demo-deploy-deployment"]
    # Each member has room for 10 replicas; the binding was never scheduled, so the trigger
    # the rebalancer delivers does not make the round Fresh.
    assert deploy == {
        "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                     "name": "demo-deploy"},
        "replicas": 3, "clusters": deploy["clusters"], "scheduled": True, "mode": "Steady",
        "error": None, "rescheduleTriggeredAt": CREATED, "gracefulEvictionTasks": [],
        "works": deploy["works"]}
    # Webster 3 seats over 10:10, the binding's uid hash decides the odd seat.
    assert sorted(spread_of(deploy).values()) == [1, 2]
    assert set(deploy["works"]) == {"member1", "member2"}
    for cluster, work in deploy["works"].items():
        assert work["spec"]["replicas"] == spread_of(deploy)[cluster]
        assert "uid" not in work["metadata"]
        assert "status" not in work
        assert work["metadata"]["annotations"] == {
            "multicluster.spreadbus.io/cluster": cluster,
            "resourcebinding.karmada.io/name": "demo-deploy-deployment",
            "resourcebinding.karmada.io/namespace": "default"}
        assert work["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx"


def test_non_workloads_go_whole_to_every_cluster(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answer = run_plan(tmp_path, capsys, load("members.yaml") + load("batch.yaml"))
    config = answer["resourceBindings"]["default/demo-config-configmap"]
    role = answer["resourceBindings"]["demo-role-clusterrole"]
    for entry in (config, role):
        assert entry["clusters"] == [{"name": "member1", "replicas": 0},
                                     {"name": "member2", "replicas": 0}]
        assert entry["replicas"] == 0
    assert config["works"]["member2"]["data"] == {"greeting": "hello"}
    assert role["resource"]["namespace"] == ""
    assert "resourcebinding.karmada.io/namespace" not in (
        role["works"]["member1"]["metadata"]["annotations"])


def test_the_seed_single_rebalancer_fails_without_a_binding(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objects = load("members.yaml") + load("batch.yaml")
    objects = [o for o in objects if o["kind"] != "ClusterPropagationPolicy"]
    answer = run_plan(tmp_path, capsys, objects)
    entries = answer["workloadRebalancers"]["demo"]["status"]["observedWorkloads"]
    assert [(e["result"], e.get("reason")) for e in entries] == [
        ("Failed", "ReferencedBindingNotFound")] * 3
    assert "resourceBindings" not in answer


def test_a_stored_binding_is_enough_for_the_rebalancer(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rebalancer = named(load("batch.yaml"), "WorkloadRebalancer", "demo")
    rebalancer["spec"]["workloads"] = rebalancer["spec"]["workloads"][:1]
    stored = binding("demo-deploy-deployment", {"member2": 3},
                     placement={"clusterAffinity": {"clusterNames": ["member2"]}})
    answer = run_plan(tmp_path, capsys, [rebalancer, stored])
    entries = answer["workloadRebalancers"]["demo"]["status"]["observedWorkloads"]
    assert [e["result"] for e in entries] == ["Successful"]


# Scenario 1: member1 failed and everything moved to member2; member1 is back.
DYNAMIC = {"clusterAffinity": {"clusterNames": ["member1", "member2"]},
           "replicaScheduling": {"replicaSchedulingType": "Divided",
                                 "replicaDivisionPreference": "Weighted",
                                 "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}


def scenario(placement: JSON, clusters: dict[str, int], observed: str = "") -> list[JSON]:
    objects = load("members.yaml") + load("batch.yaml")
    policy = named(objects, "ClusterPropagationPolicy", "demo")
    policy["spec"]["placement"] = copy.deepcopy(placement)
    rebalancer = named(objects, "WorkloadRebalancer", "demo")
    objects.remove(rebalancer)
    stored = binding("demo-deploy-deployment", clusters, placement=placement, observed=observed)
    return [*objects, stored]


def with_rebalancer(objects: list[JSON]) -> list[JSON]:
    rebalancer = named(load("batch.yaml"), "WorkloadRebalancer", "demo")
    rebalancer["spec"]["workloads"] = rebalancer["spec"]["workloads"][:1]
    return [*objects, rebalancer]


def test_scenario_1_a_recovered_cluster_pulls_nothing_back_until_a_rebalancer(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objects = scenario(DYNAMIC, {"member2": 3})
    before = run_plan(tmp_path, capsys, objects)["resourceBindings"]
    deploy = before["default/demo-deploy-deployment"]
    assert deploy["scheduled"] is False
    assert deploy["mode"] is None
    assert spread_of(deploy) == {"member2": 3}
    assert set(deploy["works"]) == {"member2"}
    after = run_plan(tmp_path, capsys, with_rebalancer(objects))["resourceBindings"]
    deploy = after["default/demo-deploy-deployment"]
    assert deploy["mode"] == "Fresh"
    assert deploy["rescheduleTriggeredAt"] == CREATED
    # member2 counts its own 3 as room (13 against member1's 10): 2 and 1.
    assert spread_of(deploy) == {"member1": 1, "member2": 2}


def test_scenario_1_a_failed_cluster_is_left_by_a_fresh_schedule(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objects = with_rebalancer(scenario(DYNAMIC, {"member1": 2, "member2": 1}))
    member1 = named(objects, "Cluster", "member1")
    member1["spec"]["taints"] = [{"key": "cluster.karmada.io/not-ready",
                                  "effect": "NoSchedule"}]
    # member1 still holds replicas, so the NoSchedule taint does not filter it (eviction needs
    # NoExecute); a deleting member1 is left.
    deploy = run_plan(tmp_path, capsys, objects)["resourceBindings"][
        "default/demo-deploy-deployment"]
    assert set(spread_of(deploy)) == {"member1", "member2"}
    member1["metadata"]["deletionTimestamp"] = EARLIER
    deploy = run_plan(tmp_path, capsys, objects)["resourceBindings"][
        "default/demo-deploy-deployment"]
    assert spread_of(deploy) == {"member2": 3}


def test_scenario_3_aggregated_gathers_into_one_cluster_on_a_rebalance(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    aggregated = {"clusterAffinity": {"clusterNames": ["member1", "member2"]},
                  "replicaScheduling": {"replicaSchedulingType": "Divided",
                                        "replicaDivisionPreference": "Aggregated"}}
    objects = scenario(aggregated, {"member1": 2, "member2": 1})
    steady = run_plan(tmp_path, capsys, objects)["resourceBindings"][
        "default/demo-deploy-deployment"]
    assert steady["scheduled"] is False
    assert spread_of(steady) == {"member1": 2, "member2": 1}
    fresh = run_plan(tmp_path, capsys, with_rebalancer(objects))["resourceBindings"][
        "default/demo-deploy-deployment"]
    assert fresh["mode"] == "Fresh"
    assert spread_of(fresh) == {"member1": 3}


def test_scenario_4_primary_backup_comes_back_with_a_rebalancer(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    primary_backup = {"clusterAffinities": [
        {"affinityName": "primary", "clusterNames": ["member1"]},
        {"affinityName": "backup", "clusterNames": ["member2"]}],
        "replicaScheduling": DYNAMIC["replicaScheduling"]}
    objects = scenario(primary_backup, {"member2": 3}, observed="backup")
    steady = run_plan(tmp_path, capsys, objects)["resourceBindings"][
        "default/demo-deploy-deployment"]
    assert steady["scheduled"] is False
    fresh = run_plan(tmp_path, capsys, with_rebalancer(objects))["resourceBindings"][
        "default/demo-deploy-deployment"]
    assert spread_of(fresh) == {"member1": 3}
    assert set(fresh["works"]) == {"member1"}


def test_a_scale_up_keeps_every_replica_where_it_is(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objects = scenario(DYNAMIC, {"member1": 1, "member2": 2})
    named(objects, "Deployment", "demo-deploy")["spec"]["replicas"] = 8
    deploy = run_plan(tmp_path, capsys, objects)["resourceBindings"][
        "default/demo-deploy-deployment"]
    assert deploy["mode"] == "Steady"
    assert deploy["replicas"] == 8
    spread = spread_of(deploy)
    assert sum(spread.values()) == 8
    assert spread["member1"] >= 1
    assert spread["member2"] >= 2


def test_a_schedule_that_fails_says_why_and_keeps_the_earlier_clusters(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objects = scenario(DYNAMIC, {"member1": 1, "member2": 2})
    named(objects, "Deployment", "demo-deploy")["spec"]["replicas"] = 40
    deploy = run_plan(tmp_path, capsys, objects)["resourceBindings"][
        "default/demo-deploy-deployment"]
    assert deploy["error"] == ("failed to assign replicas: failed to scale up: Clusters "
                               "available replicas 20 are not enough to schedule.")
    assert spread_of(deploy) == {"member1": 1, "member2": 2}


def test_eviction_tasks_are_shown_and_keep_their_cluster_out(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objects = scenario(DYNAMIC, {"member2": 1})
    stored = named(objects, "ResourceBinding", "demo-deploy-deployment")
    stored["spec"]["gracefulEvictionTasks"] = [
        {"fromCluster": "member1", "replicas": 2, "reason": "TaintUntolerated",
         "producer": "TaintManager", "purgeMode": "Gracefully"}]
    deploy = run_plan(tmp_path, capsys, objects)["resourceBindings"][
        "default/demo-deploy-deployment"]
    assert deploy["gracefulEvictionTasks"] == [
        {"fromCluster": "member1", "replicas": 2, "reason": "TaintUntolerated",
         "purgeMode": "Gracefully"}]
    assert spread_of(deploy) == {"member2": 3}


def test_without_karmada_objects_the_answer_has_no_bindings(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deploy = named(load("batch.yaml"), "Deployment", "demo-deploy")
    assert "resourceBindings" not in run_plan(tmp_path, capsys, [deploy])


def test_the_text_plan_names_each_binding(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(scenario(DYNAMIC, {"member2": 3})))
    assert main(["plan", "-f", str(path), "--now", CREATED]) == 0
    out = capsys.readouterr().out
    assert "ResourceBinding default/demo-deploy-deployment: member2=3 (not rescheduled)" in out
    assert "ClusterResourceBinding demo-role-clusterrole: member1=0 member2=0 (Steady)" in out


def test_validate_accepts_the_seed_and_names_bad_fields(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(load("members.yaml") + load("batch.yaml")))
    assert main(["validate", "-f", str(path), "-o", "json"]) == 0
    capsys.readouterr()
    bad = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
           "metadata": {"name": "bad", "namespace": "default"},
           "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                           "namespace": "other"}],
                    "placement": {"clusterAffinity": {"clusterNames": ["a"]},
                                  "clusterAffinities": [{"affinityName": "x"}],
                                  "replicaScheduling": {"replicaSchedulingType": "Split"},
                                  "spreadConstraints": [{"spreadByField": "region",
                                                         "minGroups": 2, "maxGroups": 1}]}}}
    path.write_text(yaml.safe_dump(bad))
    assert main(["validate", "-f", str(path), "-o", "json"]) == 1
    errors = {(e["field"], e["type"]) for e in json.loads(capsys.readouterr().out)["errors"]}
    assert errors == {
        ("spec.resourceSelectors[0].namespace", "Invalid"),
        ("spec.placement", "Invalid"),
        ("spec.placement.replicaScheduling.replicaSchedulingType", "NotSupported"),
        ("spec.placement.spreadConstraints[0]", "Invalid"),
        ("spec.placement.spreadConstraints", "Invalid"),
    }


def test_a_not_ready_cluster_gets_nothing_new_and_keeps_what_it_has(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The cluster controller taints a cluster whose Ready is False (or missing) NoSchedule;
    the scheduler keeps what it holds (only NoExecute evicts) and gives it nothing new."""
    objects = load("members.yaml") + load("batch.yaml")
    objects = [o for o in objects if o["kind"] != "WorkloadRebalancer"]
    member1 = named(objects, "Cluster", "member1")
    member1["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    answer = run_plan(tmp_path, capsys, objects)["resourceBindings"]
    assert spread_of(answer["default/demo-deploy-deployment"]) == {"member2": 3}
    assert spread_of(answer["default/demo-config-configmap"]) == {"member2": 0}
    del member1["status"]["conditions"]
    answer = run_plan(tmp_path, capsys, objects)["resourceBindings"]
    assert spread_of(answer["default/demo-deploy-deployment"]) == {"member2": 3}
    member1["status"]["conditions"] = [{"type": "Ready", "status": "Unknown"}]
    held = scenario(DYNAMIC, {"member1": 2, "member2": 1})
    named(held, "Cluster", "member1")["status"]["conditions"] = [
        {"type": "Ready", "status": "Unknown"}]
    named(held, "Deployment", "demo-deploy")["spec"]["replicas"] = 5
    deploy = run_plan(tmp_path, capsys, held)["resourceBindings"][
        "default/demo-deploy-deployment"]
    assert deploy["mode"] == "Steady"
    assert spread_of(deploy)["member1"] >= 2
    assert sum(spread_of(deploy).values()) == 5


def test_a_stored_binding_without_its_template_keeps_its_own_replicas_and_request(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stored = binding("demo-deploy-deployment", {"member1": 1}, placement=DYNAMIC, replicas=4)
    stored["spec"]["replicaRequirements"] = {"resourceRequest": {"cpu": "50m"}}
    deploy = run_plan(tmp_path, capsys, [*load("members.yaml"), stored])["resourceBindings"][
        "default/demo-deploy-deployment"]
    assert deploy["replicas"] == 4
    # 100m of room is two replicas of 50m in each member: 1 held plus 3 over 2:2.
    assert sum(spread_of(deploy).values()) == 4
    assert deploy["works"] == {}


def test_objects_of_member_clusters_are_not_the_hosts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objects = load("members.yaml") + load("batch.yaml")
    for obj in objects:
        if obj["kind"] in ("Deployment", "ConfigMap", "ClusterRole"):
            obj["metadata"].setdefault("annotations", {})[
                "multicluster.spreadbus.io/cluster"] = "member1"
    answer = run_plan(tmp_path, capsys, objects)
    assert "resourceBindings" not in answer
    entries = answer["workloadRebalancers"]["demo"]["status"]["observedWorkloads"]
    assert {e["result"] for e in entries} == {"Failed"}


def test_zero_replicas_list_every_cluster_only_without_requirements(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """common.go AssignReplicas: 0 replicas and no replica requirements list every candidate
    with 0 (Karmada's own "known issue"); with a request or a node claim the division runs and
    keeps nothing."""
    objects = load("members.yaml") + load("batch.yaml")
    deploy = named(objects, "Deployment", "demo-deploy")
    deploy["spec"]["replicas"] = 0
    entry = run_plan(tmp_path, capsys, objects)["resourceBindings"][
        "default/demo-deploy-deployment"]
    assert entry["clusters"] == []
    assert entry["works"] == {}
    del deploy["spec"]["template"]["spec"]["containers"][0]["resources"]
    entry = run_plan(tmp_path, capsys, objects)["resourceBindings"][
        "default/demo-deploy-deployment"]
    assert entry["clusters"] == [{"name": "member1", "replicas": 0},
                                 {"name": "member2", "replicas": 0}]
    assert entry["works"]["member1"]["spec"]["replicas"] == 0
    deploy["spec"]["template"]["spec"]["tolerations"] = [{"operator": "Exists"}]
    entry = run_plan(tmp_path, capsys, objects)["resourceBindings"][
        "default/demo-deploy-deployment"]
    assert entry["clusters"] == []


def test_the_seed_edited_rebalancer_keeps_the_success_and_drops_the_failure(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The seed's "Modify WorkloadRebalancer": demo-deploy-1 had succeeded, demo-deploy-2 had
    failed; the spec now names only demo-deploy-3, whose binding Karmada holds."""
    def ref(name: str) -> JSON:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
                "namespace": "default"}

    rebalancer = {
        "apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
        "metadata": {"name": "demo", "generation": 2, "creationTimestamp": CREATED},
        "spec": {"workloads": [ref("demo-deploy-3")]},
        "status": {"finishTime": CREATED, "observedGeneration": 1, "observedWorkloads": [
            {"result": "Successful", "workload": ref("demo-deploy-1")},
            {"reason": "ReferencedBindingNotFound", "result": "Failed",
             "workload": ref("demo-deploy-2")}]}}
    stored = binding("demo-deploy-3-deployment", {"member1": 1}, placement=DYNAMIC, replicas=1,
                     resource_name="demo-deploy-3")
    answer = run_plan(tmp_path, capsys, [*load("members.yaml"), rebalancer, stored],
                      now="2024-05-22T11:40:10Z")
    assert answer["workloadRebalancers"]["demo"]["status"] == {
        "finishTime": "2024-05-22T11:40:10Z", "observedGeneration": 2, "observedWorkloads": [
            {"result": "Successful", "workload": ref("demo-deploy-1")},
            {"result": "Successful", "workload": ref("demo-deploy-3")}]}
    # The rebalancer's trigger reaches the binding it names, and only that one.
    assert answer["resourceBindings"]["default/demo-deploy-3-deployment"][
        "rescheduleTriggeredAt"] == CREATED


@pytest.mark.parametrize(("template", "replicas"), [
    ({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {}}, 1),
    ({"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {"replicas": 4}}, 4),
    ({"apiVersion": "batch/v1", "kind": "Job", "spec": {"parallelism": 5, "completions": 2}}, 2),
    ({"apiVersion": "batch/v1", "kind": "Job", "spec": {"parallelism": 3}}, 3),
    ({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "spec": {"replicas": 6}}, 6),
    ({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
      "spec": {"replicas": 7}}, 7),
    ({"apiVersion": "v1", "kind": "Service", "spec": {"replicas": 3}}, 0),
])
def test_the_interpreter_reads_each_kinds_replicas(template: JSON, replicas: int) -> None:
    """pkg/resourceinterpreter/default/native/replica.go and the OpenKruise customizations."""
    from spreadbus.features.propagation.core.interpreter import replicas_of

    assert replicas_of(template) == replicas


def test_a_binding_being_deleted_is_not_scheduled(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objects = with_rebalancer(scenario(DYNAMIC, {"member2": 3}))
    named(objects, "ResourceBinding", "demo-deploy-deployment")["metadata"][
        "deletionTimestamp"] = EARLIER
    deploy = run_plan(tmp_path, capsys, objects)["resourceBindings"][
        "default/demo-deploy-deployment"]
    assert deploy["scheduled"] is False
    assert spread_of(deploy) == {"member2": 3}
