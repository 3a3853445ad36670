"""Three zones on the local stack: the seed's multi-domain example through a rolling update, and
Adaptive rescheduling out of a full zone and back after the window."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.workloadspread_e2e.stack import (
    create_spread,
    deployment,
    live_pods,
    local_stack,
    node_zones,
    split,
    spread,
    spread_status,
    subset_field,
    wait_for,
    zone_subset,
)

pytestmark = pytest.mark.e2e
RECOVER_SECONDS = 6.0
CRITICAL_SECONDS = 8
"""Longer than SLACK, so a replacement steered back into the full zone (moved only one more
critical period later) cannot pass for a timely one."""
SLACK = timedelta(seconds=5)
"""How late the stack may act after a deadline, as read from object timestamps. Timestamps have
second precision (up to 1 s lost on each side of a difference); the rest covers the planner's
wake-up, one status write, the actuator's eviction and the ReplicaSet controller's replacement
on a loaded 2-core CI machine running other tests. Unloaded, the subset turns unschedulable
within the second of its deadline (0 s read in every run tried), so a deadline acted on more than
a few seconds late fails this."""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[client.ApiClient, Path]]:
    data_dir: Path = tmp_path_factory.mktemp("zones-stack")
    env = {"SPREADBUS_ADAPTIVE_RECOVER_SECONDS": str(RECOVER_SECONDS)}
    with local_stack(data_dir, "three-zones", env) as api:
        yield api, data_dir


@pytest.fixture
def api(stack: tuple[client.ApiClient, Path]) -> client.ApiClient:
    return stack[0]


def test_the_multi_domain_example_keeps_100_per_zone_through_a_rolling_update(
    api: client.ApiClient,
) -> None:
    # The seed targets a CloneSet; a Deployment goes through the same rules (kubesim runs
    # Deployments), including the per-version limits of a rollout.
    ns = "multi"
    create_spread(api, ns, spread("ws-demo", "workload-xxx", [
        zone_subset("subset-a", "zone-a", 100), zone_subset("subset-b", "zone-b", 100),
    ]))
    apps: Any = client.AppsV1Api(api)
    apps.create_namespaced_deployment(ns, deployment("workload-xxx", 200))

    def settled(template_hash: str | None) -> Any:
        pods = live_pods(api, ns, "workload-xxx")
        hashes = {(p.metadata.labels or {}).get("pod-template-hash") for p in pods}
        if template_hash is not None and hashes != {template_hash}:
            return None
        if split(pods, running=True) != {"subset-a": 100, "subset-b": 100} or len(pods) != 200:
            return None
        return pods

    def seen() -> object:
        pods = live_pods(api, ns, "workload-xxx")
        hashes = {(p.metadata.labels or {}).get("pod-template-hash") for p in pods}
        return (split(pods), split(pods, running=True), hashes,
                spread_status(api, ns, "ws-demo").get("subsetStatuses"))

    pods = wait_for("200 pods 100/100", lambda: settled(None), 60, seen)
    first = {(p.metadata.labels or {})["pod-template-hash"] for p in pods}
    zones = node_zones(api)
    assert {zones[p.spec.node_name] for p in pods} == {"zone-a", "zone-b"}

    apps.patch_namespaced_deployment("workload-xxx", ns, {"spec": {"template": {"metadata": {
        "annotations": {"rollout": "2"}}}}})

    def new_hash() -> str | None:
        # Read raw: a ReplicaSet just created may not have status.replicas yet.
        reader: Any = client.AppsV1Api(api)
        response = reader.list_namespaced_replica_set(
            ns, label_selector="app=workload-xxx", _preload_content=False)
        sets = json.loads(response.data)["items"]
        fresh = [rs for rs in sets
                 if rs["spec"]["template"]["metadata"].get("annotations", {}).get("rollout") == "2"]
        return str(fresh[0]["metadata"]["labels"]["pod-template-hash"]) if fresh else None

    rolled = wait_for("the new ReplicaSet", new_hash, 30)
    assert rolled not in first
    pods = wait_for("the rollout to finish at 100/100", lambda: settled(rolled), 90, seen)
    for pod in pods:
        assert zones[pod.spec.node_name] == (pod.metadata.labels or {})["deploy/zone"]
    status = wait_for(
        "the status of the new version",
        lambda: (lambda s: s if subset_field(s, "replicas") == {"subset-a": 100, "subset-b": 100}
                 else None)(spread_status(api, ns, "ws-demo")),
        30,
    )
    assert subset_field(status, "missingReplicas") == {"subset-a": 0, "subset-b": 0}


def test_adaptive_moves_pods_stuck_in_a_full_zone_and_the_zone_returns_after_the_window(
    stack: tuple[client.ApiClient, Path], tmp_path: Path,
) -> None:
    api, data_dir = stack
    ns = "adaptive"
    create_spread(api, ns, spread("ws-adaptive", "big", [
        zone_subset("zone-c", "zone-c"), zone_subset("zone-a", "zone-a"),
    ], {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": CRITICAL_SECONDS}}))
    # Three CPUs per pod: a node of four holds one, so zone-c (four nodes) is full at four.
    apps: Any = client.AppsV1Api(api)
    apps.create_namespaced_deployment(ns, deployment("big", 6, cpu="3"))
    created = apps.read_namespaced_deployment("big", ns).metadata.creation_timestamp

    def moved() -> Any:
        pods = live_pods(api, ns, "big")
        counts = split(pods, running=True)
        return pods if counts == {"zone-c": 4, "zone-a": 2} and len(pods) == 6 else None

    pods = wait_for("the stuck pods to run in the next subset", moved, 60,
                    lambda: split(live_pods(api, ns, "big")))
    conditions = subset_field(spread_status(api, ns, "ws-adaptive"), "conditions")
    (schedulable,) = conditions["zone-c"]
    assert (schedulable["type"], schedulable["status"]) == ("Schedulable", "False")
    assert schedulable["reason"] == "PodUnschedulable"
    # The timing, read from the objects' own timestamps: the subset turned unschedulable no
    # sooner than rescheduleCriticalSeconds after its pods were created and at most SLACK after
    # that, and the pods now in zone-a were created after it, as replacements of the evicted
    # ones. The stuck pods are evicted before they can be read, so their creation is bounded by
    # the Deployment's own (the ReplicaSet creates them after it): the upper bound below is only
    # the looser for it.
    turned_false = moment(schedulable["lastTransitionTime"])
    critical = timedelta(seconds=CRITICAL_SECONDS)
    assert created + critical <= turned_false <= created + critical + SLACK, (created, turned_false)
    replacements = [p for p in pods if (p.metadata.labels or {}).get("deploy/zone") == "zone-a"]
    assert len(replacements) == 2
    # The stuck pods are evicted only once the planner has observed the subset's
    # Schedulable=False status through the stream the webhooks follow, so their replacements
    # are steered to zone-a straight away: created within SLACK of the condition turning, not
    # one more critical period later as a replacement sent back into zone-c would be.
    for pod in replacements:
        born = pod.metadata.creation_timestamp
        assert turned_false <= born <= turned_false + SLACK, (turned_false, born)

    def recovered() -> Any:
        found = subset_field(spread_status(api, ns, "ws-adaptive"), "conditions")["zone-c"]
        return found if found and found[0]["status"] == "True" else None

    (back,) = wait_for("zone-c to be schedulable again", recovered, RECOVER_SECONDS + 60)
    assert back["reason"] == "Sufficient"
    assert moment(back["lastTransitionTime"]) >= turned_false + timedelta(seconds=RECOVER_SECONDS)
    assert split(live_pods(api, ns, "big"), running=True) == {"zone-c": 4, "zone-a": 2}
    explains_the_adaptive_evictions(data_dir, tmp_path / "audit.db", ns)


def explains_the_adaptive_evictions(data_dir: Path, db: Path, ns: str) -> None:
    """The audit log tells each evicted pod's story: Adaptive rescheduling moved it."""

    def evicted() -> list[str]:
        spreadbus("audit", "replay", "--db", str(db), "--data-dir", str(data_dir), "--quiet")
        with sqlite3.connect(db) as conn:
            rows = conn.execute("SELECT name FROM plans WHERE verb = 'evict' AND namespace = ?",
                                (ns,)).fetchall()
        return [name for (name,) in rows]

    names = wait_for("the evictions in the audit log", lambda: len(found := evicted()) == 2
                     and found, 60)
    for name in names:
        told = json.loads(spreadbus("why", "pod", f"{ns}/{name}", "--db", str(db), "-o", "json"))
        assert told["pod"]["subset"] == "zone-c", told["pod"]
        reasons = [p["reason"] for p in told["plans"] if p["verb"] == "evict"]
        assert reasons == [f"unschedulable for more than {CRITICAL_SECONDS}s in subset zone-c"]
        text = spreadbus("why", "pod", f"{ns}/{name}", "--db", str(db))
        assert f"unschedulable for more than {CRITICAL_SECONDS}s in subset zone-c" in text


def spreadbus(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "spreadbus", *args], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, f"spreadbus {' '.join(args)}: {done.stderr}"
    return done.stdout


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text)
