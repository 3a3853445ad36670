"""``why podunavailablebudget NS/NAME``: a budget's status at a time, from the audit log."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from events.codec import encode
from events.messages import StatusChange
from spreadbus.audit.store import AuditStore
from spreadbus.audit.why import governing_kinds, render_counts, subset_counts_at


def budget_status(available: int, *, ts: float) -> StatusChange:
    return StatusChange(
        cluster="c", group="policy.kruise.io", version="v1alpha1",
        resource="podunavailablebudgets", namespace="ns", name="pub", uid="pub-uid",
        generation=3, status={"currentAvailable": available, "desiredAvailable": 2}, ts=ts)


def test_a_budgets_status_at_a_time_is_told(tmp_path: Path) -> None:
    assert "podunavailablebudget" in governing_kinds()
    store = AuditStore(tmp_path / "audit.db")
    store.apply([(1, "history.x", encode(budget_status(3, ts=10.0))),
                 (2, "history.x", encode(budget_status(1, ts=20.0)))])
    store.close()
    conn = sqlite3.connect(tmp_path / "audit.db")
    told = subset_counts_at(conn, "podunavailablebudget", "ns", "pub", at=15.0)
    assert told is not None
    assert told["status"]["seq"] == 1
    assert told["status"]["subsets"] == []
    assert told["pods"] == []
    assert render_counts(told).splitlines() == [
        "podunavailablebudget ns/pub at 1970-01-01T00:00:15.000Z",
        "  status        1970-01-01T00:00:10.000Z (seq 1), generation 3",
    ]
    assert subset_counts_at(conn, "podunavailablebudget", "ns", "other") is None
