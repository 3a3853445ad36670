"""Reading what a stream holds and waiting for it, for the member bus tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from nats.js.client import JetStreamContext


async def subjects_held(js: JetStreamContext, stream: str) -> dict[str, int]:
    """Subject -> how many messages the stream holds on it."""
    info = await js.stream_info(stream, subjects_filter=">")
    return dict(info.state.subjects or {})


async def messages(js: JetStreamContext, stream: str) -> list[tuple[str, bytes]]:
    """Every message the stream holds, in stream order, as (subject, payload)."""
    info = await js.stream_info(stream)
    found = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        msg = await js.get_msg(stream, seq)
        found.append((msg.subject or "", msg.data or b""))
    return found


async def wait_for(what: str, check: Callable[[], Awaitable[bool]], timeout: float = 60.0
                   ) -> None:
    """Until ``check`` holds; the sourcing retry interval is 10-20 s after a link returns."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(0.05)
