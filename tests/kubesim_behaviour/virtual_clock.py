"""An event loop whose clock jumps ahead whenever it would otherwise wait for a timer.

A test that must show something does *not* happen later (a retry after success, a second run of
a key) can wait a long simulated time without taking it: when nothing is ready and no I/O is
pending, the loop advances its clock to the next timer instead of sleeping. I/O still runs in
real time, so the loop suits tests of in-process components, not of servers across threads.
"""

from __future__ import annotations

import asyncio
import selectors
from typing import Any


class _SkippingSelector(selectors.DefaultSelector):
    """Polls without blocking and records the wait it skipped as elapsed time."""

    def __init__(self) -> None:
        super().__init__()
        self.skipped = 0.0

    def select(self, timeout: float | None = None) -> list[Any]:
        if timeout is None or timeout <= 0:
            return super().select(timeout)
        ready = super().select(0)
        if not ready:
            self.skipped += timeout
        return ready


class VirtualClockLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self._skipping = _SkippingSelector()
        super().__init__(self._skipping)

    def time(self) -> float:
        return super().time() + self._skipping.skipped
