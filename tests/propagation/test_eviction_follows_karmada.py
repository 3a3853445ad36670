"""The taint manager's evictions, from Karmada's
``pkg/controllers/cluster/taint_manager_test.go`` (TestNoExecuteTaintManager_needEvictionWith
CurrentTime, Test_getPurgeMode) and ``GracefulEvictCluster``; and the failover of the seed's
workload-rebalancer e2e (a NoExecute taint tolerated for 0 s) through ``spreadbus plan``."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.cli import main
from spreadbus.features.propagation.core.cluster import Cluster
from spreadbus.features.propagation.core.division import Target
from spreadbus.features.propagation.planning.eviction import due, evict, next_eviction

NOW = datetime(2024, 5, 22, 11, 36, 10, tzinfo=UTC)
ONE_AGO = (NOW - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
TWO_AGO = (NOW - timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
ONE_LATER = (NOW + timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _taint(key: str, effect: str = "NoExecute", added: str | None = ONE_AGO) -> dict[str, Any]:
    taint: dict[str, Any] = {"key": key, "effect": effect}
    if added is not None:
        taint["timeAdded"] = added
    return taint


def _tolerate(key: str, seconds: int | None = None) -> dict[str, Any]:
    toleration: dict[str, Any] = {"key": key, "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        toleration["tolerationSeconds"] = seconds
    return toleration


NEED_EVICTION = [
    ("no NoExecute taints", [_taint("test-key", "NoSchedule")], [], False),
    ("taint not tolerated", [_taint("test-key")], [], True),
    ("tolerated for 0 seconds", [_taint("test-key")], [_tolerate("test-key", 0)], True),
    ("tolerated for 60 seconds", [_taint("test-key")], [_tolerate("test-key", 60)], False),
    ("tolerated forever", [_taint("test-key")], [_tolerate("test-key")], False),
    ("mixed tolerations", [_taint("tolerated-key", added=ONE_LATER), _taint("not-tolerated-key")],
     [_tolerate("tolerated-key", 30)], True),
    ("toleration time expired", [_taint("test-key", added=TWO_AGO)],
     [_tolerate("test-key", 1)], True),
]


@pytest.mark.parametrize(("taints", "tolerations", "want"),
                         [pytest.param(*c[1:], id=c[0]) for c in NEED_EVICTION])
def test_need_eviction(taints: list[dict[str, Any]], tolerations: list[dict[str, Any]],
                       want: bool) -> None:
    assert due(Cluster(name="test-cluster", taints=tuple(taints)), tolerations, NOW) is want


def test_evicting_moves_the_cluster_into_a_task_once() -> None:
    tainted = Cluster(name="member1", taints=(_taint("down"),))
    targets = (Target("member1", 2), Target("member2", 1))
    first = evict(targets, (), [tainted], {"clusterAffinity": {}}, None, NOW)
    assert first.clusters == (Target("member2", 1),)
    assert first.tasks == ({"fromCluster": "member1", "purgeMode": "Gracefully",
                            "reason": "TaintUntolerated", "producer": "TaintManager",
                            "replicas": 2},)
    # Test_getPurgeMode: the policy's cluster failover chooses the purge mode.
    directly = evict(targets, (), [tainted], {}, {"cluster": {"purgeMode": "Directly"}}, NOW)
    assert directly.tasks[0]["purgeMode"] == "Directly"
    # A cluster already in a task is dropped from the targets without a second task.
    again = evict(targets, first.tasks, [tainted], {}, None, NOW)
    assert again.tasks == first.tasks
    assert again.clusters == (Target("member2", 1),)
    # Without an applied placement the taint manager judges nothing.
    assert evict(targets, (), [tainted], None, None, NOW).clusters == targets


@pytest.mark.parametrize("offset", [-5.0, -0.5, 0.0, 0.5, 29.0, 59.5])
def test_the_next_eviction_is_the_first_toleration_to_run_out_and_due_then(offset: float) -> None:
    # member1 tolerated 60 s and member2 30 s from ONE_AGO; member3 untolerated seconds
    # (forever); member4 is not among the targets.
    added = NOW - timedelta(seconds=1)
    clusters = [Cluster(name="member1", taints=(_taint("slow"),)),
                Cluster(name="member2", taints=(_taint("fast"),)),
                Cluster(name="member3", taints=(_taint("forever"),)),
                Cluster(name="member4", taints=(_taint("fast", added=TWO_AGO),))]
    applied = {"clusterTolerations": [_tolerate("slow", 60), _tolerate("fast", 30),
                                      _tolerate("forever")]}
    targets = (Target("member1", 1), Target("member2", 1), Target("member3", 1))
    now = NOW + timedelta(seconds=offset)
    at = next_eviction(targets, clusters, applied, now)
    fast, slow = added + timedelta(seconds=30), added + timedelta(seconds=60)
    assert at == (fast if now < fast else slow if now < slow else None)
    if at is not None:
        # Exactly then, and not a moment before, the taint manager evicts.
        tolerations = applied["clusterTolerations"]
        by_name = {c.name: c for c in clusters}
        first = "member2" if at == fast else "member1"
        assert due(by_name[first], tolerations, at)
        assert not due(by_name[first], tolerations, at - timedelta(microseconds=1))
    # Nothing ahead without an applied placement, or for an untolerated taint (due at once).
    assert next_eviction(targets, clusters, None, now) is None
    assert next_eviction(targets, clusters, {}, now) is None


def test_the_seed_e2e_failover_moves_every_replica_to_member2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """test/e2e/suites/base/workloadrebalancer_test.go, dynamic weight, step 2: member1 tainted
    NoExecute, tolerated for 0 s; then the taint removed and a rebalancer spreads again."""
    manifests = Path(__file__).resolve().parents[2] / "examples" / "propagation"
    objects = [d for name in ("members.yaml", "batch.yaml")
               for d in yaml.safe_load_all((manifests / name).read_text()) if d]
    objects = [o for o in objects if o["kind"] != "WorkloadRebalancer"]
    policy = next(o for o in objects if o["kind"] == "ClusterPropagationPolicy")
    policy["spec"]["placement"]["clusterTolerations"] = [_tolerate("workload-rebalancer-test",
                                                                   0)]
    member1 = next(o for o in objects if o["metadata"]["name"] == "member1")
    member1["spec"]["taints"] = [_taint("workload-rebalancer-test")]
    placement = policy["spec"]["placement"]
    stored = {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
              "metadata": {"name": "demo-deploy-deployment", "namespace": "default",
                           "annotations": {"policy.karmada.io/applied-placement":
                                           json.dumps(placement)}},
              "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment",
                                    "namespace": "default", "name": "demo-deploy"},
                       "replicas": 3, "placement": placement,
                       "clusters": [{"name": "member1", "replicas": 2},
                                    {"name": "member2", "replicas": 1}]},
              "status": {"lastScheduledTime": "2024-05-22T11:00:00Z"}}
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([*objects, stored]))
    assert main(["plan", "-f", str(path), "--now", NOW.strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "-o", "json"]) == 0
    deploy = json.loads(capsys.readouterr().out)["resourceBindings"][
        "default/demo-deploy-deployment"]
    assert deploy["clusters"] == [{"name": "member2", "replicas": 3}]
    assert deploy["gracefulEvictionTasks"] == [
        {"fromCluster": "member1", "replicas": 2, "reason": "TaintUntolerated",
         "purgeMode": "Gracefully"}]
    assert set(deploy["works"]) == {"member2"}
