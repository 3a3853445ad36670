"""Reading ``HISTORY`` into the audit database: a bounded replay, or a live follow.

The stream is read with the services' :class:`~spreadbus.runtime.follower.StreamFollower` (raw
pull batches, no per-message awaits); the sink only queues ``(seq, subject, data)``, and the
loop here folds what is queued in one transaction at a time (:meth:`AuditStore.apply`), the
position committed with the rows. An interrupted replay therefore resumes after its last
committed batch, and a message delivered twice is skipped by its sequence.

A replay's range:

- it starts after the stored position; a new database starts at the first message stored at or
  after ``since`` (the stream's own timestamps), or at the stream's first message;
- it ends at the stream's last message when the replay started, or before the first message
  stamped (``ts``) after ``until``; messages later in the stream are left for the next run.

If the window has dropped messages past the stored position, the replay goes on from the oldest
kept message and says how many it missed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

import msgspec
from nats.aio.client import Client
from nats.js.api import ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from spreadbus.audit.store import STREAM, AuditStore
from spreadbus.runtime.follower import StreamFollower

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
"""Called with (messages folded so far, messages in the range)."""


class _Stamp(msgspec.Struct):
    ts: float = 0.0


_STAMP: Final = msgspec.json.Decoder(_Stamp)


@dataclass(frozen=True)
class ReplayResult:
    folded: int
    last_seq: int
    missed: int = 0
    """Messages the window dropped between the stored position and the oldest kept one."""


def stamp(data: bytes) -> float:
    """A message's ``ts``; 0 when it has none or is not JSON."""
    try:
        return _STAMP.decode(data).ts
    except msgspec.DecodeError:
        return 0.0


async def first_seq_since(nc: Client, since: float) -> int | None:
    """The sequence of the first message stored at or after ``since``; None if there is none."""
    js = nc.jetstream()
    start = datetime.fromtimestamp(since, UTC)
    sub = await js.pull_subscribe("", stream=STREAM, config=ConsumerConfig(
        deliver_policy=DeliverPolicy.BY_START_TIME, opt_start_time=start,
        inactive_threshold=30.0))
    try:
        messages = await sub.fetch(1, timeout=2.0)
    except TimeoutError:
        return None
    finally:
        await sub.unsubscribe()
    return messages[0].metadata.sequence.stream if messages else None


async def stream_bounds(nc: Client) -> tuple[int, int]:
    """(first, last) sequence of ``HISTORY``; (0, 0) when it does not exist."""
    try:
        info = await nc.jetstream().stream_info(STREAM)
    except NotFoundError:
        return 0, 0
    return info.state.first_seq, info.state.last_seq


async def replay(
    nc: Client,
    store: AuditStore,
    *,
    since: float | None = None,
    until: float | None = None,
    progress: Progress | None = None,
    batch_seconds: float = 0.02,
    max_batch: int = 20_000,
) -> ReplayResult:
    """Fold ``HISTORY`` from the stored position to the end of the range, then finish.

    At most ``max_batch`` messages go into one transaction, each batch what arrived while the
    previous one was written; an empty queue is looked at again after ``batch_seconds``."""
    first, end = await stream_bounds(nc)
    # ``since`` is where the database began; ``until`` bounds this run only.
    store.set_range(since if store.last_seq == 0 else store.since, until)
    start = store.last_seq + 1
    if store.last_seq == 0 and since is not None:
        found = await first_seq_since(nc, since)
        start = found if found is not None else end + 1
    missed = 0
    if first and start < first:
        missed = first - start if store.last_seq else 0
        if missed:
            log.warning("the history window dropped messages past the stored position",
                        extra={"position": store.last_seq, "oldest": first, "missed": missed})
        start = first
    total = max(0, end - start + 1)
    if progress is not None:
        progress(0, total)
    if total == 0:
        store.finish()
        return ReplayResult(0, store.last_seq, missed)
    if total > store.messages:
        # More to write than the file holds: the indexes are made once, when it finishes.
        store.defer_indexes()
    queue: list[tuple[int, str, bytes]] = []
    follower = StreamFollower(nc, stream=STREAM, sink=lambda s, subj, d: queue.append((s, subj, d)),
                              start_seq=start, name="audit-replay")
    task = asyncio.create_task(follower.run())
    folded = 0
    done = False
    try:
        while not done:
            # Whatever arrived while the last batch was written is the next batch; only an empty
            # queue waits. Either way the follower (and a cancellation) get their turn here.
            await asyncio.sleep(0 if queue else batch_seconds)
            if task.done():
                task.result()
                break
            batch, queue[:] = queue[:max_batch], queue[max_batch:]
            take = []
            for seq, subject, data in batch:
                if seq > end or (until is not None and stamp(data) > until):
                    done = True
                    break
                take.append((seq, subject, data))
            # Written from a worker thread, so the stream is read while SQLite writes.
            folded += await write_batch(store, take)
            if take and take[-1][0] >= end:
                done = True
            if progress is not None:
                progress(folded, total)
    finally:
        follower.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    await asyncio.to_thread(store.finish)
    return ReplayResult(folded, store.last_seq, missed)


async def write_batch(store: AuditStore, batch: list[tuple[int, str, bytes]]) -> int:
    """Fold ``batch`` on a worker thread; a cancellation waits for a write under way.

    The thread cannot be stopped, and the caller may close the store as soon as the replay
    ends: closing SQLite under a write crashes the process, so the write finishes first (its
    transaction commits) and the cancellation goes on after it.
    """
    job = asyncio.ensure_future(asyncio.to_thread(store.apply, batch))
    try:
        return await asyncio.shield(job)
    except asyncio.CancelledError:
        await asyncio.gather(job, return_exceptions=True)
        raise


async def follow(
    nc: Client,
    store: AuditStore,
    *,
    stopping: asyncio.Event,
    on_batch: Callable[[int], None] | None = None,
    caught_up: Callable[[bool], None] | None = None,
    batch_seconds: float = 0.5,
) -> None:
    """Fold ``HISTORY`` live from the stored position until ``stopping`` is set."""
    first, _ = await stream_bounds(nc)
    start = max(store.last_seq + 1, first or 1)
    queue: list[tuple[int, str, bytes]] = []
    follower = StreamFollower(nc, stream=STREAM, sink=lambda s, subj, d: queue.append((s, subj, d)),
                              start_seq=start, name="audit-follow")
    task = asyncio.create_task(follower.run())
    try:
        while not stopping.is_set():
            try:
                await asyncio.wait_for(stopping.wait(), batch_seconds)
            except TimeoutError:
                pass
            if task.done():
                task.result()
                return
            batch, queue[:] = list(queue), []
            folded = await write_batch(store, batch)
            if on_batch is not None and folded:
                on_batch(folded)
            if caught_up is not None:
                caught_up(follower.caught_up and not queue)
    finally:
        follower.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
