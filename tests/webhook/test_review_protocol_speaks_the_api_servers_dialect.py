"""The review paths' HTTP/1.1: what the API server sends is answered, in order, on kept-alive
connections; anything else is refused with the right status and the connection closed."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.webhook.review_protocol import Answer, ReviewServer, Route
from tests.fixtures.polling import wait_until_async
from tests.webhook.plain_review_server import serving


async def echo(body: bytes, query: str) -> Answer:
    return 200, b'{"body":"%s","query":"%s"}' % (body, query.encode())


def too_large() -> Answer:
    return 413, b'{"too":"large"}'


ROUTES = {"/echo": Route(echo, too_large)}


def post(body: bytes, path: str = "/echo", *headers: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: webhook", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def read_answer(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    """One response: status, headers (lower-case names) and body."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    status = int(head[0].split(" ")[1])
    headers = {}
    for line in head[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return status, headers, body


@asynccontextmanager
async def connection(
    url: str,
) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        yield reader, writer
    finally:
        writer.close()


async def closed(reader: asyncio.StreamReader) -> bool:
    try:
        return await asyncio.wait_for(reader.read(1), 5) == b""
    except ConnectionResetError:
        return True


async def test_requests_on_one_kept_alive_connection_are_answered_in_order() -> None:
    async with serving(ROUTES) as (url, server), connection(url) as (reader, writer):
        for n in range(3):
            writer.write(post(b"r%d" % n, f"/echo?timeout={n}s"))
            status, headers, body = await read_answer(reader)
            assert (status, body) == (200, b'{"body":"r%d","query":"timeout=%ds"}' % (n, n))
            assert headers["content-type"] == "application/json; charset=utf-8"
            assert "connection" not in headers
        assert server.connections == 1


async def test_pipelined_requests_wait_for_the_answer_before_them() -> None:
    release = asyncio.Event()
    order: list[bytes] = []

    async def slow_first(body: bytes, query: str) -> Answer:
        order.append(body)
        if body == b"first":
            await release.wait()
        return 200, body

    routes = {"/echo": Route(slow_first, too_large)}
    async with serving(routes) as (url, _), connection(url) as (reader, writer):
        writer.write(post(b"first") + post(b"second"))  # in one packet
        await asyncio.sleep(0.05)
        writer.write(post(b"third"))  # while the first is being answered
        await asyncio.sleep(0.05)
        assert order == [b"first"], "a later request was started before the first was answered"
        release.set()
        answers = [(await read_answer(reader))[2] for _ in range(3)]
    assert answers == [b"first", b"second", b"third"]


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (post(b"{}", "/nowhere"), 404),
        (b"GET /echo HTTP/1.1\r\nHost: webhook\r\n\r\n", 405),
        (b"POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 411),
        (b"POST /echo\r\n\r\n", 400),
        (b"POST echo HTTP/1.1\r\n\r\n", 400),
        (b"POST /echo HTTP/1.1\r\nno colon here\r\n\r\n", 400),
        (b"POST /echo HTTP/1.1\r\nX-Folded: a\r\n  b\r\n\r\n", 400),
        (b"POST /echo HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400),
        (b"POST /echo HTTP/1.1\r\nContent-Length: -2\r\n\r\n{}", 400),
        (b"POST /echo HTTP/1.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", 431),
    ],
)
async def test_what_the_api_server_never_sends_is_refused_and_the_connection_closed(
    request_bytes: bytes, status: int
) -> None:
    async with serving(ROUTES) as (url, _), connection(url) as (reader, writer):
        writer.write(request_bytes + post(b"after"))
        got, headers, _ = await read_answer(reader)
        assert got == status
        assert headers["connection"] == "close"
        if status == 405:
            assert headers["allow"] == "POST"
        assert await closed(reader), "the connection stayed open after a refusal"


async def test_a_body_over_the_limit_gets_the_routes_answer_unread() -> None:
    async with serving(ROUTES, max_body=10) as (url, _), connection(url) as (reader, writer):
        writer.write(post(b"x" * 11))
        assert await read_answer(reader) == (
            413, {"content-type": "application/json; charset=utf-8", "content-length": "15",
                  "connection": "close"}, b'{"too":"large"}')
        assert await closed(reader)


@pytest.mark.parametrize(
    "request_bytes",
    [
        post(b"bye", "/echo", "Connection: close"),
        b"POST /echo HTTP/1.0\r\nContent-Length: 3\r\n\r\nbye",
    ],
)
async def test_a_client_that_does_not_keep_the_connection_gets_it_closed_after_the_answer(
    request_bytes: bytes,
) -> None:
    async with serving(ROUTES) as (url, _), connection(url) as (reader, writer):
        writer.write(request_bytes)
        status, headers, _ = await read_answer(reader)
        assert (status, headers["connection"]) == (200, "close")
        assert await closed(reader)


async def test_http_1_0_asking_to_keep_the_connection_keeps_it() -> None:
    async with serving(ROUTES) as (url, _), connection(url) as (reader, writer):
        for _ in range(2):
            writer.write(b"POST /echo HTTP/1.0\r\nConnection: keep-alive\r\n"
                         b"Content-Length: 2\r\n\r\nhi")
            assert (await read_answer(reader))[0] == 200


async def test_expect_100_continue_is_answered_before_the_body_is_sent() -> None:
    async with serving(ROUTES) as (url, _), connection(url) as (reader, writer):
        writer.write(post(b"later", "/echo", "Expect: 100-continue")[: -len(b"later")])
        assert await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5) == (
            b"HTTP/1.1 100 Continue\r\n\r\n")
        writer.write(b"later")
        assert (await read_answer(reader))[2] == b'{"body":"later","query":""}'


