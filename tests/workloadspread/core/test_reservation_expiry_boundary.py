"""A reservation lives until just past its deadline: exactly at it, it still counts (Kruise).

Every place that drops or counts reservations (the reservation itself, a subset's load, the
ledger's sweep and the status calculation) must agree on that one instant.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from spreadbus.features.workloadspread.admission.reservation_ledger import pruned
from spreadbus.features.workloadspread.core.model import Subset
from spreadbus.features.workloadspread.core.occupancy import (
    CREATE_TIMEOUT,
    DELETE_TIMEOUT,
    Reservation,
    SubsetLoad,
    expired,
)
from spreadbus.features.workloadspread.core.reservation_contract import Ledger
from spreadbus.features.workloadspread.core.status import subset_status
from tests.workloadspread.core.builders import pod

AT = datetime(2026, 1, 1, tzinfo=UTC)
TICK = timedelta(microseconds=1)
MOMENTS = [
    pytest.param(-TICK, True, id="just before the deadline"),
    pytest.param(timedelta(0), True, id="exactly at the deadline"),
    pytest.param(TICK, False, id="just after the deadline"),
]


def swept_at(reservation: Reservation, now: datetime) -> Ledger:
    """The ledger holding only ``reservation``, swept at ``now`` by a view in which its pod is
    present and active but not yet seen under its key."""
    return pruned(Ledger().with_reservation(reservation), now=now, seen=lambda key: False,
                  active=lambda name: True, view_seq=0)


@pytest.mark.parametrize(("offset", "live"), MOMENTS)
def test_an_entry_expires_only_strictly_after_its_deadline(offset: timedelta, live: bool) -> None:
    for timeout in (CREATE_TIMEOUT, DELETE_TIMEOUT):
        assert expired(AT, timeout, AT + timeout + offset) is not live


@pytest.mark.parametrize(("offset", "live"), MOMENTS)
def test_a_creating_reservation_counts_everywhere_until_just_after_thirty_seconds(
    offset: timedelta, live: bool
) -> None:
    now = AT + CREATE_TIMEOUT + offset
    reservation = Reservation("default/ws", "v1", "a", "p1", "creating", AT)
    load = SubsetLoad(active=0, creating={"p1": AT})
    assert reservation.live(now) is live
    assert load.live_creating(now) == int(live)
    assert load.occupancy(now) == int(live)
    swept = swept_at(reservation, now)
    assert ("p1" in swept.creating) is live
    outcome = subset_status(
        Subset(name="a", max_replicas=2),
        [],
        creating={"p1": AT},
        deleting={},
        replicas=2,
        now=now,
    )
    assert ("p1" in outcome.status.creating_pods) is live
    assert outcome.failed_creates == ([] if live else ["p1"])
    assert outcome.status.missing_replicas == (1 if live else 2)


@pytest.mark.parametrize(("offset", "live"), MOMENTS)
def test_a_deleting_reservation_counts_everywhere_until_just_after_fifteen_seconds(
    offset: timedelta, live: bool
) -> None:
    now = AT + DELETE_TIMEOUT + offset
    reservation = Reservation("default/ws", "v1", "a", "p1", "deleting", AT)
    load = SubsetLoad(active=1, deleting={"p1": AT})
    assert reservation.live(now) is live
    assert load.live_deleting(now) == int(live)
    assert load.occupancy(now) == (0 if live else 1)
    swept = swept_at(reservation, now)
    assert ("p1" in swept.deleting) is live
    outcome = subset_status(
        Subset(name="a", max_replicas=2),
        [pod("p1", ws="ws", subset_name="a")],
        creating={},
        deleting={"p1": AT},
        replicas=2,
        now=now,
    )
    assert ("p1" in outcome.status.deleting_pods) is live
    assert outcome.failed_deletes == ([] if live else ["p1"])
    assert outcome.status.missing_replicas == (2 if live else 1)


@example(kind="creating", age=CREATE_TIMEOUT)
@example(kind="deleting", age=DELETE_TIMEOUT)
@given(
    kind=st.sampled_from(["creating", "deleting"]),
    age=st.timedeltas(min_value=timedelta(0), max_value=timedelta(minutes=2)),
)
def test_a_reservation_is_live_exactly_while_its_age_is_within_its_timeout(
    kind: str, age: timedelta
) -> None:
    reservation = Reservation("default/ws", "v1", "a", "p1", kind, AT)  # type: ignore[arg-type]
    timeout = CREATE_TIMEOUT if kind == "creating" else DELETE_TIMEOUT
    assert reservation.live(AT + age) is (age <= timeout)
