"""A de-duplicating work queue with delayed adds, like client-go's rate-limited queue.

A key is queued at most once however many events name it; a key being processed and queued
again is processed once more afterwards, never concurrently. Failed keys are retried with
exponential backoff. ``workers`` tasks drain the queue so a controller waiting on one slow API
call (an admission webhook, say) still makes progress on other keys.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Final

from kubesim.interface import ApiError
from retrydelay import Backoff

log = logging.getLogger(__name__)
RETRY: Final = Backoff(first=0.02, cap=5.0)
"""Before a key that failed is reconciled again (a conflict is retried at once instead)."""


class WorkQueue:
    def __init__(
        self, name: str, reconcile: Callable[[str], Awaitable[None]], *, workers: int = 1
    ) -> None:
        self.name = name
        self._reconcile = reconcile
        self._workers = workers
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._queued: set[str] = set()
        self._active: set[str] = set()
        self._dirty: set[str] = set()
        self._failures: dict[str, int] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._tasks: list[asyncio.Task[None]] = []

    def add(self, key: str) -> None:
        if key in self._active:
            self._dirty.add(key)
            return
        if key in self._queued:
            return
        self._queued.add(key)
        self._queue.put_nowait(key)

    def add_after(self, key: str, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        existing = self._timers.get(key)
        when = loop.time() + delay
        if existing is not None:
            if existing.when() <= when:
                return
            existing.cancel()
        self._timers[key] = loop.call_at(when, self._fire, key)

    def _fire(self, key: str) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._work(), name=f"{self.name}-worker-{i}")
            for i in range(self._workers)
        ]

    async def stop(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    async def _work(self) -> None:
        while True:
            key = await self._queue.get()
            self._queued.discard(key)
            self._active.add(key)
            try:
                await self._reconcile(key)
                self._failures.pop(key, None)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                failures = self._failures.get(key, 0) + 1
                self._failures[key] = failures
                if isinstance(exc, ApiError) and exc.code == 409:
                    delay = 0.005
                else:
                    if not isinstance(exc, ApiError):
                        log.exception("%s: reconciling %s failed", self.name, key)
                    delay = RETRY.delay(failures)
                self.add_after(key, delay)
            finally:
                self._active.discard(key)
                if key in self._dirty:
                    self._dirty.discard(key)
                    self.add(key)
