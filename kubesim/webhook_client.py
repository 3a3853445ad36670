"""The HTTPS client kubesim calls webhooks with: HTTP/1.1 POSTs over kept-alive TLS connections.

Every admission call of every pod creation goes through here, so the client is built for cost
per call rather than generality. It speaks just what a webhook answers with: one POST at a
time per connection (no pipelining), a response framed by ``Content-Length``, chunked encoding,
or the end of the connection, and ``Connection: close``. What it spares, compared with a general
client, is the per-request machinery: the request is one ``transport.write`` (one TLS record for
a review under 16 KiB), the response is parsed by an :class:`asyncio.Protocol` straight from the
TLS transport's buffer, and a call on an idle connection creates one future and one timer.

Connections are pooled per endpoint: (address, port, TLS context, server name). A pool opens
connections lazily, up to its limit, and lends the most recently returned idle one first (the
one least likely to have been closed by the server in the meantime). When all are lent, callers
queue and get the next one returned: the limit bounds the TLS handshakes a burst costs both
sides, while a webhook that awaits something per review still gets as many reviews in flight as
the limit allows. A connection the server closed while idle leaves its pool as it closes. One
whose close is noticed only after a request was written to it (it closed with not a byte of
answer) is retried once on a new connection, opened at once even when callers queue (so the
pool may briefly hold one more than its limit): the server closed it while idle, so it never read
the request. Go's client retries a POST only when it knows nothing was written; an asyncio
transport cannot tell, and a webhook that crashed while handling the request is refused on the
new connection anyway.

``timeout`` bounds the whole call: waiting for a connection, connecting with the TLS handshake,
and the answer. A call that times out or is cancelled with its request in flight aborts its
connection: a late answer would otherwise be read as the next call's.

Contexts made to present a :class:`ClientCertificate` authenticate every connection they open,
as kube-apiserver does for the webhooks its AdmissionConfiguration's kubeconfig names a
``client-certificate`` for; kubesim has one for every webhook (the kubeconfig's ``*`` entry).

Failures raise :class:`CallError` with Go's wording where a webhook author would look for it
(``dial tcp 127.0.0.1:1: connect: connection refused``, ``tls: failed to verify certificate:
...``); a timeout raises :class:`TimeoutError`.
"""

from __future__ import annotations

import asyncio
import errno
import ssl
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

MAX_HEADER_BYTES: Final = 64 * 1024
MAX_BODY_BYTES: Final = 64 * 1024 * 1024
"""Answers above this size are refused rather than buffered (a webhook's answer is small)."""


@dataclass(frozen=True, slots=True)
class ClientCertificate:
    """The certificate and key (PEM files) the client authenticates to webhooks with."""

    cert: Path
    key: Path

    def present_with(self, context: ssl.SSLContext) -> None:
        """Make ``context`` present this certificate; raises :class:`OSError` or
        :class:`ssl.SSLError` when the files cannot be read or do not match."""
        context.load_cert_chain(self.cert, self.key)


class CallError(Exception):
    """The call failed before a complete answer arrived; the message says why."""


class _Closed(CallError):
    """The connection closed before the answer was complete."""

    def __init__(self, message: str, *, nothing_received: bool) -> None:
        super().__init__(message)
        self.nothing_received = nothing_received


class _Stale(Exception):
    """A reused connection closed without answering: the server had closed it while idle."""


Response = tuple[int, bytes]
"""(status code, body)."""

_HEAD: Final = 0
_LENGTH: Final = 1
_CHUNK_SIZE: Final = 2
_CHUNK_DATA: Final = 3
_TRAILER: Final = 4
_UNTIL_CLOSE: Final = 5


