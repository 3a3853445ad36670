"""The plans an actuator holds and has not started, one queue per governor, handed out fairly.

A single durable consumer delivers plans in stream order, so one governor's backlog (a
UnitedDeployment creating its workloads, a rollout patching hundreds of pods) would hold back
every plan published after it. The actuator reads ahead and keeps what it read here; the next
plan to start is the oldest of the governor with the fewest plans running, the governors that tie
taking turns (round robin). So a governor with nothing running gets the next free worker,
whatever another's backlog, and within one governor plans start in the order they were
published. Pure bookkeeping: no I/O, no clock.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class FairQueue(Generic[T]):
    def __init__(self) -> None:
        self._waiting: OrderedDict[str, deque[T]] = OrderedDict()
        """Governor -> its plans not started, oldest first; in turn order, next turn first."""
        self._running: dict[str, int] = {}
        self._size = 0

    def __len__(self) -> int:
        """Plans waiting (not those running)."""
        return self._size

    def push(self, key: str, item: T) -> None:
        queue = self._waiting.get(key)
        if queue is None:
            queue = self._waiting[key] = deque()
        queue.append(item)
        self._size += 1

    def pop(self) -> tuple[str, T] | None:
        """The next plan to start and its governor (now counted as running); None when nothing
        waits. The governor goes to the end of the turn order."""
        chosen: str | None = None
        fewest = 0
        for key in self._waiting:
            running = self._running.get(key, 0)
            if chosen is None or running < fewest:
                chosen, fewest = key, running
                if running == 0:
                    break
        if chosen is None:
            return None
        queue = self._waiting.pop(chosen)
        item = queue.popleft()
        if queue:
            self._waiting[chosen] = queue  # back in line, behind the others
        self._size -= 1
        self._running[chosen] = fewest + 1
        return chosen, item

    def done(self, key: str) -> None:
        """A plan of ``key`` popped earlier has finished."""
        left = self._running.get(key, 0) - 1
        if left > 0:
            self._running[key] = left
        else:
            self._running.pop(key, None)

    def running(self, key: str) -> int:
        return self._running.get(key, 0)

    def waiting(self) -> Iterator[T]:
        """Every waiting plan (a snapshot: safe to push and pop while iterating)."""
        return iter([item for queue in self._waiting.values() for item in queue])

    def drain(self) -> list[T]:
        """Take every waiting plan out, in no particular order."""
        items = list(self.waiting())
        self._waiting.clear()
        self._size = 0
        return items
