"""Concurrent callers of the token bucket wait side by side, each only for its own share."""

from __future__ import annotations

import asyncio

import pytest

from spreadbus.runtime.rate_limit import TokenBucket


class HeldSleeps:
    """A virtual clock whose sleeps are recorded and end only when the test releases them."""

    def __init__(self) -> None:
        self.now = 0.0
        self.requested: list[float] = []
        self._release = asyncio.Event()

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.requested.append(seconds)
        await self._release.wait()

    def release(self) -> None:
        self._release.set()


async def settle() -> None:
    """Let every ready task run until it blocks (no time passes)."""
    for _ in range(10):
        await asyncio.sleep(0)


async def drained_with_one_asleep(time: HeldSleeps) -> tuple[TokenBucket, asyncio.Task[None]]:
    """A one-token bucket (10/s) whose token is taken, and a second caller asleep for the next."""
    bucket = TokenBucket(qps=10, burst=1, clock=time.clock, sleep=time.sleep)
    await bucket.acquire()
    asleep = asyncio.create_task(bucket.acquire())
    await settle()
    return bucket, asleep


async def test_waiting_callers_sleep_at_the_same_time_each_for_its_place_in_line() -> None:
    time = HeldSleeps()
    bucket = TokenBucket(qps=10, burst=2, clock=time.clock, sleep=time.sleep)
    done: list[int] = []

    async def call(i: int) -> None:
        await bucket.acquire()
        done.append(i)

    tasks = [asyncio.create_task(call(i)) for i in range(5)]
    await settle()
    # Two pass within the burst; the other three are all asleep already, not queued behind
    # the first sleeper, and each sleeps only until its own token: 0.1, 0.2, 0.3 s.
    assert sorted(done) == [0, 1]
    assert time.requested == pytest.approx([0.1, 0.2, 0.3])
    time.release()
    await asyncio.gather(*tasks)
    assert sorted(done) == [0, 1, 2, 3, 4]


async def test_time_that_passed_shortens_the_wait_of_later_callers() -> None:
    time = HeldSleeps()
    bucket, first = await drained_with_one_asleep(time)
    time.now = 0.25  # 2.5 tokens' worth of time: the debt of one is paid, 1.5 tokens refilled
    second = asyncio.create_task(bucket.acquire())
    await settle()
    assert time.requested == pytest.approx([0.1])  # the second one had its token at once
    assert second.done()
    time.release()
    await first


async def test_a_cancelled_waiter_gives_its_token_back() -> None:
    time = HeldSleeps()
    bucket, cancelled = await drained_with_one_asleep(time)
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    waiting = asyncio.create_task(bucket.acquire())
    await settle()
    # Without the refund the newcomer would wait 0.2 s, behind a token nobody used.
    assert time.requested == pytest.approx([0.1, 0.1])
    time.release()
    await waiting