class _Connection(asyncio.Protocol):
    """One kept-alive connection; parses the answer to the request in flight."""

    def __init__(self, pool: _Pool) -> None:
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._waiter: asyncio.Future[Response] | None = None
        self._buf = bytearray()
        self._received = False
        self._state = _HEAD
        self._status = 0
        self._remaining = 0
        self._keep_alive = True
        self._body = bytearray()

    # --- asyncio.Protocol ----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._waiter is None:
            # bytes nobody asked for: the stream is out of step, so the connection is unusable
            self.abort()
            return
        self._received = True
        self._buf += data
        try:
            self._parse()
        except CallError as e:
            self._fail(e)
            self.abort()

    def eof_received(self) -> bool | None:
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.pool.forget(self)
        if self._waiter is None or self._waiter.done():
            return
        if self._state == _UNTIL_CLOSE:
            self._body += self._buf
            self._finish(keep_alive=False)
            return
        why = "EOF" if exc is None else str(exc) or type(exc).__name__
        self._fail(_Closed(why, nothing_received=not self._received))

    # --- calls ---------------------------------------------------------------------------------

    def send(self, request: bytes, waiter: asyncio.Future[Response]) -> None:
        assert self.transport is not None
        self._waiter = waiter
        self._received = False
        self._state = _HEAD
        self._body = bytearray()
        self.transport.write(request)

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def _fail(self, error: Exception) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)

    def _finish(self, *, keep_alive: bool) -> None:
        waiter, self._waiter = self._waiter, None
        if not keep_alive or self._buf:
            # a server that closes after this answer, or sent more than one answer
            self.abort()
        if waiter is not None and not waiter.done():
            waiter.set_result((self._status, bytes(self._body)))

    # --- parsing -------------------------------------------------------------------------------

    def _parse(self) -> None:
        buf = self._buf
        while True:
            state = self._state
            if state == _HEAD:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    if len(buf) > MAX_HEADER_BYTES:
                        raise CallError("the response headers are too large")
                    return
                head = bytes(buf[:end]).decode("latin-1")
                del buf[: end + 4]
                self._head(head)
            elif state == _LENGTH:
                if len(buf) < self._remaining:
                    return
                self._body += buf[: self._remaining]
                del buf[: self._remaining]
                self._finish(keep_alive=self._keep_alive)
                return
            elif state == _CHUNK_SIZE:
                end = buf.find(b"\r\n")
                if end < 0:
                    if len(buf) > MAX_HEADER_BYTES:
                        raise CallError("malformed chunked encoding")
                    return
                size_text = bytes(buf[:end]).split(b";", 1)[0].strip()
                del buf[: end + 2]
                try:
                    size = int(size_text, 16)
                except ValueError:
                    raise CallError("malformed chunked encoding") from None
                if size < 0 or len(self._body) + size > MAX_BODY_BYTES:
                    raise CallError("the response body is too large")
                self._remaining = size
                self._state = _CHUNK_DATA if size else _TRAILER
            elif state == _CHUNK_DATA:
                if len(buf) < self._remaining + 2:
                    return
                if buf[self._remaining : self._remaining + 2] != b"\r\n":
                    raise CallError("malformed chunked encoding")
                self._body += buf[: self._remaining]
                del buf[: self._remaining + 2]
                self._state = _CHUNK_SIZE
            elif state == _TRAILER:
                end = buf.find(b"\r\n")
                if end < 0:
                    return
                del buf[: end + 2]
                if end == 0:  # the empty line that ends the trailers
                    self._finish(keep_alive=self._keep_alive)
                    return
            else:  # _UNTIL_CLOSE
                if len(self._body) + len(buf) > MAX_BODY_BYTES:
                    raise CallError("the response body is too large")
                return

    def _head(self, head: str) -> None:
        lines = head.split("\r\n")
        version, _, rest = lines[0].partition(" ")
        code_text = rest[:3]
        if not version.startswith("HTTP/1.") or not code_text.isdigit():
            raise CallError(f"malformed HTTP response {lines[0][:80]!r}")
        code = int(code_text)
        length: int | None = None
        chunked = False
        connection = ""
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            if name == "content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    raise CallError(f"bad Content-Length {value.strip()!r}") from None
            elif name == "transfer-encoding":
                chunked = "chunked" in value.lower()
            elif name == "connection":
                connection = value.strip().lower()
        if 100 <= code < 200:
            return  # an interim answer (100 Continue): the real one follows
        self._status = code
        self._keep_alive = (
            "close" not in connection if version == "HTTP/1.1" else "keep-alive" in connection
        )
        if chunked:
            self._state = _CHUNK_SIZE
        elif length is not None:
            if length < 0 or length > MAX_BODY_BYTES:
                raise CallError("the response body is too large")
            self._state = _LENGTH
            self._remaining = length
        elif code in (204, 304):
            self._state = _LENGTH
            self._remaining = 0
        else:
            self._state = _UNTIL_CLOSE


