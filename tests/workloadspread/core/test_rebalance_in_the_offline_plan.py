"""``spreadbus plan`` shows what a pending rebalance request starts now: the moves among the
evictions, within the input's disruption budgets, and ``rebalanceHandled`` once nothing moves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.cli import main
from spreadbus.features.workloadspread.core.rebalance import REQUEST_ANNOTATION
from tests.workloadspread.core.builders import (
    JSON,
    deployment,
    pod,
    replicaset,
    subset,
    workloadspread,
)

WEB = deployment(replicas=4)
RS = replicaset(WEB)


def objects(*, fixed_max: int, fixed: int, request: bool = True) -> list[JSON]:
    ws = workloadspread(subset("fixed", fixed_max), subset("elastic"), status={
        "observedGeneration": 0, "subsetStatuses": [
            {"name": "fixed", "replicas": fixed, "missingReplicas": fixed_max - fixed},
            {"name": "elastic", "replicas": 4 - fixed, "missingReplicas": -1}]})
    if request:
        ws["metadata"]["annotations"] = {REQUEST_ANNOTATION: "r1"}
    labels = {"app": "web", "pod-template-hash": "abc"}
    pods = [pod(f"p{i}", owner=RS, ws="ws", subset_name="fixed" if i < fixed else "elastic",
                labels=labels, created=f"2026-01-01T00:00:0{i}Z") for i in range(4)]
    return [WEB, RS, ws, *pods]


def plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], docs: list[JSON]) -> Any:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    assert main(["plan", "-f", str(path), "--now", "2026-01-01T00:10:00Z", "-o", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_pending_request_evicts_one_pod_of_the_elastic_subset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    answer = plan(tmp_path, capsys, objects(fixed_max=3, fixed=1))
    assert answer["evictions"] == [{
        "pod": "default/p3",
        "reason": "rebalance: from subset elastic to subset fixed, which has room"}]
    assert "rebalanceHandled" not in answer["workloadSpreads"]["default/ws"]


def test_without_a_request_nothing_moves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert plan(tmp_path, capsys, objects(fixed_max=3, fixed=1, request=False))["evictions"] == []


def test_a_disruption_budget_in_the_input_holds_the_move_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": "pdb", "namespace": "default"},
           "spec": {"selector": {"matchLabels": {"app": "web"}}},
           "status": {"disruptionsAllowed": 0}}
    answer = plan(tmp_path, capsys, [*objects(fixed_max=3, fixed=1), pdb])
    assert answer["evictions"] == []
    assert "rebalanceHandled" not in answer["workloadSpreads"]["default/ws"]


def test_a_full_fixed_subset_handles_the_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    answer = plan(tmp_path, capsys, objects(fixed_max=2, fixed=2))
    assert answer["evictions"] == []
    assert answer["workloadSpreads"]["default/ws"]["rebalanceHandled"] == "r1"
