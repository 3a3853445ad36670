"""Every retry delay lies between the first delay and the unjittered doubling, never past the
cap, and the jitter spreads replicas that failed together."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrydelay import Backoff

BACKOFFS = [Backoff(first=0.2, cap=10.0), Backoff(first=0.5, cap=60.0),
            Backoff(first=0.05, cap=2.0), Backoff(first=0.02, cap=5.0)]


@pytest.mark.parametrize("backoff", BACKOFFS, ids=repr)
@given(failures=st.integers(min_value=1, max_value=10_000))
def test_each_delay_lies_between_the_first_and_the_doubling_capped(
        backoff: Backoff, failures: int) -> None:
    ceiling = min(backoff.cap, backoff.first * 2 ** min(failures - 1, 64))
    assert backoff.ceiling(failures) == ceiling
    delay = backoff.delay(failures)
    assert backoff.first <= delay <= ceiling <= backoff.cap


def test_the_first_retry_waits_the_first_delay() -> None:
    assert Backoff(first=0.2, cap=10.0).delay(1) == 0.2


def test_the_cap_is_reached_and_never_passed() -> None:
    backoff = Backoff(first=0.2, cap=10.0)
    assert backoff.ceiling(6) == 6.4
    assert backoff.ceiling(7) == 10.0
    assert max(backoff.delay(10**9) for _ in range(200)) <= 10.0


def test_replicas_that_failed_together_spread_their_retries() -> None:
    backoff = Backoff(first=0.2, cap=10.0)
    delays = [backoff.delay(8) for _ in range(200)]
    assert len(set(delays)) > 150
    # Full jitter: the draws cover the window, not just one end of it.
    assert min(delays) < 3.0 < 7.0 < max(delays)


def test_no_wait_stays_no_wait() -> None:
    assert Backoff(first=0.0, cap=10.0).delay(5) == 0.0


@pytest.mark.parametrize(("first", "cap"), [(-0.1, 10.0), (11.0, 10.0)])
def test_a_first_delay_outside_zero_to_cap_is_refused_by_name(first: float, cap: float) -> None:
    with pytest.raises(ValueError, match="first"):
        Backoff(first=first, cap=cap)
