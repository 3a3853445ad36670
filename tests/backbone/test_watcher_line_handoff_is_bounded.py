"""Watch lines cross from the reader thread to the loop in order, at most ``limit`` at a time."""

from __future__ import annotations

import asyncio
import threading

from services.watcher.resource_watch import LineHandoff
from tests.fixtures.polling import wait_until_async

LIMIT = 4


def start_reader(handoff: LineHandoff, lines: list[bytes], halt: threading.Event,
                 accepted: list[bool]) -> threading.Thread:
    def read() -> None:
        for line in lines:
            accepted.append(handoff.put(line, halt))

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


async def test_the_reader_waits_at_the_limit_and_every_line_arrives_in_order() -> None:
    handoff = LineHandoff(asyncio.get_running_loop(), limit=LIMIT)
    lines = [f"line-{i}".encode() for i in range(50)]
    accepted: list[bool] = []
    reader = start_reader(handoff, lines, threading.Event(), accepted)
    stopping = asyncio.Event()
    await wait_until_async(lambda: len(accepted) >= LIMIT, what="the buffer to fill")
    await asyncio.sleep(0.05)  # room for a reader that ignored the limit to run past it
    assert len(accepted) == LIMIT  # nothing taken yet: the reader waits for room
    received: list[object] = []
    for _ in range(10 * len(lines)):  # many more takes than needed; each gets a line or more
        if len(received) == len(lines):
            break
        batch = await handoff.take(stopping, 1.0)
        assert len(batch) <= LIMIT
        received.extend(batch)
    await asyncio.to_thread(reader.join, 10)
    assert received == lines
    assert accepted == [True] * len(lines)


async def test_closing_releases_a_reader_waiting_for_room_and_refuses_its_line() -> None:
    handoff = LineHandoff(asyncio.get_running_loop(), limit=LIMIT)
    accepted: list[bool] = []
    halt = threading.Event()
    reader = start_reader(handoff, [b"x"] * (LIMIT + 1), halt, accepted)
    await wait_until_async(lambda: len(accepted) >= LIMIT, what="the buffer to fill")
    halt.set()
    handoff.close()
    await asyncio.to_thread(reader.join, 10)
    assert not reader.is_alive()
    assert accepted == [True] * LIMIT + [False]
