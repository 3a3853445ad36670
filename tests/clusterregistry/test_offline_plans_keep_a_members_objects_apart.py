"""``spreadbus plan`` over an input holding a member's objects (annotated
``multicluster.spreadbus.io/cluster: <name>``): the features that plan one cluster read only the
host's objects, so a member's pods never count among the host's. The same pods without the
annotation do count, which shows the test can fail."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.cli import main
from spreadbus.clusterregistry.registry import CLUSTER_ANNOTATION
from tests.engine.test_two_clusters_share_one_projection import (
    budget,
    deployment,
    pod,
    replicaset,
    spread,
)

NOW = "2027-01-15T09:00:00Z"
KEYS = ("workloadSpreads", "podUnavailableBudgets")


def plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], objects: list[dict[str, Any]],
         name: str) -> dict[str, Any]:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(objects))
    assert main(["plan", "-f", str(path), "--now", NOW, "-o", "json"]) == 0
    answer: dict[str, Any] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    return answer


def in_member(obj: dict[str, Any]) -> dict[str, Any]:
    found = copy.deepcopy(obj)
    found["metadata"]["name"] = "m-" + found["metadata"]["name"]
    found["metadata"].setdefault("annotations", {})[CLUSTER_ANNOTATION] = "member1"
    return found


def test_a_members_pods_are_not_counted_by_the_hosts_spreads_and_budgets(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    host = [deployment(), replicaset("web-h1"), spread(), budget(),
            *(pod(f"web-{i}", "web-h1") for i in range(2))]
    member = [in_member(pod(f"web-{i}", "web-h1")) for i in range(3)]
    alone = plan(tmp_path, capsys, host, "host.yaml")
    assert set(KEYS) <= alone.keys()
    beside = plan(tmp_path, capsys, [*host, *member], "both.yaml")
    assert {k: beside[k] for k in KEYS} == {k: alone[k] for k in KEYS}
    for obj in member:
        del obj["metadata"]["annotations"][CLUSTER_ANNOTATION]
    mixed = plan(tmp_path, capsys, [*host, *member], "mixed.yaml")
    assert {k: mixed[k] for k in KEYS} != {k: alone[k] for k in KEYS}
