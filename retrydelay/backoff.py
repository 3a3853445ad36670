"""Exponential backoff with jitter, for every retry loop of the services and the simulator.

Clients that fail together (an API server or a NATS leader going away) must not retry together,
so each delay is drawn at random: tenacity's "full jitter" window, between the first delay and
the doubled one (``first * 2 ** (failures - 1)``), which stops growing at ``cap``. No delay is
shorter than the first nor longer than the cap, and none longer than the unjittered doubling.

The retries here are loops, not calls to repeat (a watch that starts over after a failure and
forgets its failures on success, a rule offered again at a later planning round, a work queue's
key added back after a delay), so they ask tenacity's wait strategy for one delay at a time
instead of wrapping a call in its ``Retrying``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tenacity import RetryCallState, Retrying, wait_random_exponential


@dataclass(frozen=True)
class Backoff:
    first: float
    """The longest delay after the first failure, and the shortest after any."""
    cap: float
    """The longest delay after any number of failures."""
    _wait: wait_random_exponential = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not 0 <= self.first <= self.cap:
            raise ValueError(f"first: must be >= 0 and <= cap, got {self.first!r} "
                             f"(cap {self.cap!r})")
        object.__setattr__(self, "_wait", wait_random_exponential(
            multiplier=self.first, min=self.first, max=self.cap))

    def ceiling(self, failures: int) -> float:
        """The longest delay after ``failures`` failures in a row: the unjittered doubling."""
        return min(self.cap, self.first * 2.0 ** min(max(failures, 1) - 1, 64))

    def delay(self, failures: int) -> float:
        """A delay after ``failures`` failures in a row (1 after the first), in
        ``[first, ceiling(failures)]``."""
        state = RetryCallState(Retrying(), None, (), {})
        state.attempt_number = max(failures, 1)
        return float(self._wait(state))
