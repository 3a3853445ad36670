"""When graceful eviction tasks end, from Karmada's
``pkg/controllers/gracefuleviction/evictiontask_test.go`` (Test_assessSingleTask,
Test_assessEvictionTasks; a timeout of three minutes), and the same rules through
``spreadbus plan``."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.cli import main
from spreadbus.features.propagation.core.cluster import Cluster
from spreadbus.features.propagation.planning.eviction import due
from spreadbus.features.propagation.planning.graceful_eviction import assess, next_end

NOW = datetime(2024, 5, 22, 11, 36, 10, tzinfo=UTC)
TIMEOUT = timedelta(minutes=3)
MANIFESTS = Path(__file__).resolve().parents[2] / "examples" / "propagation"


def ago(minutes: int) -> str:
    return (NOW - timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def task(cluster: str, minutes: int | None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"fromCluster": cluster, **extra}
    if minutes is not None:
        out["creationTimestamp"] = ago(minutes)
    return out


# (name, tasks, targets, health, scheduled, kept clusters, removed clusters)
CASES: list[tuple[str, list[dict[str, Any]], list[str], dict[str, str], bool, list[str],
                  list[str]]] = [
    # Test_assessSingleTask
    ("within the timeout, not scheduled: kept", [task("member1", 1)], [], {}, False,
     ["member1"], []),
    ("past the timeout: removed", [task("member1", 4)], [], {}, False, [], ["member1"]),
    ("within the timeout, scheduled and healthy: removed", [task("member1", 1)], ["memberA"],
     {"memberA": "Healthy"}, True, [], ["member1"]),
    ("within the timeout, scheduled but unhealthy: kept", [task("member1", 1)], ["memberA"],
     {"memberA": "Unhealthy"}, True, ["member1"], []),
    ("within the timeout, scheduled but health unknown: kept", [task("member1", 1)],
     ["memberA"], {"memberA": "Unknown"}, True, ["member1"], []),
    ("suppressDeletion true: kept", [task("member1", 1, suppressDeletion=True)], [], {},
     False, ["member1"], []),
    ("suppressDeletion false: removed", [task("member1", 1, suppressDeletion=False)], [], {},
     False, [], ["member1"]),
    # Test_assessEvictionTasks
    ("tasks without creation timestamp are stamped and kept",
     [task("member1", None), task("member2", None)], [], {}, False, ["member1", "member2"], []),
    ("within the timeout, not scheduled: all kept", [task("member1", 1), task("member2", 2)],
     ["memberA"], {}, False, ["member1", "member2"], []),
    ("the task past the timeout goes, the other stays",
     [task("member1", 4), task("member2", 1)], ["memberA"], {}, True, ["member2"], ["member1"]),
    ("mixed tasks", [task("member1", None), task("member2", 2), task("member3", 4)],
     ["memberA", "memberB"], {}, False, ["member1", "member2"], ["member3"]),
    ("a target without status: kept", [task("member1", 1), task("member2", 2)],
     ["memberA", "memberB"], {"memberA": "Healthy"}, True, ["member1", "member2"], []),
    ("every target healthy: all removed", [task("member1", 1), task("member2", 2)],
     ["memberA", "memberB"], {"memberA": "Healthy", "memberB": "Healthy"}, True, [],
     ["member1", "member2"]),
    ("one target unhealthy: kept", [task("member1", 1), task("member2", 2)],
     ["memberA", "memberB"], {"memberA": "Healthy", "memberB": "Unhealthy"}, True,
     ["member1", "member2"], []),
    ("one target unknown: kept", [task("member1", 1), task("member2", 2)],
     ["memberA", "memberB"], {"memberA": "Healthy", "memberB": "Unknown"}, True,
     ["member1", "member2"], []),
    ("a task's own grace period does not leak to the next",
     [task("member1", 2, gracePeriodSeconds=60), task("member2", 2)], [], {}, False,
     ["member2"], ["member1"]),
]


@pytest.mark.parametrize(("tasks", "targets", "health", "scheduled", "kept", "removed"),
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_assess(tasks: list[dict[str, Any]], targets: list[str], health: dict[str, str],
                scheduled: bool, kept: list[str], removed: list[str]) -> None:
    result = assess(tasks, NOW, targets=targets, health=health, scheduled=scheduled,
                    timeout=TIMEOUT)
    assert [t["fromCluster"] for t in result.kept] == kept
    assert list(result.removed) == removed
    for before in tasks:
        after = next((t for t in result.kept if t["fromCluster"] == before["fromCluster"]), None)
        if after is not None:
            assert after["creationTimestamp"] == before.get("creationTimestamp", ago(0))


def test_the_timeout_is_strict_and_ten_minutes_by_default() -> None:
    at_the_edge = [task("member1", 10)]
    assert assess(at_the_edge, NOW, targets=[], health={}, scheduled=False).removed == ()
    later = NOW + timedelta(seconds=1)
    assert assess(at_the_edge, later, targets=[], health={}, scheduled=False).removed == (
        "member1",)


def _plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], docs: list[dict[str, Any]],
          now: datetime) -> dict[str, Any]:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    assert main(["plan", "-f", str(path), "--now", now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "-o", "json"]) == 0
    answer: dict[str, Any] = json.loads(capsys.readouterr().out)
    return answer


def _scheduled_binding(task_minutes: int, health: str) -> dict[str, Any]:
    """The seed's demo-deploy, all three replicas on member2 after member1 was evicted."""
    return {
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": "demo-deploy-deployment", "namespace": "default", "generation": 3},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment",
                         "namespace": "default", "name": "demo-deploy"},
            "replicas": 3,
            "clusters": [{"name": "member2", "replicas": 3}],
            "gracefulEvictionTasks": [{
                "fromCluster": "member1", "replicas": 2, "reason": "TaintUntolerated",
                "producer": "TaintManager", "purgeMode": "Gracefully",
                "creationTimestamp": ago(task_minutes)}],
        },
        "status": {"schedulerObservedGeneration": 3,
                   "aggregatedStatus": [{"clusterName": "member2", "health": health}]},
    }


