"""Hold an object's MODIFIED observations for a moment and publish only the latest.

A pod going from created to Ready is modified three or four times within a few tens of
milliseconds (bound, containers creating, running, ready), and every consumer of the bus pays
for each observation: the bus stores it, and the planner and every webhook replica decode and
fold it, only for the next one to replace it (the KUBE stream keeps the last observation of
each object, and decisions read projected state, never the sequence of events). So a MODIFIED
observation waits up to ``seconds`` after the first one of its window; a newer MODIFIED of the
same object replaces it meanwhile. What never waits: ADDED (a new pod is how the webhook's
reservations are seen to land), DELETED (it carries the object's final state, so a held
MODIFIED is dropped in its favour), and anything when ``seconds`` is 0.

Per object, what goes out is in the watch's order and ends with the object's latest state; an
observation waits at most ``seconds``. Across objects the order may change (an object observed
later may be published before an earlier held one), which the separate watches of different
resources never promised either. Time is a parameter: this module reads no clock.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class ModifiedHold(Generic[T]):
    def __init__(self, seconds: float) -> None:
        if not seconds >= 0:
            raise ValueError(f"seconds must be >= 0, not {seconds}")
        self.seconds = seconds
        self.superseded = 0
        """Observations replaced by a newer one of their object before they went out."""
        self._held: dict[Hashable, tuple[float, T]] = {}
        """Key -> (when its window started, latest change); insertion order is window order."""

    def __len__(self) -> int:
        return len(self._held)

    def offer(self, key: Hashable, event: str, change: T, now: float) -> list[T]:
        """What to publish now, in order, for a ``change`` of ``event`` to object ``key``."""
        if event == "MODIFIED" and self.seconds > 0:
            held = self._held.get(key)
            if held is None:
                self._held[key] = (now, change)
            else:
                self._held[key] = (held[0], change)  # the window keeps its start and its place
                self.superseded += 1
            return []
        held = self._held.pop(key, None)
        if held is None:
            return [change]
        if event == "DELETED":
            self.superseded += 1
            return [change]
        return [held[1], change]

    def due(self, now: float) -> list[T]:
        """Held changes whose window has ended by ``now``, oldest window first."""
        out: list[T] = []
        while self._held:
            key, (since, change) = next(iter(self._held.items()))
            if since + self.seconds > now:
                break
            del self._held[key]
            out.append(change)
        return out

    def next_due(self) -> float | None:
        """When the oldest window ends (None: nothing held)."""
        for since, _ in self._held.values():
            return since + self.seconds
        return None

    def drain(self) -> list[T]:
        """Everything held, oldest window first, leaving nothing held."""
        out = [change for _, change in self._held.values()]
        self._held.clear()
        return out
