"""A subset's load counts, among many reservations in flight, exactly those not yet expired: the
same instant as :func:`expired` decides for each one, whatever mix of ages and time zones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from spreadbus.features.workloadspread.core.occupancy import (
    CREATE_TIMEOUT,
    DELETE_TIMEOUT,
    SubsetLoad,
    expired,
)

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
ZONES = st.sampled_from([UTC, timezone(timedelta(hours=2)), timezone(timedelta(hours=-5))])
AGES = st.one_of(
    st.timedeltas(min_value=timedelta(seconds=-5), max_value=timedelta(minutes=1)),
    st.sampled_from([CREATE_TIMEOUT, DELETE_TIMEOUT]).flatmap(
        lambda t: st.sampled_from([t - timedelta(microseconds=1), t, t + timedelta(microseconds=1)])
    ),
)
ENTRIES = st.dictionaries(
    st.text(min_size=1, max_size=4), st.tuples(AGES, ZONES).map(
        lambda age_zone: (NOW - age_zone[0]).astimezone(age_zone[1])
    ), max_size=30,
)


@given(active=st.integers(0, 50), creating=ENTRIES, deleting=ENTRIES)
def test_a_load_counts_exactly_the_entries_not_expired(
    active: int, creating: dict[str, datetime], deleting: dict[str, datetime]
) -> None:
    load = SubsetLoad(active=active, creating=creating, deleting=deleting)
    live_creating = [at for at in creating.values() if not expired(at, CREATE_TIMEOUT, NOW)]
    live_deleting = [at for at in deleting.values() if not expired(at, DELETE_TIMEOUT, NOW)]
    assert load.live_creating(NOW) == len(live_creating)
    assert load.live_deleting(NOW) == len(live_deleting)
    assert load.occupancy(NOW) == active - len(live_deleting) + len(live_creating)
