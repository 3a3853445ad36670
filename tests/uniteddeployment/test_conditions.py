"""Kruise's two condition write rules, over JSON condition lists."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from spreadbus.features.uniteddeployment.core.conditions import (
    find_condition,
    format_time,
    remove_condition,
    set_subset_condition,
    set_ud_condition,
    set_updated_condition,
)

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
NOW = T0 + timedelta(minutes=5, microseconds=700)


def cond(
    type_: str, status: str, reason: str = "", message: str = "", at: datetime = T0
) -> dict[str, Any]:
    found: dict[str, Any] = {"type": type_, "status": status, "lastTransitionTime": format_time(at)}
    if reason:
        found["reason"] = reason
    if message:
        found["message"] = message
    return found


def test_format_time_is_whole_seconds_utc() -> None:
    assert format_time(NOW) == "2026-01-01T12:05:00Z"
    assert format_time(datetime(2026, 1, 1, 12, 0, 0)) == "2026-01-01T12:00:00Z"


# --- UD-level rule ---------------------------------------------------------------------------


def test_ud_same_status_and_reason_keeps_everything_even_the_old_message() -> None:
    before = [cond("SubsetProvisioned", "True", "r", "old message")]
    after = set_ud_condition(before, "SubsetProvisioned", "True", "r", "new message", now=NOW)
    assert after == before
    assert after is not before


def test_ud_same_status_new_reason_keeps_transition_time() -> None:
    before = [cond("A", "True", "r1", "m1"), cond("B", "True")]
    after = set_ud_condition(before, "A", "True", "r2", "m2", now=NOW)
    assert after == [cond("B", "True"), cond("A", "True", "r2", "m2", at=T0)]


def test_ud_new_status_takes_now_and_moves_to_the_end() -> None:
    before = [cond("A", "True", "r"), cond("B", "True")]
    after = set_ud_condition(before, "A", "False", "r", "m", now=NOW)
    assert after == [cond("B", "True"), cond("A", "False", "r", "m", at=NOW)]


def test_ud_missing_condition_is_appended_with_now() -> None:
    after = set_ud_condition([], "A", "True", "", "", now=NOW)
    assert after == [{"type": "A", "status": "True", "lastTransitionTime": "2026-01-01T12:05:00Z"}]


# --- subset-level rule -----------------------------------------------------------------------


def test_subset_same_status_new_reason_is_a_new_transition_in_place() -> None:
    before = [cond("Schedulable", "False", "created", "m"), cond("Other", "True")]
    after = set_subset_condition(before, "Schedulable", "False", "reschedule", "x", now=NOW)
    assert after == [cond("Schedulable", "False", "reschedule", "x", at=NOW), cond("Other", "True")]


def test_subset_same_status_and_reason_is_untouched() -> None:
    before = [cond("Schedulable", "False", "reschedule", "timeout pending pods found")]
    after = set_subset_condition(before, "Schedulable", "False", "reschedule", "other", now=NOW)
    assert after == before


def test_subset_missing_is_appended() -> None:
    after = set_subset_condition(None, "Schedulable", "True", "recover", "m", now=NOW)
    assert after == [cond("Schedulable", "True", "recover", "m", at=NOW)]


def test_inputs_are_not_modified() -> None:
    before = [cond("Schedulable", "True", "a")]
    snapshot = [dict(c) for c in before]
    set_subset_condition(before, "Schedulable", "False", "b", "", now=NOW)
    set_ud_condition(before, "Schedulable", "False", "b", "", now=NOW)
    assert before == snapshot


def test_garbage_entries_are_dropped_not_fatal() -> None:
    after = set_subset_condition(["junk", 3, cond("X", "True")], "Y", "True", "", "", now=NOW)
    assert [c["type"] for c in after] == ["X", "Y"]
    assert find_condition("not a list", "X") is None
    assert remove_condition([cond("X", "True"), cond("Y", "True")], "X") == [cond("Y", "True")]


# --- UnitedDeploymentUpdated -----------------------------------------------------------------


def test_updated_condition_flips_only_on_status_change() -> None:
    first = set_updated_condition([], current_revision="a", expected_revision="b", now=T0)
    assert first == [
        cond(
            "UnitedDeploymentUpdated",
            "False",
            "UnitedDeploymentRevisionUpdating",
            "updating to revision b",
        )
    ]
    # still updating, now towards c: nothing is rewritten
    again = set_updated_condition(first, current_revision="a", expected_revision="c", now=NOW)
    assert again == first
    done = set_updated_condition(first, current_revision="c", expected_revision="c", now=NOW)
    assert done == [
        cond(
            "UnitedDeploymentUpdated",
            "True",
            "UnitedDeploymentRevisionUpdated",
            "updated to revision c",
            at=NOW,
        )
    ]


# --- properties ------------------------------------------------------------------------------

statuses = st.sampled_from(["True", "False", "Unknown"])
reasons = st.sampled_from(["", "a", "b"])
types = st.sampled_from(["A", "B", "C"])
condition_lists = st.lists(
    st.builds(cond, types, statuses, reasons, st.sampled_from(["", "m"])),
    max_size=4,
    unique_by=lambda c: c["type"],
)


@given(condition_lists, types, statuses, reasons)
def test_either_rule_leaves_exactly_one_condition_of_the_type(
    before: list[dict[str, Any]], type_: str, status: str, reason: str
) -> None:
    for rule in (set_ud_condition, set_subset_condition):
        after = rule(before, type_, status, reason, "msg", now=NOW)
        written = [c for c in after if c["type"] == type_]
        assert len(written) == 1
        assert (written[0]["status"], written[0].get("reason", "")) == (status, reason)
        assert {c["type"] for c in after} == {c["type"] for c in before} | {type_}
        # the other conditions are untouched
        assert [c for c in after if c["type"] != type_] == [c for c in before if c["type"] != type_]


@given(condition_lists, types, statuses, reasons)
def test_transition_time_moves_only_when_the_rule_says(
    before: list[dict[str, Any]], type_: str, status: str, reason: str
) -> None:
    old = find_condition(before, type_)
    ud = find_condition(set_ud_condition(before, type_, status, reason, "msg", now=NOW), type_)
    sub = find_condition(set_subset_condition(before, type_, status, reason, "msg", now=NOW), type_)
    assert ud is not None
    assert sub is not None
    same_status = old is not None and old["status"] == status
    same_reason = old is not None and old.get("reason", "") == reason
    expect_ud = old["lastTransitionTime"] if same_status else format_time(NOW)
    expect_sub = old["lastTransitionTime"] if same_status and same_reason else format_time(NOW)
    assert ud["lastTransitionTime"] == expect_ud
    assert sub["lastTransitionTime"] == expect_sub
    # a second identical write is a no-op for both rules
    twice = set_subset_condition(
        set_subset_condition(before, type_, status, reason, "msg", now=NOW),
        type_,
        status,
        reason,
        "other",
        now=NOW + timedelta(hours=1),
    )
    assert twice == set_subset_condition(before, type_, status, reason, "msg", now=NOW)
