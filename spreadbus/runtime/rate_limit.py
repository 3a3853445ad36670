"""Client-side rate limiting for Kubernetes API calls: a token bucket (QPS and burst).

The same knobs as client-go's ``--kube-api-qps`` / ``--kube-api-burst``: up to ``burst`` calls
at once, refilled at ``qps`` per second. Time comes from the event loop's clock and sleep (both
injectable, so tests run on virtual time), never from the wall clock.

A caller takes its token at once, into debt if need be, and then sleeps off only its own share
of the debt: the k-th caller beyond the burst waits k / qps. Taking the token involves no await,
so callers are ordered without a lock and none waits behind another one's sleep; a caller
cancelled while it waits gives its token back.

Signature::

    TokenBucket(qps: float, burst: int, *, clock: Callable[[], float] | None = None,
                sleep: Callable[[float], Awaitable[None]] = asyncio.sleep)
        async .acquire() -> None
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


class TokenBucket:
    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("qps must be > 0 and burst >= 1")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(burst)
        self._updated: float | None = None

    def _now(self) -> float:
        return self._clock() if self._clock is not None else asyncio.get_running_loop().time()

    def reserve(self) -> float:
        """Take one token now; the seconds until it is really available (0 within the burst)."""
        now = self._now()
        if self._updated is not None:
            self._tokens = min(self.burst, self._tokens + (now - self._updated) * self.qps)
        self._updated = now
        self._tokens -= 1
        return -self._tokens / self.qps if self._tokens < 0 else 0.0

    async def acquire(self) -> None:
        """Take a token, possibly into debt, and sleep off this caller's part of the debt."""
        wait = self.reserve()
        if wait <= 0:
            return
        try:
            await self._sleep(wait)
        except asyncio.CancelledError:
            self._tokens += 1  # not used: the callers after this one need not wait for it
            raise