class _Pool:
    """The connections to one endpoint."""

    def __init__(
        self, host: str, port: int, context: ssl.SSLContext, server_name: str, limit: int
    ) -> None:
        self.host = host
        self.port = port
        self.context = context
        self.server_name = server_name
        self.limit = limit
        self.idle: list[_Connection] = []
        self.open = 0
        """Connections open or being opened, idle or lent."""
        self.waiters: deque[asyncio.Future[_Connection | None]] = deque()
        self.connections: set[_Connection] = set()
        self.closed = False

    def forget(self, conn: _Connection) -> None:
        """``conn`` closed: it leaves the pool, and a queued caller may open another."""
        if conn not in self.connections:
            return
        self.connections.discard(conn)
        self.open -= 1
        if conn in self.idle:
            self.idle.remove(conn)
        self._wake(None)

    def give_back(self, conn: _Connection) -> None:
        if conn.closed:
            return  # forget() ran, or will when the transport closes
        if not self._wake(conn):
            self.idle.append(conn)

    def _wake(self, conn: _Connection | None) -> bool:
        """Hand ``conn`` (None: the right to open one) to the first caller still waiting."""
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return True
        return False

    def take_idle(self) -> _Connection | None:
        """The most recently returned idle connection, if any."""
        while self.idle:
            conn = self.idle.pop()
            if not conn.closed:
                return conn
        return None

    async def take(self, deadline: _Deadline) -> tuple[_Connection, bool]:
        """A connection for one request, and whether it served requests before."""
        while True:
            conn = self.take_idle()
            if conn is not None:
                return conn, True
            if self.open < self.limit:
                return await self.connect(deadline), False
            waiter: asyncio.Future[_Connection | None] = asyncio.get_running_loop().create_future()
            deadline.watch(waiter)  # first: a caller past its deadline must not join the queue
            self.waiters.append(waiter)
            try:
                handed = await waiter
            except BaseException:
                # timed out, cancelled or closed: what was handed over meanwhile goes on
                if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                    late = waiter.result()
                    if late is not None:
                        self.give_back(late)
                    else:
                        self._wake(None)
                raise
            finally:
                deadline.future = None
            if handed is not None and not handed.closed:
                return handed, True

    async def connect(self, deadline: _Deadline) -> _Connection:
        if self.closed:
            raise CallError("the client is closed")
        self.open += 1
        loop = asyncio.get_running_loop()
        conn = _Connection(self)
        try:
            async with asyncio.timeout_at(deadline.when):
                await loop.create_connection(
                    lambda: conn,
                    self.host,
                    self.port,
                    ssl=self.context,
                    server_hostname=self.server_name,
                )
        except BaseException as e:
            self.open -= 1
            self._wake(None)
            if isinstance(e, TimeoutError) and e.errno is None:
                raise  # the call's deadline, not the network's ETIMEDOUT
            if isinstance(e, ssl.SSLCertVerificationError):
                raise CallError(f"tls: failed to verify certificate: {e.verify_message}") from e
            if isinstance(e, ssl.SSLError):
                raise CallError(f"tls: {e.reason or e}") from e
            if isinstance(e, OSError):
                raise CallError(f"dial tcp {self.address}: {_os_error(e)}") from e
            raise
        if conn.closed:
            # closed right after the handshake, before it joined the pool
            self.open -= 1
            self._wake(None)
            raise CallError(f"dial tcp {self.address}: connection closed")
        if self.closed:  # closed while this one connected
            conn.abort()
            raise CallError("the client is closed")
        self.connections.add(conn)
        return conn

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def close(self) -> None:
        self.closed = True
        for conn in list(self.connections):
            conn.abort()
        self.idle.clear()
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_exception(CallError("the client is closed"))


