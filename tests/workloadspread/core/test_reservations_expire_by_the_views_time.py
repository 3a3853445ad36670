"""A count from a lagging view judges reservations by the time the view is current as of.

:func:`expiry_clock` is the clock a view-based count expires reservations by: a creating
reservation runs out only once the view was current past its 30 s (so its pod, had it been made,
would be in the view), and by the wall clock, as Kruise's ``creatingPods``, while the view is
current. Deleting reservations keep the wall clock.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from spreadbus.features.workloadspread.admission.reservation_ledger import pruned
from spreadbus.features.workloadspread.core.occupancy import (
    CREATE_TIMEOUT,
    DELETE_TIMEOUT,
    Reservation,
    SubsetLoad,
    expiry_clock,
    without_expired_deletions,
)
from spreadbus.features.workloadspread.core.reservation_contract import Ledger

AT = datetime(2026, 1, 1, tzinfo=UTC)
seconds = st.integers(0, 120).map(lambda s: AT + timedelta(seconds=s))


def load(at: datetime) -> SubsetLoad:
    return SubsetLoad(active=0, creating={"p": at})


@given(now=seconds, view_current_at=st.none() | seconds)
def test_a_reservation_lives_until_the_view_is_current_past_its_deadline(
    now: datetime, view_current_at: datetime | None
) -> None:
    judged = expiry_clock(now, view_current_at)
    view_past_deadline = view_current_at is not None and view_current_at > AT + CREATE_TIMEOUT
    counts = load(AT).occupancy(judged) == 1
    assert counts == (not (view_past_deadline and now > AT + CREATE_TIMEOUT))


@given(now=seconds, later=st.integers(0, 60))
def test_while_the_view_is_current_reservations_expire_as_kruises_do(
    now: datetime, later: int
) -> None:
    current = now + timedelta(seconds=later)
    assert expiry_clock(now, current) == now
    assert load(AT).occupancy(expiry_clock(now, current)) == (0 if now > AT + CREATE_TIMEOUT else 1)


@given(now=seconds, view_current_at=st.none() | seconds)
def test_pruning_by_the_views_time_keeps_what_the_view_cannot_rule_out(
    now: datetime, view_current_at: datetime | None
) -> None:
    reservation = Reservation("default/ws", "v1", "zone-a", "p", "creating", AT)
    ledger = Ledger(creating={"p": reservation}, deleting={}, floor=0)
    kept = pruned(
        ledger,
        now=expiry_clock(now, view_current_at),
        seen=lambda _: False,
        active=lambda _: False,
        view_seq=7,
    )
    view_past_deadline = view_current_at is not None and view_current_at > AT + CREATE_TIMEOUT
    assert ("p" in kept.creating) == (not (view_past_deadline and now > AT + CREATE_TIMEOUT))
    assert kept.floor == 0, "an expiry reflects nothing the view folded"


@given(now=seconds, view_current_at=st.none() | seconds)
def test_deletions_free_a_slot_for_15_s_of_the_wall_clock_whatever_the_views_time(
    now: datetime, view_current_at: datetime | None
) -> None:
    loads = {"zone-a": SubsetLoad(active=1, deleting={"p": AT})}
    judged = expiry_clock(now, view_current_at)
    occupancy = without_expired_deletions(loads, now)["zone-a"].occupancy(judged)
    assert occupancy == (1 if now > AT + DELETE_TIMEOUT else 0)
