"""Client-side rate limiting for Kubernetes API calls: a token bucket (QPS and burst).

The same knobs as client-go's ``--kube-api-qps`` / ``--kube-api-burst``: up to ``burst`` calls
at once, refilled at ``qps`` per second. Time comes from the event loop's clock and sleep (both
injectable, so tests run on virtual time), never from the wall clock.

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
        self._lock = asyncio.Lock()

    def _now(self) -> float:
        return self._clock() if self._clock is not None else asyncio.get_running_loop().time()

    async def acquire(self) -> None:
        """Take a token now, possibly into debt, and sleep off the debt (no polling loop)."""
        async with self._lock:
            now = self._now()
            if self._updated is not None:
                self._tokens = min(self.burst, self._tokens + (now - self._updated) * self.qps)
            self._updated = now
            self._tokens -= 1
            if self._tokens < 0:
                await self._sleep(-self._tokens / self.qps)
