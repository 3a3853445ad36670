"""kubesim's webhook client against a scripted HTTPS server: framing, reuse, limits, failures.

The server here is a bare asyncio TLS server that reads each request and answers with bytes a
test chooses, so the client meets the answers a real webhook may give (chunked bodies,
``Connection: close``, a connection dropped while idle, an answer that comes too late).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kubesim.webhook_client import CallError, WebhookClient, _Deadline
from tlsserving import CertKeyPair, issue_server_cert, make_ca

Answer = Callable[["Exchange"], Awaitable[bytes | None]]
"""The bytes to send back for a request; None closes the connection without an answer."""


@dataclass
class Exchange:
    connection: int
    """Which connection (in order of acceptance) the request came on."""
    body: bytes


@dataclass
class ScriptedServer:
    answer: Answer
    port: int = 0
    exchanges: list[Exchange] = field(default_factory=list)
    connections: int = 0
    open_now: int = 0
    most_open: int = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        number = self.connections
        self.open_now += 1
        self.most_open = max(self.most_open, self.open_now)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                exchange = Exchange(number, await reader.readexactly(length))
                self.exchanges.append(exchange)
                reply = await self.answer(exchange)
                if reply is None:
                    return
                try:
                    writer.write(reply)
                    await writer.drain()
                except ConnectionError:
                    return
                if b"connection: close" in reply.lower():
                    return
        finally:
            self.open_now -= 1
            writer.close()


def ok(body: bytes, *headers: str) -> bytes:
    lines = ["HTTP/1.1 200 OK", "Content-Type: application/json", *headers]
    if not any(h.lower().startswith(("transfer-encoding", "content-length")) for h in headers):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def chunked(*parts: bytes) -> bytes:
    body = b"".join(f"{len(p):x};ext=1\r\n".encode() + p + b"\r\n" for p in parts)
    return ok(body + b"0\r\n\r\n", "Transfer-Encoding: chunked")


async def empty_object(exchange: Exchange) -> bytes:
    return ok(b"{}")


@pytest.fixture(scope="module")
def ca() -> CertKeyPair:
    return make_ca("client-test-ca")


@pytest.fixture
def server_context(ca: CertKeyPair, tmp_path: Path) -> ssl.SSLContext:
    paths = issue_server_cert(ca, ["127.0.0.1", "hook.ns.svc"]).write(tmp_path, "hook")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(paths.cert, paths.key)
    return context


@pytest.fixture
def client_context(ca: CertKeyPair) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=ca.cert_pem.decode())


@pytest.fixture
async def client() -> AsyncIterator[WebhookClient]:
    c = WebhookClient(connections_per_endpoint=2)
    try:
        yield c
    finally:
        await c.close()


Start = Callable[[Answer], Awaitable[ScriptedServer]]


@pytest.fixture
async def start(server_context: ssl.SSLContext) -> AsyncIterator[Start]:
    servers: list[asyncio.Server] = []

    async def start(answer: Answer) -> ScriptedServer:
        scripted = ScriptedServer(answer)
        server = await asyncio.start_server(
            scripted.serve, "127.0.0.1", 0, ssl=server_context
        )
        servers.append(server)
        scripted.port = server.sockets[0].getsockname()[1]
        return scripted

    try:
        yield start
    finally:
        for server in servers:
            server.close()
            await server.wait_closed()


async def post(
    client: WebhookClient,
    server: ScriptedServer,
    context: ssl.SSLContext,
    body: bytes = b"{}",
    *,
    server_name: str = "127.0.0.1",
    timeout: float = 10,
) -> tuple[int, bytes]:
    return await client.post(
        host="127.0.0.1",
        port=server.port,
        path="/admit",
        context=context,
        server_name=server_name,
        body=body,
        timeout=timeout,
    )


async def test_chunked_and_sized_answers_are_read_whole_on_one_kept_alive_connection(
    client: WebhookClient, client_context: ssl.SSLContext, start: Start
) -> None:
    async def answer(exchange: Exchange) -> bytes:
        if exchange.body == b"chunked":
            return chunked(b'{"a":', b"1}")
        return ok(b'{"b":2}')

    server = await start(answer)
    assert await post(client, server, client_context, b"chunked") == (200, b'{"a":1}')
    assert await post(client, server, client_context, b"sized") == (200, b'{"b":2}')
    assert await post(client, server, client_context, b"chunked") == (200, b'{"a":1}')
    assert [e.connection for e in server.exchanges] == [1, 1, 1]


async def test_an_answer_framed_by_closing_the_connection_is_read_and_not_reused(
    client: WebhookClient, client_context: ssl.SSLContext, start: Start
) -> None:
    async def answer(exchange: Exchange) -> bytes:
        return b"HTTP/1.1 500 Oops\r\nConnection: close\r\n\r\nsomething broke"

    server = await start(answer)
    assert await post(client, server, client_context) == (500, b"something broke")
    assert await post(client, server, client_context) == (500, b"something broke")
    assert [e.connection for e in server.exchanges] == [1, 2]


async def test_a_kept_alive_connection_the_server_dropped_is_retried_once_on_a_new_one(
    client: WebhookClient, client_context: ssl.SSLContext, start: Start
) -> None:
    async def answer(exchange: Exchange) -> bytes | None:
        # the first connection answers once, then drops the next request unanswered
        if exchange.connection == 1 and len(server.exchanges) == 2:
            return None
        return ok(b'{"n":%d}' % len(server.exchanges))

    server = await start(answer)
    assert await post(client, server, client_context) == (200, b'{"n":1}')
    assert await post(client, server, client_context) == (200, b'{"n":3}')
    assert [e.connection for e in server.exchanges] == [1, 1, 2]


async def test_a_new_connection_closed_without_an_answer_is_a_failure_not_a_retry(
    client: WebhookClient, client_context: ssl.SSLContext, start: Start
) -> None:
    async def answer(exchange: Exchange) -> bytes | None:
        return None

    server = await start(answer)
    with pytest.raises(CallError, match="EOF"):
        await post(client, server, client_context)
    assert len(server.exchanges) == 1


async def test_a_late_answer_times_out_and_never_reaches_the_next_call(
    client: WebhookClient, client_context: ssl.SSLContext, start: Start
) -> None:
    released = asyncio.Event()

    async def answer(exchange: Exchange) -> bytes:
        if exchange.body == b"slow":
            await released.wait()
            return ok(b'"late"')
        return ok(b'"fresh"')

    server = await start(answer)
    with pytest.raises(TimeoutError):
        await post(client, server, client_context, b"slow", timeout=0.2)
    released.set()
    assert await post(client, server, client_context, b"quick") == (200, b'"fresh"')
    assert [e.connection for e in server.exchanges] == [1, 2]


async def test_calls_beyond_the_pool_limit_queue_for_the_open_connections(
    client: WebhookClient, client_context: ssl.SSLContext, start: Start
) -> None:
    async def answer(exchange: Exchange) -> bytes:
        await asyncio.sleep(0)
        return ok(exchange.body)

    server = await start(answer)
    bodies = [b"%d" % i for i in range(12)]
    answers = await asyncio.gather(*(post(client, server, client_context, b) for b in bodies))
    assert answers == [(200, b) for b in bodies]
    assert server.connections == 2
    assert server.most_open == 2


async def test_a_certificate_for_another_name_fails_verification(
    client: WebhookClient, client_context: ssl.SSLContext, start: Start
) -> None:
    server = await start(empty_object)
    with pytest.raises(CallError, match=r"^tls: failed to verify certificate: .*other.ns.svc"):
        await post(client, server, client_context, server_name="other.ns.svc")
    assert await post(client, server, client_context, server_name="hook.ns.svc") == (200, b"{}")
    assert len(server.exchanges) == 1


async def test_a_refused_connection_is_named_as_go_names_it(
    client: WebhookClient, client_context: ssl.SSLContext, start: Start
) -> None:
    server = await start(empty_object)
    server.port = 1
    with pytest.raises(CallError) as info:
        await post(client, server, client_context)
    assert str(info.value) == "dial tcp 127.0.0.1:1: connect: connection refused"


async def test_a_closed_client_refuses_calls(
    client: WebhookClient, client_context: ssl.SSLContext, start: Start
) -> None:
    server = await start(empty_object)
    assert (await post(client, server, client_context))[0] == 200
    await client.close()
    with pytest.raises(CallError, match="closed"):
        await post(client, server, client_context)


async def test_a_server_that_never_completes_the_handshake_times_out(
    client: WebhookClient, client_context: ssl.SSLContext
) -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the client gives up
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)  # plain TCP: no TLS answer
    try:
        port = server.sockets[0].getsockname()[1]
        with pytest.raises(TimeoutError):
            await client.post(
                host="127.0.0.1",
                port=port,
                path="/",
                context=client_context,
                server_name="127.0.0.1",
                body=b"{}",
                timeout=0.2,
            )
    finally:
        server.close()
        await server.wait_closed()


async def test_a_call_past_its_deadline_before_sending_leaves_its_connection_usable(
    client: WebhookClient, client_context: ssl.SSLContext, start: Start
) -> None:
    """A deadline that fires between a connection being handed over and the request being
    written fails the call, and the connection, with nothing in flight, serves the next one."""
    server = await start(empty_object)
    assert await post(client, server, client_context) == (200, b"{}")
    (pool,) = client._pools.values()
    loop = asyncio.get_running_loop()
    expired = _Deadline(loop, loop.time())
    fired: asyncio.Future[None] = loop.create_future()
    expired.watch(fired)
    with pytest.raises(TimeoutError):
        await fired  # its timer fired
    with pytest.raises(TimeoutError):
        await client._attempt(pool, b"unsent", expired, reuse=True)
    assert await post(client, server, client_context) == (200, b"{}")
    assert server.connections == 1
    assert [e.body for e in server.exchanges] == [b"{}", b"{}"]
