"""A service's pause (backoff, poll interval) ends as soon as it is asked to stop."""

from __future__ import annotations

import asyncio

from spreadbus.runtime.shutdown import sleep_unless_stopping

LONG = 3600.0
"""A pause no test could wait out: finishing at all means the stop ended it."""


async def test_a_stop_during_the_pause_ends_it_and_says_so() -> None:
    stopping = asyncio.Event()
    pause = asyncio.ensure_future(sleep_unless_stopping(stopping, LONG))
    await asyncio.sleep(0)
    assert not pause.done()
    stopping.set()
    done, _ = await asyncio.wait({pause}, timeout=10)
    assert done
    assert pause.result() is True


async def test_a_pause_while_already_stopping_returns_at_once() -> None:
    stopping = asyncio.Event()
    stopping.set()
    pause = asyncio.ensure_future(sleep_unless_stopping(stopping, LONG))
    done, _ = await asyncio.wait({pause}, timeout=10)
    assert done
    assert pause.result() is True


async def test_a_pause_without_a_stop_runs_out_and_says_not_stopping() -> None:
    assert await sleep_unless_stopping(asyncio.Event(), 0.01) is False


async def test_cancelling_a_pause_cancels_it_rather_than_reporting_a_stop() -> None:
    pause = asyncio.ensure_future(sleep_unless_stopping(asyncio.Event(), LONG))
    await asyncio.sleep(0)
    pause.cancel()
    done, _ = await asyncio.wait({pause}, timeout=10)
    assert done
    assert pause.cancelled()