def _os_error(e: OSError) -> str:
    if e.errno == errno.ECONNREFUSED or isinstance(e, ConnectionRefusedError):
        return "connect: connection refused"
    if e.strerror:
        return f"connect: {e.strerror.lower()}"
    # asyncio joins the errors of every address it tried into one message
    return str(e)


class WebhookClient:
    """Pools of kept-alive HTTPS connections, one pool per endpoint."""

    def __init__(self, *, connections_per_endpoint: int) -> None:
        self.connections_per_endpoint = connections_per_endpoint
        self._pools: dict[tuple[str, int, ssl.SSLContext, str], _Pool] = {}
        self._closed = False

    async def post(
        self,
        *,
        host: str,
        port: int,
        path: str,
        context: ssl.SSLContext,
        server_name: str,
        body: bytes,
        timeout: float,
    ) -> Response:
        """POST ``body`` (JSON) to ``https://server_name:port/path`` at ``host``."""
        if self._closed:
            raise CallError("the client is closed")
        key = (host, port, context, server_name)
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = _Pool(
                host, port, context, server_name, self.connections_per_endpoint
            )
        request = _request_head(path, server_name, port, len(body)) + body
        loop = asyncio.get_running_loop()
        deadline = _Deadline(loop, loop.time() + timeout)
        try:
            try:
                return await self._attempt(pool, request, deadline, reuse=True)
            except _Stale:
                return await self._attempt(pool, request, deadline, reuse=False)
        finally:
            deadline.cancel()

    async def _attempt(
        self, pool: _Pool, request: bytes, deadline: _Deadline, *, reuse: bool
    ) -> Response:
        if reuse:
            conn, reused = await pool.take(deadline)
        else:
            conn, reused = await pool.connect(deadline), False
        waiter: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        try:
            deadline.watch(waiter)
        except TimeoutError:
            # the deadline passed while the connection was handed over: nothing was sent on it
            pool.give_back(conn)
            raise
        try:
            conn.send(request, waiter)
            response = await waiter
        except _Closed as e:
            if reused and e.nothing_received:
                raise _Stale from None
            raise CallError(str(e)) from None
        except BaseException:
            # timed out or cancelled with the request in flight: the answer must not reach
            # the next call
            conn.abort()
            raise
        finally:
            deadline.future = None
        pool.give_back(conn)
        return response

    async def close(self) -> None:
        """Abort every connection (no TLS close_notify exchange: the loop may stop next)."""
        self._closed = True
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()
        await asyncio.sleep(0)  # let the aborted transports run connection_lost


class _Deadline:
    """One timer per call, which fails whatever future the call awaits when it fires."""

    __slots__ = ("expired", "future", "handle", "when")

    def __init__(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        self.when = when
        self.expired = False
        self.future: asyncio.Future[Any] | None = None
        self.handle = loop.call_at(when, self._expire)

    def watch(self, future: asyncio.Future[Any]) -> None:
        if self.expired:
            raise TimeoutError
        self.future = future

    def _expire(self) -> None:
        self.expired = True
        future = self.future
        if future is not None and not future.done():
            future.set_exception(TimeoutError())

    def cancel(self) -> None:
        self.handle.cancel()


def _request_head(path: str, server_name: str, port: int, length: int) -> bytes:
    host = f"[{server_name}]" if ":" in server_name else server_name
    return (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode("latin-1")
