"""``spreadbus validate|admit|plan`` through the real command entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.cli import main
from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.model import from_object
from spreadbus.features.workloadspread.core.reconcile import plan_workloadspread
from tests.workloadspread.core.builders import deployment, pod, replicaset, subset, workloadspread

JSON = dict[str, Any]
NOW = "2026-01-01T12:00:00Z"


def cloneset(replicas: int) -> JSON:
    return {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "CloneSet",
        "metadata": {"name": "workload-xxx", "namespace": "deploy", "uid": "cs-uid"},
        "spec": {
            "replicas": replicas,
            "template": {"spec": {"containers": [{"name": "main", "image": "nginx"}]}},
        },
    }


def elastic(status: JSON | None = None) -> JSON:
    return workloadspread(
        subset("ACK", 100, patch={"metadata": {"labels": {"deploy/zone": "ack"}}}),
        subset("ECI"),
        name="ws-demo",
        namespace="deploy",
        kind="CloneSet",
        api_version="apps.kruise.io/v1alpha1",
        target="workload-xxx",
        status=status,
    )


def cs_pods(count: int, subset_name: str, start: int = 0) -> list[JSON]:
    return [
        pod(
            f"workload-xxx-{i}",
            owner=cloneset(0),
            ws="ws-demo",
            subset_name=subset_name,
            namespace="deploy",
        )
        for i in range(start, start + count)
    ]


def write(path: Path, *objects: JSON, as_list: bool = False) -> str:
    if as_list:
        path.write_text(
            yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": list(objects)})
        )
    else:
        path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, JSON]:
    code = main([*argv, "-o", "json"])
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    return code, json.loads(lines[0])


def test_validate_allows_the_elastic_example(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "in.yaml", elastic(), cloneset(10))
    assert run_json(capsys, "validate", "-f", path) == (
        0, {"allowed": True, "errors": [], "defaulted": elastic()})


def test_validate_denies_with_every_error_of_every_workloadspread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = workloadspread(subset("a", 3), subset("b", "50%"), subset("a"))
    other = workloadspread(subset("x"), name="other")
    path = write(tmp_path / "in.yaml", bad, other, as_list=True)
    code, body = run_json(capsys, "validate", "-f", path)
    assert code == 1
    identity = {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
                "namespace": "default"}
    assert body == {
        "allowed": False,
        "results": [
            {
                **identity, "name": "ws", "allowed": False, "defaulted": bad,
                "errors": [
                    {
                        "field": "spec.subsets[1].maxReplicas",
                        "type": "Invalid",
                        "message": "the maxReplicas type of all subsets must be the same",
                    },
                    {
                        "field": "spec.targetRef",
                        "type": "Invalid",
                        "message": "ws.spec.targetRef is in conflict with other WorkloadSpread "
                                   "other",
                    },
                ],
            },
            {
                **identity, "name": "other", "allowed": False, "defaulted": other,
                "errors": [
                    {
                        "field": "spec.targetRef",
                        "type": "Invalid",
                        "message": "ws.spec.targetRef is in conflict with other WorkloadSpread ws",
                    },
                ],
            },
        ],
    }
    assert main(["validate", "-f", path]) == 1
    assert capsys.readouterr().out == (
        "WorkloadSpread/default/ws: denied: spec.subsets[1].maxReplicas: Invalid value: the "
        "maxReplicas type of all subsets must be the same\n"
        "WorkloadSpread/default/ws: denied: spec.targetRef: Invalid value: ws.spec.targetRef is "
        "in conflict with other WorkloadSpread other\n"
        "WorkloadSpread/default/other: denied: spec.targetRef: Invalid value: ws.spec.targetRef "
        "is in conflict with other WorkloadSpread ws\n"
    )


def test_validate_an_update_of_the_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write(tmp_path / "old.yaml", workloadspread(subset("a")))
    new = write(tmp_path / "new.yaml", workloadspread(subset("a"), target="elsewhere"))
    code, body = run_json(capsys, "validate", "-f", new, "--old", old)
    assert code == 1
    assert body["errors"] == [
        {
            "field": "spec.targetRef",
            "type": "Invalid",
            "message": "change TargetReference is not permitted for WorkloadSpread",
        }
    ]


def test_validate_text_output_names_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "in.yaml", workloadspread(subset("a", -1)))
    assert main(["validate", "-f", path]) == 1
    assert capsys.readouterr().out == (
        "denied:\n"
        "  spec.subsets[0].maxReplicas: Invalid value: -1: maxReplicas is not valid for subset\n"
    )


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("a: [unclosed", "not valid YAML or JSON"),
        ("- 1\n- 2\n", "expected an object, got int"),
        ("kind: Pod\n", "holds no WorkloadSpread"),
    ],
)
def test_unreadable_input_exits_2_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, reason: str
) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(content)
    assert main(["validate", "-f", str(path), "-o", "json"]) == 2
    captured = capsys.readouterr()
    answer = json.loads(captured.out)
    assert answer["file"] == str(path)
    assert reason in answer["error"]
    assert captured.err.startswith(f"error: {path}: ")
    assert reason in captured.err


def test_admit_sends_the_pod_past_a_full_subset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = write(tmp_path / "in.yaml", elastic(), cloneset(150), *cs_pods(100, "ACK"))
    new_pod = pod("workload-xxx-new", owner=cloneset(0), namespace="deploy")
    pod_file = write(tmp_path / "pod.yaml", new_pod)
    code, body = run_json(capsys, "admit", "-f", objects, "--pod", pod_file, "--now", NOW)
    assert code == 0
    assert body["workloadSpread"] == "deploy/ws-demo"
    assert body["subset"] == "ECI"
    assert body["pod"]["metadata"]["annotations"] == {
        "apps.kruise.io/matched-workloadspread": '{"name":"ws-demo","subset":"ECI"}',
        # ECI is the second of two subsets and unlimited: the planner's 100 x (2 - 1).
        "controller.kubernetes.io/pod-deletion-cost": "100",
    }
    assert {
        "op": "add",
        "path": "/spec/affinity",
        "value": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "topology.kubernetes.io/zone",
                                    "operator": "In",
                                    "values": ["ECI"],
                                }
                            ]
                        }
                    ]
                }
            }
        },
    } in body["patch"]


def test_admit_writes_the_cost_plan_then_wants_on_the_admitted_pod(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deploy = deployment(replicas=4)
    rs = replicaset(deploy, "v2")
    ws = workloadspread(subset("a", 1), subset("b", 2), subset("c"))
    existing = pod("web-v2-0", owner=rs, ws="ws", subset_name="a")
    objects = write(tmp_path / "in.yaml", ws, deploy, rs, existing)
    pod_file = write(tmp_path / "pod.yaml", pod("web-v2-1", owner=rs))
    code, body = run_json(capsys, "admit", "-f", objects, "--pod", pod_file, "--now", NOW)
    assert code == 0
    assert body["subset"] == "b"
    written = body["pod"]["metadata"]["annotations"]["controller.kubernetes.io/pod-deletion-cost"]
    assert written == "200"  # b is the second of three subsets: 100 x (3 - 1)
    after = write(tmp_path / "after.yaml", ws, deploy, rs, existing, body["pod"])
    code, planned = run_json(capsys, "plan", "-f", after, "--now", NOW)
    assert code == 0
    assert planned["pods"]["default/web-v2-1"] == {"deletionCost": written}


def _ack_statuses(creating: dict[str, str]) -> list[JSON]:
    ack: JSON = {"name": "ACK", "replicas": 99, "missingReplicas": 0}
    if creating:
        ack["creatingPods"] = creating
    return [ack, {"name": "ECI", "replicas": 0, "missingReplicas": -1}]


RESERVED = {"workload-xxx-r": "2026-01-01T11:59:40Z"}


@pytest.mark.parametrize(
    "status",
    [
        {"versionedSubsetStatuses": {"versionIgnored": _ack_statuses(RESERVED)}},
        {"subsetStatuses": _ack_statuses(RESERVED)},
        {
            "subsetStatuses": _ack_statuses(RESERVED),
            "versionedSubsetStatuses": {"another-version": _ack_statuses({})},
        },
    ],
    ids=["versioned", "top-level only", "top-level, other versions only"],
)
def test_admit_counts_status_reservations_until_they_expire(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], status: JSON
) -> None:
    objects = write(tmp_path / "in.yaml", elastic(status), cloneset(150), *cs_pods(99, "ACK"))
    pod_file = write(
        tmp_path / "pod.yaml", pod("workload-xxx-new", owner=cloneset(0), namespace="deploy")
    )
    _, body = run_json(capsys, "admit", "-f", objects, "--pod", pod_file, "--now", NOW)
    assert body["subset"] == "ECI"
    _, later = run_json(
        capsys, "admit", "-f", objects, "--pod", pod_file, "--now", "2026-01-01T12:00:11Z"
    )
    assert later["subset"] == "ACK"


def test_admit_reads_the_versioned_status_of_the_pods_version_over_the_top_level_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = {
        "subsetStatuses": _ack_statuses(RESERVED),
        "versionedSubsetStatuses": {"versionIgnored": _ack_statuses({})},
    }
    objects = write(tmp_path / "in.yaml", elastic(status), cloneset(150), *cs_pods(99, "ACK"))
    pod_file = write(
        tmp_path / "pod.yaml", pod("workload-xxx-new", owner=cloneset(0), namespace="deploy")
    )
    _, body = run_json(capsys, "admit", "-f", objects, "--pod", pod_file, "--now", NOW)
    assert body["subset"] == "ACK"


def test_admit_delete_is_allowed_and_leaves_the_pod(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    existing = cs_pods(1, "ACK")
    objects = write(tmp_path / "in.yaml", elastic(), cloneset(1), *existing)
    pod_file = write(tmp_path / "pod.yaml", existing[0])
    code, body = run_json(
        capsys, "admit", "-f", objects, "--pod", pod_file, "--operation", "DELETE", "--now", NOW
    )
    assert code == 0
    assert body == {
        "allowed": True,
        "workloadSpread": "deploy/ws-demo",
        "subset": "ACK",
        "patch": [],
        "pod": existing[0],
    }


def test_admit_denies_when_the_owner_chain_is_broken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = workloadspread(subset("a", 1), subset("b"))
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-abc", "uid": "u"},
    }
    objects = write(tmp_path / "in.yaml", ws)
    pod_file = write(tmp_path / "pod.yaml", pod("web-abc-1", owner=rs))
    code = main(["admit", "-f", objects, "--pod", pod_file, "--now", NOW, "-o", "json"])
    captured = capsys.readouterr()
    assert code == 1
    assert json.loads(captured.out)["allowed"] is False
    assert captured.err == "ReplicaSet.apps default/web-abc not found\n"


def test_admit_rejects_a_bad_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objects = write(tmp_path / "in.yaml", elastic())
    assert main(["admit", "-f", objects, "--pod", objects, "--now", "yesterday"]) == 2
    assert "not an RFC 3339 time" in capsys.readouterr().err


def test_plan_scale_in_removes_the_elastic_pods_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = cs_pods(100, "ACK") + cs_pods(50, "ECI", start=100)
    objects = write(tmp_path / "in.yaml", elastic(), cloneset(80), *pods)
    code, body = run_json(capsys, "plan", "-f", objects, "--now", NOW)
    assert code == 0
    assert body["workloadSpreads"]["deploy/ws-demo"]["status"]["subsetStatuses"] == [
        {"name": "ACK", "replicas": 100, "missingReplicas": 0},
        {"name": "ECI", "replicas": 50, "missingReplicas": -1},
    ]
    costs = {k: v["deletionCost"] for k, v in body["pods"].items()}
    assert costs == {
        **{f"deploy/workload-xxx-{i}": "200" for i in range(100)},
        **{f"deploy/workload-xxx-{i}": "100" for i in range(100, 150)},
    }
    assert body["evictions"] == []


def test_plan_lists_every_wanted_cost_including_values_pods_already_carry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = cs_pods(3, "ACK") + cs_pods(2, "ECI", start=3)
    costs_now = {0: "200", 1: "7", 3: "100"}  # right, wrong, right
    for i, value in costs_now.items():
        pods[i]["metadata"]["annotations"]["controller.kubernetes.io/pod-deletion-cost"] = value
    stranger = pod("someone-else", namespace="deploy")
    objects = write(tmp_path / "in.yaml", elastic(), cloneset(5), *pods, stranger)
    code, body = run_json(capsys, "plan", "-f", objects, "--now", NOW)
    assert code == 0
    assert {k: v["deletionCost"] for k, v in body["pods"].items()} == {
        "deploy/workload-xxx-0": "200",
        "deploy/workload-xxx-1": "200",
        "deploy/workload-xxx-2": "200",
        "deploy/workload-xxx-3": "100",
        "deploy/workload-xxx-4": "100",
    }
    # The planner itself still writes only the values that differ.
    ws = from_object(elastic())
    plan = plan_workloadspread(
        ws,
        workload=cloneset(5),
        pods=pods,
        nodes={},
        now=datetime(2026, 1, 1, 12, tzinfo=UTC),
        whitelist=Whitelist(),
    )
    assert set(plan.deletion_costs) == {
        "deploy/workload-xxx-1",
        "deploy/workload-xxx-2",
        "deploy/workload-xxx-4",
    }


def test_the_installed_command_runs_as_a_process(tmp_path: Path) -> None:
    path = write(tmp_path / "in.yaml", workloadspread(subset("a", "0.2%")))
    exe = Path(sys.executable).parent / "spreadbus"
    result = subprocess.run(
        [str(exe), "validate", "-f", path, "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert json.loads(result.stdout) == {
        "allowed": False,
        "defaulted": workloadspread(subset("a", "0.2%")),
        "errors": [
            {
                "field": "spec.subsets[0].maxReplicas",
                "type": "Invalid",
                "message": "maxReplicas is not valid for subset",
                "value": "0.2%",
            }
        ],
    }


def whitelist_configmap(data: object) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kruise-configuration", "namespace": "kruise-system"},
        "data": data,
    }


WHITELIST_KEY = "WorkloadSpread_Watch_Custom_Workload_WhiteList"
ROLLOUT_WHITELIST = json.dumps(
    {"workloads": [{"Group": "argoproj.io", "Kind": "Rollout", "replicasPath": "spec.replicas"}]}
)


def test_validate_reads_the_custom_workload_whitelist_from_the_configmap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = workloadspread(subset("a"), kind="Rollout", api_version="argoproj.io/v1alpha1")
    configmap = whitelist_configmap({WHITELIST_KEY: ROLLOUT_WHITELIST})
    listed = write(tmp_path / "in.yaml", ws, configmap)
    assert run_json(capsys, "validate", "-f", listed) == (
        0, {"allowed": True, "errors": [], "defaulted": ws})
    unlisted = write(tmp_path / "bare.yaml", ws)
    code, body = run_json(capsys, "validate", "-f", unlisted)
    assert code == 1
    assert body["errors"] == [
        {
            "field": "spec.targetRef",
            "type": "Invalid",
            "message": "TargetReference's GroupKind is not permitted.",
        }
    ]


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (
            {WHITELIST_KEY: '{"workloads": ['},
            f"data.{WHITELIST_KEY}: not valid JSON: Expecting value: line 1 column 16 (char 15)",
        ),
        ({WHITELIST_KEY: "[]"}, f"data.{WHITELIST_KEY}: expected a JSON object, got array"),
        (
            {WHITELIST_KEY: '{"Workloads": {"Group": "argoproj.io"}}'},
            f"data.{WHITELIST_KEY}: workloads: expected array, got object",
        ),
        (
            {WHITELIST_KEY: '{"workloads": ["Rollout"]}'},
            f"data.{WHITELIST_KEY}: workloads[0]: expected object, got string",
        ),
        ({WHITELIST_KEY: 7}, f"data.{WHITELIST_KEY}: expected string, got number"),
        (["not", "a", "map"], "data: expected object, got array"),
    ],
    ids=[
        "not JSON",
        "not an object",
        "workloads not a list",
        "entry not an object",
        "not a string",
        "data not a map",
    ],
)
@pytest.mark.parametrize("command", ["validate", "admit", "plan"])
def test_a_malformed_whitelist_is_unreadable_input_naming_the_field(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    data: object,
    reason: str,
) -> None:
    path = write(tmp_path / "in.yaml", elastic(), cloneset(1), whitelist_configmap(data))
    argv = [command, "-f", path, "-o", "json"]
    if command == "admit":
        argv += ["--pod", write(tmp_path / "pod.yaml", cs_pods(1, "ACK")[0])]
    if command != "validate":
        argv += ["--now", NOW]
    assert main(argv) == 2
    captured = capsys.readouterr()
    where = "ConfigMap kruise-system/kruise-configuration"
    assert json.loads(captured.out) == {"error": f"{where}: {reason}", "file": path}
    assert captured.err == f"error: {path}: {where}: {reason}\n"
