"""``why`` over a folded database: the admission that placed a pod and what the other subsets
held, its node, its deletion cost and the plan behind it, its eviction; a spread's counts at T."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from events.codec import encode
from events.messages import StatusChange
from spreadbus.audit.store import AuditStore
from spreadbus.audit.why import pod_story, render_counts, render_pod, subset_counts_at
from spreadbus.cli import main
from tests.audit.history_messages import status, story


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


def deleted(*, ts: float, uid: str = "ws-uid") -> StatusChange:
    """The watcher's point for the spread's DELETED observation."""
    return StatusChange(
        cluster="c", group="apps.kruise.io", version="v1alpha1", resource="workloadspreads",
        namespace="ns", name="ws", uid=uid, generation=1, status={}, ts=ts, deleted=True,
    )


def folded_with(tmp_path: Path, *extra: object) -> Path:
    path = tmp_path / "audit.db"
    store = AuditStore(path)
    store.apply([(seq, "history.x", encode(e))  # type: ignore[arg-type]
                 for seq, e in enumerate([*story(), *extra], start=1)])
    store.finish()
    store.close()
    return path


def test_a_deleted_spread_says_when_it_was_deleted_and_what_it_last_held(tmp_path: Path) -> None:
    conn = sqlite3.connect(folded_with(tmp_path, deleted(ts=30.0)))
    gone = subset_counts_at(conn, "workloadspread", "ns", "ws")
    assert gone is not None
    assert gone["deleted"] == {"seq": 19, "ts": 30.0}
    text = render_counts(gone)
    assert text.splitlines()[0] == (
        "workloadspread ns/ws at now: deleted at 1970-01-01T00:00:30.000Z (seq 19)")
    assert "  last status   1970-01-01T00:00:21.500Z (seq 18)" in text
    before = subset_counts_at(conn, "workloadspread", "ns", "ws", at=25.0)
    assert before is not None
    assert before["deleted"] is None
    assert render_counts(before).splitlines()[0] == (
        "workloadspread ns/ws at 1970-01-01T00:00:25.000Z")


def test_a_spread_made_again_after_its_deletion_is_current(tmp_path: Path) -> None:
    again = status(1, 0, ts=40.0)
    conn = sqlite3.connect(folded_with(tmp_path, deleted(ts=30.0), again))
    told = subset_counts_at(conn, "workloadspread", "ns", "ws")
    assert told is not None
    assert told["deleted"] is None
    assert "deleted" not in render_counts(told)


def test_a_deleted_pod_says_so_first(tmp_path: Path) -> None:
    conn = folded(tmp_path)
    told = pod_story(conn, "ns", "web-3")
    assert told is not None
    assert told["deleted"] == {"seq": 17, "ts": 21.0}
    assert render_pod(told).splitlines()[0] == (
        "pod ns/web-3 (uid uid-3, cluster c), deleted at 1970-01-01T00:00:21.000Z (seq 17)")
    alive = pod_story(conn, "ns", "web-3", at=20.8)
    assert alive is not None
    assert alive["deleted"] is None
    assert "deleted" not in render_pod(alive).splitlines()[0]


def test_why_exits_0_for_a_deleted_object_and_1_for_one_that_never_existed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(folded_with(tmp_path, deleted(ts=30.0)))
    assert main(["why", "workloadspread", "ns/ws", "--db", db]) == 0
    assert capsys.readouterr().out.startswith(
        "workloadspread ns/ws at now: deleted at 1970-01-01T00:00:30.000Z (seq 19)\n")
    assert main(["why", "workloadspread", "ns/never", "--db", db]) == 1
    assert "the log holds no workloadspread ns/never" in capsys.readouterr().err
    assert main(["why", "pod", "ns/never", "--db", db]) == 1


def test_a_database_folded_before_deletions_were_recorded_still_answers(tmp_path: Path) -> None:
    conn = folded(tmp_path)
    conn.execute("DROP TABLE deletions")
    told = subset_counts_at(conn, "workloadspread", "ns", "ws")
    assert told is not None
    assert told["deleted"] is None