async def test_an_idle_connection_and_a_request_that_never_completes_are_closed() -> None:
    async with serving(ROUTES, idle_timeout=0.2) as (url, server):
        async with connection(url) as (reader, writer):
            writer.write(post(b"once"))
            await read_answer(reader)
            assert await closed(reader), "an idle connection was kept"
        async with connection(url) as (reader, writer):
            writer.write(post(b"never sent in full")[:-3])
            assert await closed(reader), "a request that never completed kept its connection"
        assert server.connections == 0


async def test_a_route_that_raises_is_answered_500_and_the_connection_closed() -> None:
    async def broken(body: bytes, query: str) -> Answer:
        raise RuntimeError("bug")

    async with serving({"/echo": Route(broken, too_large)}) as (url, _), \
            connection(url) as (reader, writer):
        writer.write(post(b"{}"))
        assert (await read_answer(reader))[0] == 500
        assert await closed(reader)


async def test_closing_lets_answers_in_flight_finish_closes_idle_connections_and_aborts_late(
) -> None:
    release = asyncio.Event()
    cancelled: list[bytes] = []

    async def waits(body: bytes, query: str) -> Answer:
        try:
            if body == b"stuck":
                await asyncio.Event().wait()
            await release.wait()
        except asyncio.CancelledError:
            cancelled.append(body)
            raise
        return 200, body

    async with serving({"/echo": Route(waits, too_large)}) as (url, server), \
            connection(url) as (idle, _), connection(url) as (busy, busy_writer), \
            connection(url) as (stuck, stuck_writer):
        busy_writer.write(post(b"busy"))
        stuck_writer.write(post(b"stuck"))
        await wait_until_async(lambda: server.connections == 3, what="three connections")
        await asyncio.sleep(0.05)  # both requests reach their route
        closing = asyncio.create_task(server.close(grace=0.5))
        assert await closed(idle), "an idle connection outlived the close"
        release.set()
        status, headers, body = await read_answer(busy)
        assert (status, body, headers["connection"]) == (200, b"busy", "close")
        assert await closed(busy)
        await asyncio.wait_for(closing, 5)
        assert await closed(stuck), "an answer past the grace kept its connection"
        assert server.connections == 0
        assert cancelled == [b"stuck"], "an answer past the grace was left running"


# -- framing, whatever the packets -------------------------------------------------------------


class Wire(asyncio.Transport):
    """A transport that keeps what is written to it and, closed, tells its protocol soon after,
    as a socket's does."""

    def __init__(self, protocol: asyncio.Protocol) -> None:
        super().__init__()
        self.protocol = protocol
        self.sent = bytearray()
        self.closing = False

    def write(self, data: Any) -> None:
        self.sent += data

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        if not self.closing:
            self.closing = True
            asyncio.get_running_loop().call_soon(self.protocol.connection_lost, None)

    def abort(self) -> None:
        self.close()

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


STREAM = post(b'{"a":1}') + post(b"", "/echo?timeout=3s") + post(b"x" * 300, "/echo", "X-A: b")


def answers_for(chunks: list[bytes]) -> bytes:
    async def run() -> bytes:
        server = ReviewServer(ROUTES, max_body=1000)
        protocol = server()
        wire = Wire(protocol)
        protocol.connection_made(wire)
        for chunk in chunks:
            protocol.data_received(chunk)
            await asyncio.sleep(0)
        for _ in range(10):
            await asyncio.sleep(0)
        await server.close(0.1)
        return bytes(wire.sent)

    return asyncio.run(run())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, len(STREAM) - 1), max_size=12, unique=True))
def test_where_the_stream_is_cut_into_packets_changes_no_answer(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(STREAM)]
    chunks = [STREAM[a:b] for a, b in itertools.pairwise(bounds)]
    assert answers_for(chunks) == answers_for([STREAM])


def test_the_whole_stream_is_answered_three_times() -> None:
    assert answers_for([STREAM]).count(b"HTTP/1.1 200 OK\r\n") == 3


async def test_one_connection_over_the_cap_evicts_the_longest_idle_one() -> None:
    async with serving(ROUTES, max_connections=3) as (url, server), \
            connection(url) as (old_r, _), connection(url) as (mid_r, mid_w), \
            connection(url) as (new_r, new_w):
        await wait_until_async(lambda: server.connections == 3, what="three kept")
        # The two younger ones were answered since: the first is the one idle longest.
        for reader, writer in ((mid_r, mid_w), (new_r, new_w)):
            writer.write(post(b"x"))
            assert (await read_answer(reader))[0] == 200
        async with connection(url) as (reader, writer):
            writer.write(post(b"over"))
            status, _, body = await read_answer(reader)
            assert (status, body) == (200, b'{"body":"over","query":""}')
            assert await closed(old_r), "the longest idle connection made room"
            assert (server.evicted, server.refused, server.connections) == (1, 0, 3)
            mid_w.write(post(b"still"))
            assert (await read_answer(mid_r))[0] == 200, "the others are kept"


async def test_one_connection_over_the_cap_is_refused_when_every_kept_one_is_busy() -> None:
    release = asyncio.Event()

    async def slow(body: bytes, query: str) -> Answer:
        await release.wait()
        return 200, b"{}"

    async with serving({"/slow": Route(slow, too_large)}, max_connections=2) as (url, server), \
            connection(url) as (r1, w1), connection(url) as (r2, w2):
        for writer in (w1, w2):
            writer.write(post(b"", "/slow"))
        await wait_until_async(
            lambda: server.connections == 2 and not any(c.idle for c in server._live),
            what="both requests under way")
        async with connection(url) as (reader, _):
            assert await closed(reader), "no idle connection to evict: the new one goes"
        assert (server.refused, server.evicted) == (1, 0)
        release.set()
        for reader in (r1, r2):
            status, _, _ = await read_answer(reader)
            assert status == 200
