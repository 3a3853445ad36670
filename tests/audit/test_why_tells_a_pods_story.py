"""``why`` over a folded database: the admission that placed a pod and what the other subsets
held, its node, its deletion cost and the plan behind it, its eviction; a spread's counts at T."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from events.codec import encode
from spreadbus.audit.store import AuditStore
from spreadbus.audit.why import pod_story, render_counts, render_pod, subset_counts_at
from tests.audit.history_messages import story


def folded(tmp_path: Path) -> sqlite3.Connection:
    path = tmp_path / "audit.db"
    store = AuditStore(path)
    store.apply([(seq, "history.x", encode(e)) for seq, e in enumerate(story(), start=1)])  # type: ignore[arg-type]
    store.finish()
    store.close()
    return sqlite3.connect(path)


def test_a_pod_in_the_elastic_pool_is_explained_by_the_full_fixed_pool(tmp_path: Path) -> None:
    conn = folded(tmp_path)
    told = pod_story(conn, "ns", "web-3")
    assert told is not None
    assert told["admission"]["subset"] == "elastic"
    assert told["admission"]["reason"] == "fixed is full (2/2); elastic has room (0/unlimited)"
    text = render_pod(told)
    assert "into elastic by webhook webhook-0, ledger revision 3" in text
    assert "subsets     fixed 2/2, elastic 0/unlimited (before this pod)" in text
    assert "bound         1970-01-01T00:00:15.000Z (seq 9) to node elastic-1" in text
    assert "deletion cost -100" in text
    assert "applied" in text
    lines = text.splitlines()
    evicted = next(i for i, line in enumerate(lines) if line.lstrip().startswith("evicted"))
    assert "unschedulable for more than 10s in subset elastic" in lines[evicted]  # Adaptive
    assert lines[evicted + 1].lstrip().startswith("deleting")
    assert "Evicted" in lines[evicted + 1]


def test_a_pod_in_the_fixed_pool_had_room_there(tmp_path: Path) -> None:
    told = pod_story(folded(tmp_path), "ns", "web-2")
    assert told is not None
    assert told["admission"]["reason"] == "fixed has room (1/2)"
    assert [e["point"] for e in told["events"]] == ["created", "bound"]


def test_at_a_time_the_story_ends_there(tmp_path: Path) -> None:
    told = pod_story(folded(tmp_path), "ns", "web-3", at=16.0)
    assert told is not None
    assert [e["point"] for e in told["events"]] == ["created", "bound", "ready"]
    assert told["plans"] == []
    assert pod_story(folded(tmp_path), "ns", "web-3", at=14.0) is None  # not created yet
    assert pod_story(folded(tmp_path), "ns", "nobody") is None


def test_a_spreads_subsets_at_a_time(tmp_path: Path) -> None:
    conn = folded(tmp_path)
    during = subset_counts_at(conn, "workloadspread", "ns", "ws", at=18.0)
    assert during is not None
    assert [(s["subset"], s["replicas"]) for s in during["status"]["subsets"]] == [
        ("fixed", 2), ("elastic", 1)]
    assert {p["subset"]: p["pods"] for p in during["pods"]} == {"fixed": 2, "elastic": 1}
    after = subset_counts_at(conn, "workloadspread", "ns", "ws", at=30.0)
    assert after is not None
    assert {p["subset"]: p["pods"] for p in after["pods"]} == {"fixed": 2}
    assert "elastic      replicas 0" in render_counts(after)
