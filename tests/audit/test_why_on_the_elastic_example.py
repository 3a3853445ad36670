"""The seed's elastic example on the local stack, explained from the audit log.

At the seed's scale: a fixed pool of 100, then 150 pods (100/50), then 80. The log is replayed
with ``spreadbus audit replay`` (the local stack's reader found by default), and ``spreadbus why
pod`` names the subset and the reason for a pod of each pool: the 101st pod went elastic because
the fixed pool was full at 100. A replay cut off half-way and run again
gives the same database, byte for byte, as one replay of the whole log.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from spreadbus.cli.local_stack import Stack
from tests.audit.database_files import content
from tests.workloadspread_e2e.stack import (
    create_spread,
    deployment,
    elastic_spread,
    live_pods,
    running_stack,
    split,
    subset_of,
    wait_for,
)

pytestmark = pytest.mark.e2e
NS = "elastic"
FIXED = 100
SCALED_OUT = 150
SCALED_IN = 80
WORKLOADSPREAD = elastic_spread("ws-demo", "workload-xxx", FIXED)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, client.ApiClient]]:
    data_dir: Path = tmp_path_factory.mktemp("audit-stack")
    with running_stack(data_dir, "elastic", {}) as running:
        yield running


def spreadbus(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "spreadbus", *args], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, f"spreadbus {' '.join(args)}: {done.stderr}"
    return done.stdout


def replay(stack: Stack, db: Path, *extra: str) -> None:
    spreadbus("audit", "replay", "--db", str(db), "--data-dir", str(stack.data_dir), "--quiet",
              *extra)


def position(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        value: int = conn.execute("SELECT last_seq FROM replay_position").fetchone()[0]
    return value


def why(db: Path, name: str) -> dict[str, Any]:
    story: dict[str, Any] = json.loads(spreadbus("why", "pod", f"{NS}/{name}", "--db", str(db),
                                                 "-o", "json"))
    return story


def test_why_names_each_pods_subset_and_reason(
    stack: tuple[Stack, client.ApiClient], tmp_path: Path
) -> None:
    local, api = stack
    create_spread(api, NS, WORKLOADSPREAD)
    apps: Any = client.AppsV1Api(api)
    apps.create_namespaced_deployment(NS, deployment("workload-xxx", 0))
    apps.patch_namespaced_deployment("workload-xxx", NS, {"spec": {"replicas": SCALED_OUT}})
    pods = wait_for(f"{SCALED_OUT} pods running {FIXED}/{SCALED_OUT - FIXED}", lambda: (
        found if split(found := live_pods(api, NS, "workload-xxx"), running=True)
        == {"ACK": FIXED, "ECI": SCALED_OUT - FIXED} else None), 180,
        lambda: split(live_pods(api, NS, "workload-xxx")))
    apps.patch_namespaced_deployment("workload-xxx", NS, {"spec": {"replicas": SCALED_IN}})
    wait_for(f"{SCALED_IN} pods, all fixed", lambda: split(
        live_pods(api, NS, "workload-xxx"), running=True) == {"ACK": SCALED_IN}, 180,
        lambda: split(live_pods(api, NS, "workload-xxx")))

    db = tmp_path / "audit.db"

    def everything_recorded() -> bool:
        replay(local, db)
        with sqlite3.connect(db) as conn:
            admitted = conn.execute("SELECT COUNT(*) FROM admissions").fetchone()[0]
            deleted = conn.execute("SELECT COUNT(*) FROM pods WHERE deleted_seq IS NOT NULL "
                                   "AND namespace = ?", (NS,)).fetchone()[0]
        return bool(admitted >= SCALED_OUT and deleted >= SCALED_OUT - SCALED_IN)

    wait_for("the whole story in the history", everything_recorded, 60)

    fixed = next(p for p in pods if subset_of(p) == "ACK")
    elastic = next(p for p in pods if subset_of(p) == "ECI")
    told = why(db, fixed.metadata.name)
    assert told["pod"]["subset"] == "ACK"
    assert told["admission"]["subset"] == "ACK"
    assert told["admission"]["reason"].startswith("ACK has room (")
    assert told["pod"]["node"] == fixed.spec.node_name

    told = why(db, elastic.metadata.name)
    assert told["admission"] is not None, told
    assert told["admission"]["subset"] == "ECI"
    assert told["admission"]["reason"] == (
        f"ACK is full ({FIXED}/{FIXED}); ECI has room "
        f"({told['admission']['subsets'][1]['occupancy']}/unlimited)")
    assert [e["point"] for e in told["events"]][-1] == "deleted", "scaled in: elastic first"
    costs = [p["deletion_cost"] for p in told["plans"] if p["deletion_cost"] is not None]
    assert costs or told["pod"]["created_deletion_cost"] is not None, "a cost, from either"
    text = spreadbus("why", "pod", f"{NS}/{elastic.metadata.name}", "--db", str(db))
    assert f"ACK is full ({FIXED}/{FIXED})" in text
    assert "deleted" in text

    counts = json.loads(spreadbus("why", "workloadspread", f"{NS}/ws-demo", "--db", str(db),
                                  "-o", "json"))
    assert {p["subset"]: p["pods"] for p in counts["pods"]} == {"ACK": SCALED_IN}

    # A replay cut off at a time half-way, then resumed, ends as one whole replay does.
    for _ in range(5):
        whole, cut = tmp_path / "whole.db", tmp_path / "cut.db"
        whole.unlink(missing_ok=True)
        cut.unlink(missing_ok=True)
        with sqlite3.connect(db) as conn:
            half = conn.execute("SELECT ts FROM admissions ORDER BY seq LIMIT 1 OFFSET ?",
                                (SCALED_OUT // 2,)).fetchone()[0]
        replay(local, cut, "--until", str(half))
        assert 0 < position(cut) < position(db)
        replay(local, cut)
        replay(local, whole)
        if position(whole) == position(cut):  # no message arrived between the two
            break
    assert content(whole) == content(cut)

    # Deleted, the spread is told as deleted, with its last status, not as current.
    client.CustomObjectsApi(api).delete_namespaced_custom_object(
        "apps.kruise.io", "v1alpha1", NS, "workloadspreads", "ws-demo")

    def deletion_recorded() -> bool:
        replay(local, db)
        with sqlite3.connect(db) as conn:
            found = conn.execute("SELECT COUNT(*) FROM deletions WHERE name = 'ws-demo'")
            return bool(found.fetchone()[0])

    wait_for("the spread's deletion in the history", deletion_recorded, 60)
    text = spreadbus("why", "workloadspread", f"{NS}/ws-demo", "--db", str(db))
    assert text.startswith(f"workloadspread {NS}/ws-demo at now: deleted at "), text
    assert "  last status " in text
