"""``spreadbus validate`` on UnitedDeployments: defaulted first, then validated; exit 0/1/2."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.cli import main
from tests.uniteddeployment.test_validation_rules import base

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "uniteddeployment").glob("*.yaml"))
JSON = dict[str, Any]


def write(path: Path, *objects: JSON) -> str:
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, JSON]:
    code = main([*argv, "-o", "json"])
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    return code, json.loads(lines[0])


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_the_documentations_examples_are_allowed(
    example: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, answer = run_json(capsys, "validate", "-f", str(example))
    assert (code, answer["allowed"], answer["errors"]) == (0, True, [])
    (written,) = [d for d in yaml.safe_load_all(example.read_text()) if d]
    defaulted = answer["defaulted"]
    assert defaulted["spec"]["revisionHistoryLimit"] == written["spec"].get(
        "revisionHistoryLimit", 10)
    assert defaulted["spec"]["updateStrategy"]["type"] == "Manual"
    assert defaulted["spec"].get("replicas") == written["spec"].get("replicas")
    assert len(EXAMPLES) == 4


def test_the_sample_is_shown_with_its_defaults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = ROOT / "examples" / "uniteddeployment" / "statefulset-three-zones.yaml"
    code, answer = run_json(capsys, "validate", "-f", str(sample))
    assert code == 0
    pod = answer["defaulted"]["spec"]["template"]["statefulSetTemplate"]["spec"]["template"][
        "spec"]
    assert pod["restartPolicy"] == "Always"
    assert pod["containers"][0]["imagePullPolicy"] == "Always"
    assert answer["defaulted"]["spec"]["updateStrategy"]["manualUpdate"]["partitions"] == {
        "subset-a": 0, "subset-b": 0, "subset-c": 0}


def test_denied_with_every_error_in_order_and_the_defaulted_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ud = base()
    ud["spec"]["topology"]["subsets"][2]["maxReplicas"] = "x"
    ud["spec"]["updateStrategy"] = {"type": "Rolling"}
    ud["status"] = {"replicas": 4}
    path = write(tmp_path / "in.yaml", {"apiVersion": "v1", "kind": "Pod",
                                        "metadata": {"name": "p"}}, ud)
    code, answer = run_json(capsys, "validate", "-f", path)
    assert code == 1
    assert answer["allowed"] is False
    assert answer["errors"] == [
        {"field": "spec.topology.subsets[2].maxReplicas", "type": "Invalid",
         "message": "subset replicas (x) only support integer value or percentage value with a "
                    "suffix '%'"},
        {"field": "spec.topology.subsets", "type": "Invalid",
         "message": "subset.Replicas and subset.MinReplicas/subset.MaxReplicas are mutually "
                    "exclusive in a UnitedDeployment"},
        {"field": "spec.updateStrategy.type", "type": "NotSupported",
         "message": 'supported values: "Manual", ""'},
    ]
    expected = copy.deepcopy(ud)
    del expected["status"]
    expected["spec"]["revisionHistoryLimit"] = 10
    assert answer["defaulted"] == expected


def test_an_update_reports_the_tolerations_change_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = base()
    new = copy.deepcopy(old)
    new["spec"]["topology"]["subsets"][0]["tolerations"] = [{"operator": "Exists"}]
    code, answer = run_json(capsys, "validate", "-f", write(tmp_path / "new.yaml", new),
                            "--old", write(tmp_path / "old.yaml", old))
    assert code == 1
    assert [e["field"] for e in answer["errors"]] == [
        "spec.topology.subsets[0].tolerations", "spec.topology.subsets[0].tolerations"]


def test_an_update_defaults_the_pod_template_only_when_it_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = yaml.safe_load((ROOT / "examples/uniteddeployment/statefulset-three-zones.yaml")
                         .read_text())
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 8
    code, answer = run_json(capsys, "validate", "-f", write(tmp_path / "new.yaml", new),
                            "--old", write(tmp_path / "old.yaml", old))
    assert code == 0
    pod = answer["defaulted"]["spec"]["template"]["statefulSetTemplate"]["spec"]["template"][
        "spec"]
    assert "restartPolicy" not in pod


def test_text_output_names_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ud = base()
    ud["spec"]["updateStrategy"]["manualUpdate"]["partitions"]["ghost"] = 1
    assert main(["validate", "-f", write(tmp_path / "in.yaml", ud)]) == 1
    out = capsys.readouterr().out
    assert "spec.updateStrategy.manualUpdate.partitions: Invalid value: subset ghost does not " \
           "exist" in out


@pytest.mark.parametrize(("content", "old", "reason"), [
    ("kind: Pod\n", None, "UnitedDeployment"),
    ("a: [unclosed", None, "not valid YAML or JSON"),
    (None, "kind: Pod\n", "holds no UnitedDeployment (--old)"),
])
def test_unreadable_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  content: str | None, old: str | None, reason: str) -> None:
    path = tmp_path / "in.yaml"
    if content is None:
        write(path, base())
    else:
        path.write_text(content)
    argv = ["validate", "-f", str(path), "-o", "json"]
    if old is not None:
        (tmp_path / "old.yaml").write_text(old)
        argv += ["--old", str(tmp_path / "old.yaml")]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert reason in json.loads(captured.out)["error"]
    assert reason in captured.err


def test_ten_thousand_subsets_are_refused_as_too_many(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ud = base()
    ud["spec"]["replicas"] = 10_000
    ud["spec"]["topology"]["subsets"] = [{"name": f"s{i}", "replicas": 1} for i in range(10_000)]
    ud["spec"]["updateStrategy"]["manualUpdate"]["partitions"] = {"s9999": 1}
    path = tmp_path / "in.json"
    path.write_text(json.dumps(ud))
    code, answer = run_json(capsys, "validate", "-f", str(path))
    assert (code, answer["allowed"]) == (1, False)
    assert answer["errors"] == [{"field": "spec.topology.subsets", "type": "TooMany",
                                 "message": "must have at most 100 items"}]
