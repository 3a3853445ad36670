"""``spreadbus plan`` and ``spreadbus validate`` for WorkloadRebalancers, as the offline contract
says: Successful when the named object is in FILE and a placement governs it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.cli import main

JSON = dict[str, Any]


def deployment(name: str, namespace: str = "default") -> JSON:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


def spread(name: str, target: JSON, namespace: str = "default") -> JSON:
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"targetRef": target, "subsets": [{"name": "a"}]}}


def united(name: str) -> JSON:
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"replicas": 2}}


def rebalancer(*workloads: JSON, ttl: int | None = None, name: str = "demo") -> JSON:
    spec: JSON = {"workloads": list(workloads)}
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    return {"apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
            "metadata": {"name": name, "generation": 1, "uid": "u1",
                         "creationTimestamp": "2024-05-22T11:36:10Z"},
            "spec": spec}


def ref(kind: str, name: str, api_version: str = "apps/v1", namespace: str = "default") -> JSON:
    return {"apiVersion": api_version, "kind": kind, "name": name, "namespace": namespace}


def plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], *objects: JSON,
         now: str = "2024-05-22T11:40:10Z") -> JSON:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    assert main(["plan", "-f", str(path), "--now", now, "-o", "json"]) == 0
    answer: JSON = json.loads(capsys.readouterr().out)
    return answer.get("workloadRebalancers", {})  # type: ignore[no-any-return]


def results(entry: JSON) -> list[tuple[str, str, str]]:
    return [(w["workload"]["name"], w.get("result", ""), w.get("reason", ""))
            for w in entry["status"]["observedWorkloads"]]


def test_a_workload_targeted_by_a_workloadspread_and_a_uniteddeployment_succeed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    objects = (deployment("web"), spread("ws", {"apiVersion": "apps/v1beta1",
                                               "kind": "Deployment", "name": "web"}),
               united("ud"),
               rebalancer(ref("Deployment", "web"),
                          ref("UnitedDeployment", "ud", "apps.kruise.io/v1alpha1"), ttl=60))
    answer = plan(tmp_path, capsys, *objects)
    assert answer == {"demo": {
        "status": {"finishTime": "2024-05-22T11:40:10Z", "observedGeneration": 1,
                   "observedWorkloads": [  # byte order: "apps." before "apps/"
                       {"result": "Successful", "workload": ref(
                           "UnitedDeployment", "ud", "apps.kruise.io/v1alpha1")},
                       {"result": "Successful", "workload": ref("Deployment", "web")}]},
        "delete": False, "requeueAt": "2024-05-22T11:41:10Z"}}


@pytest.mark.parametrize("why", ["absent", "ungoverned", "other namespace", "other group",
                                 "subset workload", "cluster-scoped"])
def test_anything_else_fails_with_referenced_binding_not_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], why: str,
) -> None:
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    objects: list[JSON] = [deployment("web")]
    wanted = ref("Deployment", "web")
    if why == "absent":
        objects = [spread("ws", target)]
    elif why == "other namespace":
        objects.append(spread("ws", target, namespace="elsewhere"))
    elif why == "other group":
        objects.append(spread("ws", {**target, "apiVersion": "apps.kruise.io/v1alpha1"}))
    elif why == "subset workload":
        sub = deployment("ud-a-xyz")
        sub["metadata"]["ownerReferences"] = [{"apiVersion": "apps.kruise.io/v1alpha1",
                                               "kind": "UnitedDeployment", "name": "ud",
                                               "uid": "x", "controller": True}]
        objects = [united("ud"), sub]
        wanted = ref("Deployment", "ud-a-xyz")
    elif why == "cluster-scoped":
        objects.append(spread("ws", target))
        wanted = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    answer = plan(tmp_path, capsys, *objects, rebalancer(wanted, ttl=0))
    assert results(answer["demo"]) == [(wanted["name"], "Failed", "ReferencedBindingNotFound")]
    assert answer["demo"]["delete"] is True
    assert "requeueAt" not in answer["demo"]


def test_without_rebalancers_the_key_is_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump(deployment("web")))
    assert main(["plan", "-f", str(path), "-o", "json"]) == 0
    assert "workloadRebalancers" not in json.loads(capsys.readouterr().out)


def test_the_ttl_reads_the_finish_time_already_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    wr = rebalancer(ref("Deployment", "web"), ttl=30)
    wr["status"] = {"finishTime": "2024-05-22T11:36:10Z", "observedGeneration": 1,
                    "observedWorkloads": [{"result": "Successful",
                                           "workload": ref("Deployment", "web")}]}
    early = plan(tmp_path, capsys, wr, now="2024-05-22T11:36:39Z")["demo"]
    assert early["delete"] is False
    assert early["requeueAt"] == "2024-05-22T11:36:40Z"
    assert plan(tmp_path, capsys, wr, now="2024-05-22T11:36:40Z")["demo"]["delete"] is True


def validate(tmp_path: Path, capsys: pytest.CaptureFixture[str], obj: JSON) -> tuple[int, JSON]:
    path = tmp_path / "wr.yaml"
    path.write_text(yaml.safe_dump(obj))
    code = main(["validate", "-f", str(path), "-o", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_validate_allows_the_seed_example(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    code, answer = validate(tmp_path, capsys, rebalancer(ref("Deployment", "demo-deploy"),
                                                         ttl=60))
    assert (code, answer["allowed"], answer["errors"]) == (0, True, [])


def test_validate_names_every_bad_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    bad = rebalancer({"apiVersion": "apps/v1", "kind": 3}, "not a ref",
                     {"apiVersion": "a/b/c", "kind": "K", "name": "n", "namespace": 1}, ttl=-1)
    code, answer = validate(tmp_path, capsys, bad)
    assert code == 1
    assert answer["allowed"] is False
    assert [(e["field"], e["type"]) for e in answer["errors"]] == [
        ("spec.workloads[0].kind", "Invalid"),
        ("spec.workloads[0].name", "Required"),
        ("spec.workloads[1]", "Invalid"),
        ("spec.workloads[2].namespace", "Invalid"),
        ("spec.workloads[2].apiVersion", "Invalid"),
        ("spec.ttlSecondsAfterFinished", "Invalid"),
    ]


def test_validate_requires_at_least_one_workload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    empty = rebalancer()
    assert validate(tmp_path, capsys, empty)[1]["errors"] == [
        {"field": "spec.workloads", "type": "Invalid", "message": "must have at least 1 items"}]
    del empty["spec"]["workloads"]
    assert validate(tmp_path, capsys, empty)[1]["errors"][0]["type"] == "Required"
