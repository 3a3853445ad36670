"""``spreadbus validate|plan|admit`` for PodUnavailableBudgets, with the seed's YAML."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.cli import main
from tests.podunavailablebudget.builders import changed, pod, replicaset, workload

JSON = dict[str, Any]
NOW = "2026-01-01T12:00:00Z"

SEED_PUB = """\
apiVersion: policy.kruise.io/v1alpha1
kind: PodUnavailableBudget
metadata:
  name: web-server-pub
  namespace: web
spec:
  targetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: web-server
  # selector and TargetReference are mutually exclusive, targetRef is priority to take effect.
  # maximum number of Pods unavailable for the current cloneset, the example is
  # cloneset.replicas(5) * 60% = 3
  maxUnavailable: 60%
"""

SEED_STATUS = """\
status:
  unavailableAllowed: {allowed}
  currentAvailable: 5
  desiredAvailable: 2
  totalReplicas: 5
"""


def seed_pub(allowed: int | None = None, generation: int = 3) -> JSON:
    text = SEED_PUB + ("" if allowed is None else SEED_STATUS.format(allowed=allowed))
    obj: JSON = yaml.safe_load(text)
    obj["metadata"]["generation"] = generation
    return obj


def cluster() -> list[JSON]:
    deployment = workload(replicas=5)
    rs = replicaset(deployment)
    return [deployment, rs, *(pod(f"web-server-abc-{i}", owner=rs) for i in range(5))]


def write(path: Path, *objects: JSON) -> str:
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, JSON, str]:
    code = main([*argv, "-o", "json"])
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    assert len(lines) == 1, captured.out
    return code, json.loads(lines[0]), captured.err


# --- validate ------------------------------------------------------------------------------


def test_validate_allows_the_seed_budget_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "pub.yaml"
    path.write_text(SEED_PUB)
    code, body, _ = run_json(capsys, "validate", "-f", str(path))
    assert code == 0
    assert body == {"allowed": True, "errors": [], "defaulted": yaml.safe_load(SEED_PUB)}


def test_validate_reports_kruises_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = seed_pub()
    bad["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    bad["spec"]["minAvailable"] = 1
    code, body, _ = run_json(capsys, "validate", "-f", write(tmp_path / "bad.yaml", bad))
    assert code == 1
    assert body["allowed"] is False
    assert body["errors"] == [
        {"field": "spec.selector, targetRef", "type": "Required",
         "message": "selector and targetRef are mutually exclusive"},
        {"field": "spec.maxUnavailable, minAvailable", "type": "Required",
         "message": "maxUnavailable and minAvailable are mutually exclusive"},
    ]


def test_validate_an_update_skips_the_stored_version_in_the_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = seed_pub()
    new["spec"]["maxUnavailable"] = 1
    stored = seed_pub()
    objects = write(tmp_path / "in.yaml", new, stored)
    old = write(tmp_path / "old.yaml", stored)
    code, body, _ = run_json(capsys, "validate", "-f", objects, "--old", old)
    assert (code, body["errors"]) == (0, [])
    moved = seed_pub()
    moved["spec"]["targetRef"]["name"] = "api"
    other = seed_pub()
    other["metadata"]["name"] = "api-pub"
    other["spec"]["targetRef"]["name"] = "api"
    objects = write(tmp_path / "moved.yaml", moved, other)
    code, body, _ = run_json(capsys, "validate", "-f", objects, "--old", old)
    assert code == 1
    first, second = body["results"]
    assert (first["name"], first["allowed"]) == ("web-server-pub", False)
    assert [(e["field"], e["type"]) for e in first["errors"]] == [
        ("spec.selector, targetRef", "Required"), ("spec.targetReference", "Invalid")]
    # The budget --old does not hold is a CREATE: only the conflict, no immutable field.
    assert (second["name"], second["allowed"]) == ("api-pub", False)
    assert [(e["field"], e["type"]) for e in second["errors"]] == [
        ("spec.targetReference", "Invalid")]


def test_validate_text_names_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = seed_pub()
    bad["spec"]["maxUnavailable"] = "160%"
    assert main(["validate", "-f", write(tmp_path / "bad.yaml", bad)]) == 1
    assert "spec.maxUnavailable: Invalid value: must not be greater than 100%" in (
        capsys.readouterr().out)


# --- plan ----------------------------------------------------------------------------------


def test_plan_prints_every_budget_with_its_whole_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded = seed_pub(allowed=0)
    recorded["status"]["disruptedPods"] = {"web-server-abc-0": "2026-01-01T11:59:50Z"}
    idle = seed_pub(generation=1)
    idle["metadata"]["name"] = "idle"
    idle["spec"]["targetRef"]["name"] = "absent"
    objects = write(tmp_path / "in.yaml", recorded, idle, *cluster())
    code, body, _ = run_json(capsys, "plan", "-f", objects, "--now", NOW)
    assert code == 0
    assert body["podUnavailableBudgets"] == {
        "web/web-server-pub": {"status": {
            "observedGeneration": 3,
            "disruptedPods": {"web-server-abc-0": "2026-01-01T11:59:50Z"},
            "unavailableAllowed": 2,
            "currentAvailable": 4,
            "desiredAvailable": 2,
            "totalReplicas": 5,
        }},
        "web/idle": {"status": {
            "observedGeneration": 1,
            "unavailableAllowed": 0,
            "currentAvailable": 0,
            "desiredAvailable": 0,
            "totalReplicas": 0,
        }},
    }
    assert body["workloadSpreads"] == {}


def test_plan_text_shows_counters_and_recheck(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded = seed_pub(allowed=0)
    recorded["status"]["disruptedPods"] = {"web-server-abc-0": "2026-01-01T11:59:50Z"}
    assert main(["plan", "-f", write(tmp_path / "in.yaml", recorded, *cluster()),
                 "--now", NOW]) == 0
    out = capsys.readouterr().out
    assert "PodUnavailableBudget web/web-server-pub: allowed=2 current=4 desired=2 total=5" in out
    assert "recheck at 2026-01-01T12:00:10Z" in out


# --- admit ---------------------------------------------------------------------------------


def admit(tmp_path: Path, capsys: pytest.CaptureFixture[str], objects: list[JSON], the_pod: JSON,
          *extra: str) -> tuple[int, JSON, str]:
    return run_json(capsys, "admit", "-f", write(tmp_path / "in.yaml", *objects),
                    "--pod", write(tmp_path / "pod.yaml", the_pod), "--now", NOW, *extra)


def test_admit_create_stamps_the_related_pub(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = [seed_pub(allowed=3), *cluster()]
    new_pod = pod("web-server-abc-new", owner=objects[2], related=None)
    code, body, _ = admit(tmp_path, capsys, objects, new_pod)
    assert code == 0
    assert body["allowed"] is True
    assert body["patch"] == [{"op": "add", "path": "/metadata/annotations",
                              "value": {"kruise.io/related-pub": "web-server-pub"}}]
    assert body["pod"]["metadata"]["annotations"] == {"kruise.io/related-pub": "web-server-pub"}
    assert "podUnavailableBudgets" not in body


def test_admit_create_of_an_unprotected_pod_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stray = pod("stray", related=None)
    code, body, _ = admit(tmp_path, capsys, [seed_pub(allowed=3)], stray)
    assert (code, body["patch"], body["pod"]) == (0, [], stray)


@pytest.mark.parametrize("operation", ["DELETE", "EVICT"])
def test_admit_removal_spends_the_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], operation: str
) -> None:
    objects = [seed_pub(allowed=3), *cluster()]
    code, body, _ = admit(tmp_path, capsys, objects, objects[3], "--operation", operation)
    assert code == 0
    assert body["allowed"] is True
    assert "code" not in body
    assert body["podUnavailableBudgets"] == {"web/web-server-pub": {"status": {
        "observedGeneration": 0,
        "disruptedPods": {"web-server-abc-0": NOW},
        "unavailableAllowed": 2,
        "currentAvailable": 5,
        "desiredAvailable": 2,
        "totalReplicas": 5,
    }}}


@pytest.mark.parametrize(("operation", "code", "reason"),
                         [("DELETE", 403, "Forbidden"), ("EVICT", 429, "TooManyRequests")])
def test_admit_denies_when_the_budget_is_spent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], operation: str, code: int, reason: str
) -> None:
    objects = [seed_pub(allowed=0), *cluster()]
    exit_code, body, err = admit(tmp_path, capsys, objects, objects[3], "--operation", operation)
    message = ('podunavailablebudget.policy.kruise.io "web-server-pub" is forbidden: '
               "pub unavailable allowed is negative")
    assert exit_code == 1
    assert (body["allowed"], body["code"], body["reason"], body["message"]) == (
        False, code, reason, message)
    assert "podUnavailableBudgets" not in body
    assert err == message + "\n"


def test_admit_decides_from_the_written_status_not_the_pods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    the_pod = cluster()[2]
    code, body, _ = admit(tmp_path, capsys, [seed_pub(allowed=1)], the_pod, "--operation",
                          "DELETE")
    assert code == 0
    assert body["podUnavailableBudgets"]["web/web-server-pub"]["status"]["unavailableAllowed"] == 0


def test_admit_update_needs_the_old_pod(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objects = write(tmp_path / "in.yaml", seed_pub(allowed=1))
    pod_file = write(tmp_path / "pod.yaml", cluster()[2])
    assert main(["admit", "-f", objects, "--pod", pod_file, "--operation", "UPDATE",
                 "--now", NOW]) == 2
    assert "--old-pod" in capsys.readouterr().err


def test_admit_update_of_the_image_records_an_unavailable_pod(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = cluster()[2]
    new = changed(old, spec__containers__0__image="nginx:1.26")
    old_file = write(tmp_path / "old.yaml", old)
    code, body, _ = admit(tmp_path, capsys, [seed_pub(allowed=1)], new, "--operation", "UPDATE",
                          "--old-pod", old_file)
    assert code == 0
    status = body["podUnavailableBudgets"]["web/web-server-pub"]["status"]
    assert status["unavailablePods"] == {"web-server-abc-0": NOW}
    assert "disruptedPods" not in status
    code, body, _ = admit(tmp_path, capsys, [seed_pub(allowed=0)], new, "--operation", "UPDATE",
                          "--old-pod", old_file)
    assert (code, body["code"]) == (1, 403)


def test_admit_update_of_labels_only_is_allowed_without_spending(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = cluster()[2]
    new = changed(old, metadata__labels={"app": "web", "release": "b"})
    code, body, _ = admit(tmp_path, capsys, [seed_pub(allowed=0)], new, "--operation", "UPDATE",
                          "--old-pod", write(tmp_path / "old.yaml", old))
    assert code == 0
    assert "podUnavailableBudgets" not in body


def test_admit_text_output_names_the_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = [seed_pub(allowed=0), *cluster()]
    code = main(["admit", "-f", write(tmp_path / "in.yaml", *objects),
                 "--pod", write(tmp_path / "pod.yaml", objects[3]), "--operation", "EVICT",
                 "--now", NOW])
    out = capsys.readouterr().out
    assert code == 1
    assert out.startswith('denied: podunavailablebudget.policy.kruise.io "web-server-pub"')
    assert ("podUnavailableBudget: web/web-server-pub (exhausted: status.unavailableAllowed is 0 "
            "(currentAvailable 5, desiredAvailable 2): no more of its pods may be disrupted "
            "now)") in out


def test_plan_for_the_seeds_cloneset_variant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pub = seed_pub()
    pub["spec"]["targetRef"] = {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                                "name": "web-server"}
    cs = workload("CloneSet", "web-server", replicas=5, api_version="apps.kruise.io/v1alpha1")
    pods = [pod(f"web-server-{i}", owner=cs, ready=i != 0) for i in range(5)]
    code, body, _ = run_json(capsys, "plan", "-f", write(tmp_path / "in.yaml", pub, cs, *pods),
                             "--now", NOW)
    assert code == 0
    # cloneset.replicas(5) * 60% = 3 unavailable, so 2 must stay available; 4 are.
    assert body["podUnavailableBudgets"]["web/web-server-pub"]["status"] == {
        "observedGeneration": 3, "unavailableAllowed": 2, "currentAvailable": 4,
        "desiredAvailable": 2, "totalReplicas": 5}
