"""How often a rule plans one governor, and when it looks at it again without any event.

A rule that reconciles whole governors (a WorkloadSpread, a UnitedDeployment, a
PodUnavailableBudget) plans each at most once per ``min_interval``: a governor planned moments
ago is woken at the end of the interval instead, so the changes that arrive meanwhile (a pod
starting, its status written) are taken in one round. The rule's own wake-ups (a requeue time, a
retry after its reconcile raised) are kept in the same schedule, which the planner reads through
:class:`~spreadbus.projection.planning.Timed` (``due`` and ``next_wake``).

Signatures::

    GovernorPacing(resource_key, min_interval)
        .paced(affected, now) -> iterator of the object keys to plan now, in key order
        .due(now) -> {(resource key, object key)} ; .next_wake() -> float | None
        .wake(okey, at | None)        # replaces the wake-up; None cancels it
        .wake_by(okey, at | None)     # the earliest asked for wins; None cancels it
        .forget(okey)                 # a governor gone: the next change plans it at once
    PacedRule: ``due`` and ``next_wake`` of a rule read from its ``pacing``
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from spreadbus.projection.wake_schedule import WakeSchedule


class GovernorPacing:
    """One rule's governors of one resource (``resource_key``, as the projection keys it)."""

    def __init__(self, resource_key: str, min_interval: float) -> None:
        self.resource_key = resource_key
        self.min_interval = min_interval
        self._wakes = WakeSchedule()
        self._planned_at: dict[str, float] = {}

    def paced(self, affected: Iterable[str], now: float) -> Iterator[str]:
        """The governors to plan now, in key order; the others are woken when their interval
        ends. A governor handed out counts as planned at ``now``."""
        for okey in sorted(affected):
            last = self._planned_at.get(okey)
            if last is not None and now - last < self.min_interval:
                # Planned moments ago: the changes since are taken in one go a little later.
                self._wakes.earliest(okey, last + self.min_interval)
                continue
            self._planned_at[okey] = now
            yield okey

    def due(self, now: float) -> set[tuple[str, str]]:
        """Keys to plan again because their time has come; each is handed out once."""
        return {(self.resource_key, okey) for okey in self._wakes.due(now)}

    def next_wake(self) -> float | None:
        return self._wakes.next_wake()

    def wake(self, okey: str, at: float | None) -> None:
        self._wakes.set(okey, at)

    def wake_by(self, okey: str, at: float | None) -> None:
        if at is None:
            self._wakes.set(okey, None)
        else:
            self._wakes.earliest(okey, at)

    def forget(self, okey: str) -> None:
        self._planned_at.pop(okey, None)


class PacedRule:
    """A rule whose own wake-ups are all in its :class:`GovernorPacing`: the planner's
    :class:`~spreadbus.projection.planning.Timed` reads them there."""

    pacing: GovernorPacing

    def due(self, now: float) -> set[tuple[str, str]]:
        return self.pacing.due(now)

    def next_wake(self) -> float | None:
        return self.pacing.next_wake()

    def _schedule(self, okey: str, at: float | None) -> None:
        """Replaces the governor's wake-up; ``None`` cancels it."""
        self.pacing.wake(okey, at)
