"""A replay cancelled while a batch is being written returns only once that write is done, so
closing the store right after it never closes SQLite under a write (which crashes the process)."""

from __future__ import annotations

import asyncio
import threading
from typing import cast

from spreadbus.audit.replay import write_batch
from spreadbus.audit.store import AuditStore


class SlowStore:
    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.finished = False

    def apply(self, batch: list[tuple[int, str, bytes]]) -> int:
        self.started.set()
        self.release.wait(10)
        self.finished = True
        return len(batch)


async def test_cancelling_waits_for_the_write_under_way() -> None:
    store = SlowStore()
    task = asyncio.create_task(write_batch(cast(AuditStore, store), [(1, "s", b"{}")]))
    await asyncio.to_thread(store.started.wait, 10)
    task.cancel()
    await asyncio.sleep(0.05)
    assert not task.done(), "the cancellation waits while the thread still writes"
    store.release.set()
    await asyncio.gather(task, return_exceptions=True)
    assert task.cancelled()
    assert store.finished


async def test_an_uncancelled_write_returns_what_it_folded() -> None:
    store = SlowStore()
    store.release.set()
    assert await write_batch(cast(AuditStore, store), [(1, "s", b"{}"), (2, "s", b"{}")]) == 2
