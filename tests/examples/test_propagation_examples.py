"""examples/propagation/ through ``spreadbus plan``, each with the members of members.yaml,
as the examples README runs them: the answers the files' comments promise, in the offline
contract's shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.cli import main
from tests.examples.manifests import EXAMPLES

PROPAGATION = EXAMPLES / "propagation"
ENTRY_KEYS = ["resource", "replicas", "clusters", "scheduled", "mode", "error",
              "rescheduleTriggeredAt", "gracefulEvictionTasks", "works"]


def plan(example: str, now: str, tmp_path: Path,
         capsys: pytest.CaptureFixture[str], extra: str = "") -> dict[str, Any]:
    path = tmp_path / "in.yaml"
    path.write_text((PROPAGATION / "members.yaml").read_text()
                    + (PROPAGATION / example).read_text() + extra)
    assert main(["plan", "-f", str(path), "--now", now, "-o", "json"]) == 0
    answer: dict[str, Any] = json.loads(capsys.readouterr().out)
    for entry in answer["resourceBindings"].values():
        assert list(entry) == ENTRY_KEYS
    return answer


def deployment(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
            "namespace": "default"}


def test_the_weighted_example_gives_member1_two_replicas_and_member2_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answer = plan("weighted-deployment.yaml", "2024-05-22T11:36:10Z", tmp_path, capsys)
    (key,) = answer["resourceBindings"]
    entry = answer["resourceBindings"][key]
    assert key == "default/web-deployment"
    assert {k: v for k, v in entry.items() if k != "works"} == {
        "resource": deployment("web"), "replicas": 3,
        "clusters": [{"name": "member1", "replicas": 2}, {"name": "member2", "replicas": 1}],
        "scheduled": True, "mode": "Steady", "error": None, "rescheduleTriggeredAt": None,
        "gracefulEvictionTasks": []}
    assert sorted(entry["works"]) == ["member1", "member2"]
    for cluster, replicas in (("member1", 2), ("member2", 1)):
        work = entry["works"][cluster]
        assert (work["kind"], work["metadata"]["name"], work["spec"]["replicas"]) == (
            "Deployment", "web", replicas)
        assert work["metadata"]["annotations"]["resourcebinding.karmada.io/name"] == (
            "web-deployment")


def test_the_batch_example_reports_all_three_successful_in_karmadas_order(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answer = plan("batch.yaml", "2024-05-22T11:36:10Z", tmp_path, capsys)
    assert answer["workloadRebalancers"]["demo"]["status"] == {
        "observedWorkloads": [
            {"workload": deployment("demo-deploy"), "result": "Successful"},
            {"workload": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                          "name": "demo-role"}, "result": "Successful"},
            {"workload": {"apiVersion": "v1", "kind": "ConfigMap", "name": "demo-config",
                          "namespace": "default"}, "result": "Successful"}],
        "observedGeneration": 1, "finishTime": "2024-05-22T11:36:10Z"}
    bindings = answer["resourceBindings"]
    assert sorted(bindings) == ["default/demo-config-configmap", "default/demo-deploy-deployment",
                                "demo-role-clusterrole"]
    # The ConfigMap and the ClusterRole are duplicated: every member listed with 0 replicas.
    for key in ("default/demo-config-configmap", "demo-role-clusterrole"):
        assert bindings[key]["clusters"] == [{"name": "member1", "replicas": 0},
                                             {"name": "member2", "replicas": 0}]
        assert sorted(bindings[key]["works"]) == ["member1", "member2"]
    assert sum(c["replicas"] for c in bindings["default/demo-deploy-deployment"]["clusters"]) == 3


def test_the_edited_rebalancer_keeps_the_success_drops_the_failure_and_adds_the_new_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answer = plan("edited-rebalancer.yaml", "2024-05-22T11:40:10Z", tmp_path, capsys)
    assert answer["workloadRebalancers"]["demo"]["status"] == {
        "observedWorkloads": [
            {"workload": deployment("demo-deploy-1"), "result": "Successful"},
            {"workload": deployment("demo-deploy-3"), "result": "Successful"}],
        "observedGeneration": 2, "finishTime": "2024-05-22T11:40:10Z"}
    bindings = answer["resourceBindings"]
    assert sorted(bindings) == ["default/demo-deploy-1-deployment",
                                "default/demo-deploy-3-deployment"]
    assert bindings["default/demo-deploy-3-deployment"]["rescheduleTriggeredAt"] == (
        "2024-05-22T11:36:10Z")
    assert bindings["default/demo-deploy-1-deployment"]["rescheduleTriggeredAt"] is None


def test_the_ttl_example_is_deleted_sixty_seconds_after_it_finished(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answer = plan("ttl-rebalancer.yaml", "2024-05-22T11:36:10Z", tmp_path, capsys)
    status = {"observedWorkloads": [{"workload": deployment("demo-deploy"),
                                     "result": "Successful"}],
              "observedGeneration": 1, "finishTime": "2024-05-22T11:36:10Z"}
    assert answer["workloadRebalancers"]["demo"] == {
        "status": status, "delete": False, "requeueAt": "2024-05-22T11:37:10Z"}
    assert answer["resourceBindings"]["default/demo-deploy-deployment"][
        "rescheduleTriggeredAt"] == "2024-05-22T11:36:10Z"
    # With the status it wrote then, 60 s later: deleted.
    (rebalancer,) = [d for d in yaml.safe_load_all((PROPAGATION / "ttl-rebalancer.yaml")
                                                   .read_text()) if d and d["kind"] ==
                     "WorkloadRebalancer"]
    finished = yaml.safe_dump({**rebalancer, "status": status})
    path = tmp_path / "in.yaml"
    path.write_text((PROPAGATION / "members.yaml").read_text() + "---\n" + finished)
    assert main(["plan", "-f", str(path), "--now", "2024-05-22T11:37:10Z", "-o", "json"]) == 0
    later = json.loads(capsys.readouterr().out)["workloadRebalancers"]["demo"]
    assert (later["status"], later["delete"]) == (status, True)