@pytest.mark.parametrize(("minutes", "health", "left"), [
    pytest.param(1, "Unhealthy", ["member1"], id="replacement unhealthy, within the period"),
    pytest.param(1, "Healthy", [], id="replacement healthy"),
    pytest.param(11, "Unhealthy", [], id="past the ten-minute timeout"),
])
def test_plan_ends_tasks_as_the_controller_does(
    minutes: int, health: str, left: list[str], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    docs = [d for d in yaml.safe_load_all((MANIFESTS / "members.yaml").read_text()) if d]
    docs.append(_scheduled_binding(minutes, health))
    answer = _plan(tmp_path, capsys, docs, NOW)
    entry = answer["resourceBindings"]["default/demo-deploy-deployment"]
    assert entry["clusters"] == [{"name": "member2", "replicas": 3}]
    assert [t["fromCluster"] for t in entry["gracefulEvictionTasks"]] == left


@pytest.mark.parametrize(("stored", "removed"), [
    pytest.param({"gracePeriodSeconds": 10**20}, (), id="a grace period past the calendar"),
    pytest.param({"gracePeriodSeconds": -(10**20)}, ("member1",),
                 id="a grace period before the calendar"),
    pytest.param({"creationTimestamp": "9999-12-31T23:59:59Z"}, (), id="created at the end"),
])
def test_out_of_range_deadlines_answer_instead_of_failing(stored: dict[str, Any],
                                                          removed: tuple[str, ...]) -> None:
    tasks = [{**task("member1", 1), **stored}]
    assert assess(tasks, NOW, targets=[], health={}, scheduled=False).removed == removed


def test_an_out_of_range_toleration_never_evicts() -> None:
    tainted = Cluster(name="member1", taints=(
        {"key": "down", "effect": "NoExecute", "timeAdded": ago(1)},))
    forever = [{"key": "down", "operator": "Exists", "effect": "NoExecute",
                "tolerationSeconds": 10**20}]
    assert due(tainted, forever, NOW) is False


def test_the_next_end_is_the_first_grace_period_to_run_out() -> None:
    """When the planner must look again on its own: the earliest ``creationTimestamp +
    gracePeriodSeconds`` (ten minutes without one); a task suppressing deletion, or not yet
    stamped, runs out on no clock."""
    start = datetime(2026, 5, 22, 11, 0, 0, tzinfo=UTC)
    tasks = [{"fromCluster": "a", "creationTimestamp": "2026-05-22T11:00:00Z",
              "gracePeriodSeconds": 120},
             {"fromCluster": "b", "creationTimestamp": "2026-05-22T10:55:00Z"},
             {"fromCluster": "c", "creationTimestamp": "2026-05-22T10:00:00Z",
              "suppressDeletion": True},
             {"fromCluster": "d"}]
    assert next_end(tasks) == start + timedelta(minutes=2)
    assert next_end(tasks[1:]) == start + timedelta(minutes=5)
    assert next_end(tasks[2:]) is None
