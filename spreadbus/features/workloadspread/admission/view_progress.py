"""Waiting, on the admission path, for the view to fold more of the observation stream.

A review sometimes cannot be decided from the view as it is: the reservation ledger assumes
observations the view has not folded yet
(:mod:`spreadbus.features.workloadspread.admission.ledger_transactions`), or the pod's owner or a
just-allowed WorkloadSpread is not in it yet
(:mod:`spreadbus.features.workloadspread.admission.admission`). Such a request waits, bounded by a
deadline, for the follower to fold more.

Trade-off: one shared event, replaced on each notification, instead of a waiter per sequence
number. A notification costs one ``set()`` whatever the number of waiters and schedules nothing,
so the follower may notify after every message; the price is that every waiter wakes on every
notification and re-checks its own condition, which is cheap next to a review's other work.
"""

from __future__ import annotations

import asyncio
from typing import Final

from spreadbus.features.workloadspread.admission.view import View

POLL_SECONDS: Final = 0.05
"""Longest wait for the next observation before a caller re-checks a condition that does not
depend on the view alone (a clock, hints heard from other replicas)."""


class ViewProgress:
    """Lets a request wait until the view has folded a given stream sequence.

    Each :meth:`notify` sets the current event and replaces it: waiters wake, re-check the
    view's position, and wait on the new event if they need more.
    """

    def __init__(self, view: View) -> None:
        self.view = view
        self._changed = asyncio.Event()

    def notify(self) -> None:
        """Called by the follower after it folded messages."""
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def wait_for(self, seq: int, timeout: float) -> bool:
        """Whether the view reached ``seq`` within ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.view.seq < seq:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                return self.view.seq >= seq
        return True

    async def wait_for_more(self, deadline: float) -> bool:
        """Wait up to :data:`POLL_SECONDS` for the next observation; False once ``deadline``
        (loop time) has passed, so a caller's polling loop knows when to give up."""
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            return False
        await self.wait_for(self.view.seq + 1, min(remaining, POLL_SECONDS))
        return True
