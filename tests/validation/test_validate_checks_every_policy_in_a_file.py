"""``spreadbus validate`` answers for every WorkloadSpread, UnitedDeployment, PodUnavailableBudget
and WorkloadRebalancer of a file, each named, and is denied when any one is; a file of one policy
keeps its single answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
SPREAD = ROOT / "examples" / "workloadspread" / "demo-deployment.yaml"
UNITED = ROOT / "examples" / "uniteddeployment" / "statefulset-three-zones.yaml"
SEEDS = ROOT / "tests" / "kubesim" / "data" / "seeds"
REBALANCER = SEEDS / "004-01-workloadrebalancer-one-deployment.yaml"

BUDGET = """\
apiVersion: policy.kruise.io/v1alpha1
kind: PodUnavailableBudget
metadata: {name: web-server-pub, namespace: web}
spec:
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: web-server}
  maxUnavailable: 60%
"""


def every_kind(budget: str = BUDGET) -> str:
    return "---\n".join(p.read_text() for p in (SPREAD, UNITED, REBALANCER)) + "---\n" + budget


def written(tmp_path: Path, text: str, name: str = "in.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_every_policy_of_the_four_kinds_is_validated_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = written(tmp_path, every_kind())
    assert main(["validate", "-f", path]) == 0
    assert capsys.readouterr().out == (
        "WorkloadSpread/workloadspread-demo: allowed\n"
        "UnitedDeployment/sample-ud: allowed\n"
        "WorkloadRebalancer/demo: allowed\n"
        "PodUnavailableBudget/web/web-server-pub: allowed\n"
    )
    assert main(["validate", "-f", path, "-o", "json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["allowed"] is True
    assert [(r["kind"], r["namespace"], r["name"], r["allowed"], r["errors"])
            for r in body["results"]] == [
        ("WorkloadSpread", "", "workloadspread-demo", True, []),
        ("UnitedDeployment", "", "sample-ud", True, []),
        ("WorkloadRebalancer", "", "demo", True, []),
        ("PodUnavailableBudget", "web", "web-server-pub", True, []),
    ]
    assert body["results"][3]["defaulted"] == yaml.safe_load(BUDGET)


def test_a_denied_policy_after_the_first_denies_the_file_with_its_name_on_each_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = BUDGET.replace("maxUnavailable: 60%", "maxUnavailable: 60%\n  minAvailable: 1\n"
                         "  selector: {matchLabels: {a: b}}")
    path = written(tmp_path, every_kind(bad))
    assert main(["validate", "-f", path]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        "WorkloadSpread/workloadspread-demo: allowed",
        "UnitedDeployment/sample-ud: allowed",
        "WorkloadRebalancer/demo: allowed",
    ]
    assert len(lines) > 4, "one line per error"
    assert all(line.startswith("PodUnavailableBudget/web/web-server-pub: denied: spec.")
               for line in lines[3:])
    assert any("maxUnavailable and minAvailable are mutually exclusive" in line
               for line in lines[3:])
    assert main(["validate", "-f", path, "-o", "json"]) == 1
    body = json.loads(capsys.readouterr().out)
    assert body["allowed"] is False
    assert [r["allowed"] for r in body["results"]] == [True, True, True, False]
    assert len(body["results"][3]["errors"]) == len(lines) - 3


def test_one_policy_keeps_the_single_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = written(tmp_path, BUDGET)
    assert main(["validate", "-f", path]) == 0
    assert capsys.readouterr().out == "allowed\n"
    assert main(["validate", "-f", path, "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "allowed": True, "errors": [], "defaulted": yaml.safe_load(BUDGET)}


def test_an_update_finds_each_stored_object_by_kind_namespace_and_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stored: list[dict[str, Any]] = list(yaml.safe_load_all(SPREAD.read_text()))
    edited = [dict(o) for o in stored]
    spread = next(o for o in edited if o["kind"] == "WorkloadSpread")
    spread["spec"] = {**spread["spec"], "targetRef": {**spread["spec"]["targetRef"],
                                                     "name": "elsewhere"}}
    path = written(tmp_path, yaml.safe_dump_all(edited) + "---\n" + BUDGET)
    old = written(tmp_path, yaml.safe_dump_all(stored), "old.yaml")
    assert main(["validate", "-f", path, "--old", old]) == 1
    assert capsys.readouterr().out == (
        "WorkloadSpread/workloadspread-demo: denied: spec.targetRef: Invalid value: "
        "change TargetReference is not permitted for WorkloadSpread\n"
        "PodUnavailableBudget/web/web-server-pub: allowed\n"  # not in --old: a CREATE
    )
    unrelated = written(tmp_path, BUDGET.replace("web-server-pub", "api-pub"), "other.yaml")
    assert main(["validate", "-f", path, "--old", unrelated]) == 2
    assert "holds no WorkloadSpread/workloadspread-demo or PodUnavailableBudget/web/" \
           "web-server-pub (--old)" in capsys.readouterr().err


def test_the_help_names_every_kind(capsys: pytest.CaptureFixture[str]) -> None:
    parser, _ = build_parser(["validate"])
    parser.print_help()
    listed = " ".join(capsys.readouterr().out.split())
    with pytest.raises(SystemExit):
        main(["validate", "--help"])
    own = " ".join(capsys.readouterr().out.split())
    for kind in ("WorkloadSpread", "UnitedDeployment", "PodUnavailableBudget",
                 "WorkloadRebalancer"):
        assert kind in listed
        assert kind in own
