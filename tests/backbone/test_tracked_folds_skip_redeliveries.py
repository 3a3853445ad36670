"""One tracked fold keeps every stream position: a redelivery is never folded, a skipped message
still moves the position, and the bucket folds read what webhooks write."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from events.buckets import entry_key, subject_prefix
from spreadbus.features.podunavailablebudget.core.budget_ledger import ENTRIES as BUDGET_ENTRIES
from spreadbus.features.podunavailablebudget.core.budget_ledger import BudgetEntry
from spreadbus.features.podunavailablebudget.planning.budget_records import BudgetRecords
from spreadbus.features.workloadspread.core.occupancy import Reservation
from spreadbus.features.workloadspread.core.reservation_contract import BUCKET, ENTRIES, Ledger
from spreadbus.features.workloadspread.planning.reservations import ReservationLedgers
from spreadbus.projection.decision_log import DecisionLog
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.projection.tracking import FieldPosition, StreamPosition, Tracked
from tests.backbone.log_builders import random_log

AT = datetime(2026, 3, 1, 8, 30, tzinfo=UTC)


def recorder(record: StreamPosition | None = None) -> tuple[list[int], Tracked[int]]:
    folded: list[int] = []

    def fold(seq: int, subject: str, data: bytes) -> int:
        folded.append(seq)
        return seq

    return folded, Tracked(fold, record)


def test_a_message_at_or_below_the_position_is_not_folded() -> None:
    folded, tracked = recorder()
    assert [tracked.apply(seq, "s", b"") for seq in (1, 2, 2, 1, 5, 3, 6)] == [1, 2, None, None, 5,
                                                                         None, 6]
    assert folded == [1, 2, 5, 6]
    assert tracked.last_seq == 6


def test_a_skipped_message_moves_the_position_and_a_rewind_folds_again() -> None:
    folded, tracked = recorder()
    tracked.apply(1, "s", b"")
    tracked.skip(4)
    tracked.skip(2)  # never backwards
    assert tracked.apply(3, "s", b"") is None
    assert tracked.last_seq == 4
    tracked.rewind()
    assert tracked.apply(1, "s", b"") == 1
    assert folded == [1, 1]


def test_a_record_given_keeps_the_position_where_its_owner_snapshots_it() -> None:
    record = StreamPosition(7)
    _, tracked = recorder(record)
    assert tracked.apply(7, "s", b"") is None
    tracked.apply(8, "s", b"")
    assert record.last_seq == 8


def test_a_field_position_reads_and_writes_the_named_field_only() -> None:
    log = DecisionLog()
    log.apply_plan(5, "plan.c1.x", b"not a plan")
    log.apply_plan(5, "plan.c1.x", b"not a plan")  # redelivered: not counted again
    log.apply_outcome(3, "outcome.c1.x", b"not an outcome")
    assert (log.state.plans_seq, log.state.outcomes_seq, log.state.skipped) == (5, 3, 2)
    with pytest.raises(TypeError, match="latest is not a stream position"):
        FieldPosition(log.state, "latest")


def test_the_projection_restored_from_its_state_resumes_after_its_position() -> None:
    log = random_log(3, count=60)
    whole = KubeProjection()
    for entry in log:
        whole.apply(*entry)
    half = KubeProjection()
    for entry in log[:30]:
        half.apply(*entry)
    resumed = KubeProjection(half.state)
    for entry in log:  # the whole log again: the first half is redelivered
        resumed.apply(*entry)
    assert resumed.state == whole.state


def test_the_reservation_fold_reads_a_ledger_and_its_deletion() -> None:
    ledgers = ReservationLedgers()
    east = ledgers.of("east.1")
    key = entry_key("east.1", "team a", "ws")
    taken = Reservation("team a/ws", "v1", "zone-a", "p", "creating", AT)
    subject = f"$KV.{BUCKET}.{key}"
    assert subject.startswith(subject_prefix(BUCKET, "east.1"))
    assert ledgers.apply(1, subject, ENTRIES.encode(Ledger().with_reservation(taken))) == (
        "east.1", "team%20a.ws")
    assert east.get("team%20a.ws").reservations() == [taken]
    assert ledgers.apply(2, subject, b"") == ("east.1", "team%20a.ws")  # deleted: empty
    assert east.get("team%20a.ws").reservations() == []
    assert east.get("team%20a.ws").floor == 0


def test_a_bucket_fold_keeps_each_cluster_apart_and_counts_what_it_cannot_read() -> None:
    records = BudgetRecords()
    c1, c2 = records.of("c1"), records.of("c2")
    spent = BudgetEntry(disrupted={"p": "2026-03-01T08:30:00Z"})
    other = f"$KV.spreadbus-budgets.{entry_key('c2', 'ns', 'pub')}"
    assert records.apply(1, other, BUDGET_ENTRIES.encode(spent)) == ("c2", "ns.pub")
    assert c2.get("ns.pub") == spent
    assert c1.get("ns.pub") == BudgetEntry(), "c2's record is not c1's"
    assert records.apply(2, "$KV.spreadbus-budgets.c1.only-one-token", b"{}") is None
    assert records.apply(2, "$KV.spreadbus-budgets-other.c1.ns.pub", b"{}") is None
    assert records.skipped == 1
    key = entry_key("c1", "ns", "pub")
    subject = f"$KV.spreadbus-budgets.{key}"
    assert records.apply(3, subject, BUDGET_ENTRIES.encode(spent)) == ("c1", "ns.pub")
    assert c1.get("ns.pub") == spent
    unreadable = BUDGET_ENTRIES.unreadable
    assert records.apply(4, subject, b"{broken") == ("c1", "ns.pub")
    assert BUDGET_ENTRIES.unreadable == unreadable + 1
    assert c1.get("ns.pub") == BudgetEntry()
    assert c2.get("ns.pub") == spent
