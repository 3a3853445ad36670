"""When a rule wants to look at an object again: one wake-up time per object key.

The rules that implement :class:`~spreadbus.projection.planning.Timed` keep their wake-ups here:
a heap of (time, key) with stale entries skipped lazily, so rescheduling is O(log n) and the
planner's ``due``/``next_wake`` questions cost only what is due.
"""

from __future__ import annotations

import heapq


class WakeSchedule:
    def __init__(self) -> None:
        self._at: dict[str, float] = {}
        self._heap: list[tuple[float, str]] = []

    def get(self, key: str) -> float | None:
        return self._at.get(key)

    def set(self, key: str, at: float | None) -> None:
        """Wake ``key`` at ``at`` instead of any earlier plan; ``None`` cancels it."""
        if at is None:
            self._at.pop(key, None)
            return
        if self._at.get(key) == at:
            return
        self._at[key] = at
        heapq.heappush(self._heap, (at, key))

    def earliest(self, key: str, at: float) -> None:
        """Wake ``key`` at ``at`` unless it is already woken sooner."""
        current = self._at.get(key)
        if current is None or at < current:
            self.set(key, at)

    def due(self, now: float) -> list[str]:
        """The keys whose time has come, each handed out once."""
        out: list[str] = []
        while self._heap and self._heap[0][0] <= now:
            at, key = heapq.heappop(self._heap)
            if self._at.get(key) == at:
                del self._at[key]
                out.append(key)
        return out

    def next_wake(self) -> float | None:
        while self._heap and self._at.get(self._heap[0][1]) != self._heap[0][0]:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None
