"""``spreadbus plan -o json`` on UnitedDeployments: the ``unitedDeployments`` key and pod labels."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.cli import main
from spreadbus.cli.plan import merge_part
from tests.uniteddeployment.world import SUBSET, materialize, owned_pod, run, united, zone
from tests.workloadspread.core.builders import subset as ws_subset
from tests.workloadspread.core.builders import workloadspread

JSON = dict[str, Any]
NOW = "2026-01-01T12:00:00Z"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "uniteddeployment"


def plan(capsys: pytest.CaptureFixture[str], path: Path | str) -> tuple[str, JSON]:
    code = main(["plan", "-f", str(path), "--now", NOW, "-o", "json"])
    out = capsys.readouterr().out
    assert code == 0
    return out, json.loads(out)


def write(tmp_path: Path, *objects: JSON) -> Path:
    path = tmp_path / "objects.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    return path


def affinity_values(workload: JSON) -> list[str]:
    pod_spec = workload["spec"]["template"]["spec"]
    terms = pod_spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    return [
        v for t in terms["nodeSelectorTerms"] for e in t["matchExpressions"] for v in e["values"]
    ]


def test_the_seed_sample_plans_one_three_and_two_statefulsets(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, body = plan(capsys, EXAMPLES / "statefulset-three-zones.yaml")
    entry = body["unitedDeployments"]["default/sample-ud"]
    assert set(entry) == {"subsets", "deletes", "status", "error"}
    assert entry["error"] is None
    assert entry["deletes"] == []
    subsets = entry["subsets"]
    assert {k: (v["replicas"], v["partition"], v["action"]) for k, v in subsets.items()} == {
        "subset-a": (1, 0, "create"),
        "subset-b": (3, 0, "create"),
        "subset-c": (2, 0, "create"),
    }
    for name, zone_value in (
        ("subset-a", "zone-a"),
        ("subset-b", "zone-b"),
        ("subset-c", "zone-c"),
    ):
        workload = subsets[name]["workload"]
        assert workload["kind"] == "StatefulSet"
        assert workload["metadata"]["generateName"] == f"sample-ud-{name}-"
        assert affinity_values(workload) == [zone_value]
    revision = entry["status"]["updateStatus"]["updatedRevision"]
    assert (
        subsets["subset-a"]["workload"]["metadata"]["labels"][
            "apps.kruise.io/controller-revision-hash"
        ]
        == revision
    )
    assert entry["status"]["subsetReplicas"] == {"subset-a": 1, "subset-b": 3, "subset-c": 2}


def test_the_max_replicas_example_fills_normal_nodes_first(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, body = plan(capsys, EXAMPLES / "cloneset-max-replicas.yaml")
    subsets = body["unitedDeployments"]["default/sample-ud"]["subsets"]
    assert {k: v["replicas"] for k, v in subsets.items()} == {"normal-nodes": 4, "elastic-nodes": 1}
    assert subsets["normal-nodes"]["workload"]["spec"]["updateStrategy"] == {"partition": 0}


def test_the_adaptive_example_wakes_up_after_the_critical_seconds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, body = plan(capsys, EXAMPLES / "adaptive-elastic-pool.yaml")
    entry = body["unitedDeployments"]["default/ud-demo"]
    assert entry["requeueAt"] == "2026-01-01T12:00:30Z"
    assert {k: v["replicas"] for k, v in entry["subsets"].items()} == {"subset-a": 3, "subset-b": 2}
    assert "updateStrategy" not in entry["subsets"]["subset-a"]["workload"]["spec"]


def test_the_patch_example_customizes_each_subsets_container(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, body = plan(capsys, EXAMPLES / "subset-patch.yaml")
    subsets = body["unitedDeployments"]["default/sample-ud"]["subsets"]
    for name in ("subset-a", "subset-b"):
        workload = subsets[name]["workload"]
        (container,) = workload["spec"]["template"]["spec"]["containers"]
        assert container["env"] == [{"name": "subset", "value": name}]
        assert container["resources"] == {"limits": {"cpu": "2", "memory": "800Mi"}}
        assert container["image"] == "nginx:alpine"
        assert (
            json.loads(workload["metadata"]["annotations"]["apps.kruise.io/subset-patch"])
            == (
                yaml.safe_load((EXAMPLES / "subset-patch.yaml").read_text())["spec"]["topology"][
                    "subsets"
                ][0 if name == "subset-a" else 1]["patch"]
            )
        )


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_the_same_file_gives_the_same_answer_byte_for_byte(
    capsys: pytest.CaptureFixture[str], example: str
) -> None:
    first, _ = plan(capsys, EXAMPLES / example)
    second, _ = plan(capsys, EXAMPLES / example)
    assert first == second


def test_an_allocation_error_answers_no_subsets_and_the_input_status(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status = {"replicas": 2, "currentRevision": "sample-ud-abc"}
    ud = united([zone("a", replicas=1), zone("b", replicas=1)], replicas=5, status=status)
    _, body = plan(capsys, write(tmp_path, ud))
    entry = body["unitedDeployments"]["default/sample-ud"]
    assert entry["error"] == (
        "specified subsets' replica (2) is less than UnitedDeployment replica (5)"
    )
    assert entry["subsets"] == {}
    assert entry["status"] == status
    assert "requeueAt" not in entry


def test_observed_workloads_are_updated_or_deleted_by_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    ud = united([zone("a"), zone("b")], replicas=4)
    first = run(ud)
    a, b = (materialize(d.workload) for d in first.subsets.values())
    ud["spec"]["replicas"] = 3
    ud["spec"]["topology"]["subsets"] = [zone("a")]
    ud["status"] = first.status
    _, body = plan(capsys, write(tmp_path, ud, a, b, *first.revision_creates))
    entry = body["unitedDeployments"]["default/sample-ud"]
    assert entry["deletes"] == [f"default/{b['metadata']['name']}"]
    assert entry["subsets"]["a"]["action"] == "update"
    assert entry["subsets"]["a"]["workload"]["metadata"]["name"] == a["metadata"]["name"]
    assert entry["subsets"]["a"]["replicas"] == 3


def test_pod_entries_of_a_workloadspread_and_a_uniteddeployment_merge(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    ud = united(
        [zone("a")],
        replicas=2,
        key="cloneSetTemplate",
        strategy={"type": "Adaptive", "adaptive": {"reserveUnschedulablePods": True}},
    )
    first = run(ud)
    clone = materialize(first.subsets["a"].workload)
    revision = first.status["updateStatus"]["updatedRevision"]
    pods = [owned_pod(clone, i, revision=revision) for i in range(2)]
    for pod in pods:
        pod["metadata"]["annotations"] = {
            "apps.kruise.io/matched-workloadspread": '{"name":"ws","subset":"zone-a"}'
        }
    ud["status"] = first.status
    ws = workloadspread(
        ws_subset("zone-a", 1),
        ws_subset("zone-b"),
        kind="CloneSet",
        api_version="apps.kruise.io/v1alpha1",
        target=clone["metadata"]["name"],
    )
    _, body = plan(capsys, write(tmp_path, ud, clone, *pods, ws, *first.revision_creates))
    assert "default/ws" in body["workloadSpreads"]
    for pod in pods:
        entry = body["pods"][f"default/{pod['metadata']['name']}"]
        assert entry["labels"] == {"apps.kruise.io/united-deployment-reserved-pod": "false"}
        assert "deletionCost" in entry
    assert clone["metadata"]["labels"][SUBSET] == "a"


def test_merging_keeps_both_features_fields_and_replaces_other_keys() -> None:
    answer: JSON = {
        "pods": {"ns/p": {"deletionCost": "100"}, "ns/q": {"deletionCost": "0"}},
        "evictions": [],
    }
    part = {"pods": {"ns/p": {"labels": {"x": "y"}}, "ns/r": {"labels": {}}}, "other": [1]}
    before = copy.deepcopy(part)
    merge_part(answer, part)
    assert answer == {
        "pods": {
            "ns/p": {"deletionCost": "100", "labels": {"x": "y"}},
            "ns/q": {"deletionCost": "0"},
            "ns/r": {"labels": {}},
        },
        "evictions": [],
        "other": [1],
    }
    assert part == before


def test_an_input_without_uniteddeployments_adds_no_key(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _, body = plan(capsys, write(tmp_path, workloadspread(ws_subset("zone-a"))))
    assert "unitedDeployments" not in body
    assert "workloadSpreads" in body
