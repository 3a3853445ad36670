"""Connections whose request never finishes arriving cannot keep the review slots: once a request
has been arriving for ``STALLED_SECONDS``, its connection is evicted for a new one as an idle
connection is, however often its client sends another byte."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from services.webhook import review_protocol
from services.webhook.review_protocol import Answer, Route
from tests.fixtures.polling import wait_until_async
from tests.webhook.plain_review_server import serving
from tests.webhook.test_review_protocol_speaks_the_api_servers_dialect import (
    closed,
    connection,
    post,
    read_answer,
)

STALLED = 0.3
PARTIAL = b"POST /echo HTTP/1.1\r\nHost: webhook\r\n"


async def echo(body: bytes, query: str) -> Answer:
    return 200, body


def too_large() -> Answer:
    return 413, b"{}"


ROUTES = {"/echo": Route(echo, too_large)}


@pytest.fixture(autouse=True)
def short_stall(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(review_protocol, "STALLED_SECONDS", STALLED)


async def test_a_request_arriving_too_long_is_evicted_and_a_fresh_one_is_not() -> None:
    async with serving(ROUTES, max_connections=2) as (url, server), \
            connection(url) as (old_r, old_w), connection(url) as (young_r, young_w):
        old_w.write(PARTIAL)
        await wait_until_async(lambda: server.connections == 2
                               and not all(c.idle for c in server._live), what="one arriving")
        young_w.write(PARTIAL)
        await asyncio.sleep(0.05)
        async with connection(url) as (reader, _):
            assert await closed(reader), "both requests began just now: the new one goes"
        assert (server.refused, server.evicted) == (1, 0)

        await asyncio.sleep(STALLED)
        async with connection(url) as (reader, writer):
            writer.write(post(b"fresh"))
            assert await read_answer(reader) == (200, {"content-type": "application/json; "
                                                       "charset=utf-8", "content-length": "5"},
                                                 b"fresh")
        assert await closed(old_r), "the request arriving longest made room"
        assert server.evicted == 1
        young_w.write(b"Content-Length: 1\r\n\r\nx")
        assert (await read_answer(young_r))[2] == b"x", "the other one is kept"


async def test_a_byte_now_and_then_does_not_make_a_request_young_again() -> None:
    async with serving(ROUTES, max_connections=1) as (url, server), \
            connection(url) as (slow_r, slow_w):
        stop = asyncio.Event()

        async def dribble() -> None:
            for byte in PARTIAL:
                slow_w.write(bytes([byte]))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), STALLED / 6)
                if stop.is_set():
                    return

        sending = asyncio.create_task(dribble())
        try:
            await asyncio.sleep(STALLED * 1.5)
            assert not sending.done(), "still sending its head"
            async with connection(url) as (reader, writer):
                writer.write(post(b"fresh"))
                assert (await read_answer(reader))[2] == b"fresh"
            assert await closed(slow_r)
            assert (server.evicted, server.refused) == (1, 0)
        finally:
            stop.set()
            await sending


async def test_a_pipelined_request_left_half_sent_after_an_answer_stalls_too() -> None:
    async with serving(ROUTES, max_connections=1) as (url, server), \
            connection(url) as (reader, writer):
        writer.write(post(b"whole") + PARTIAL)
        assert (await read_answer(reader))[2] == b"whole"
        await asyncio.sleep(STALLED * 1.5)
        async with connection(url) as (new_r, new_w):
            new_w.write(post(b"fresh"))
            assert (await read_answer(new_r))[2] == b"fresh"
        assert await closed(reader)
        assert server.evicted == 1
