"""Client-side rate limiting for Kubernetes API calls: a token bucket (QPS and burst).

The same knobs as client-go's ``--kube-api-qps`` / ``--kube-api-burst``: up to ``burst`` calls
at once, refilled at ``qps`` per second. Time comes from the event loop's clock (injectable for
tests), never from the wall clock.

Signature::

    TokenBucket(qps: float, burst: int, *, clock: Callable[[], float] | None = None)
        async .acquire() -> None
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class TokenBucket:
    def __init__(self, qps: float, burst: int, *, clock: Callable[[], float] | None = None) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("qps must be > 0 and burst >= 1")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._updated: float | None = None
        self._lock = asyncio.Lock()

    def _now(self) -> float:
        return self._clock() if self._clock is not None else asyncio.get_running_loop().time()

    async def acquire(self) -> None:
        async with self._lock:
            while True:
                now = self._now()
                if self._updated is not None:
                    self._tokens = min(self.burst, self._tokens + (now - self._updated) * self.qps)
                self._updated = now
                if self._tokens >= 1:
                    self._tokens -= 1
                    return
                await asyncio.sleep((1 - self._tokens) / self.qps)
