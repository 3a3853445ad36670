"""The webhook's HTTP/1.1 server: review paths over kept-alive connections, and nothing else.

aiohttp still serves the probes and ``/metrics`` on the health port. The review paths get a
protocol of their own because per review aiohttp's request and response objects, routing,
stream reader and handler bookkeeping cost nearly as much CPU as the decision itself (in a
1,000-pod rollout the webhook used 0.07-0.1 s less CPU, of about 0.5 s, on this protocol). The
API server speaks a narrow dialect to webhooks (POST, a body with a ``Content-Length``, JSON
both ways, connections kept alive), and this protocol speaks exactly that:

- the requests of a connection are answered one at a time, in order (pipelined ones wait);
- an unknown path is answered 404, a method other than POST 405 (``Allow: POST``), a chunked
  body 411, a head over ``MAX_HEAD`` bytes 431, a body over ``max_body`` with the route's own
  answer (413), a request that cannot be parsed 400; each of these closes the connection,
  whose framing can no longer be trusted, or which the API server would not reuse anyway;
- ``Connection: close`` (and HTTP/1.0 without ``keep-alive``) closes after the answer;
  ``Expect: 100-continue`` is answered before the body is read;
- a connection without a complete request for ``idle_timeout`` seconds is closed (the API
  server keeps idle connections 90 s; a request that never completes is dropped the same way);
- at most ``max_connections`` are kept: one more evicts the connection idle the longest (no
  request under way), and is itself refused (closed at once) when every connection is busy.
  A request still arriving ``STALLED_SECONDS`` after its first byte counts as idle (the API
  server sends a request whole), so clients that send a byte now and then cannot keep the slots
  from it either.
  Each connection holds its TLS state and buffers (a few hundred KB), so clients that open
  connections and send nothing cannot take the memory of a replica; the API server's
  connections carry requests and are the last to be idle long;
- :meth:`ReviewServer.close` closes idle connections at once and lets answers in flight finish
  within a grace period, cancelling those still running then. Closing a TLS connection only
  starts its shutdown, which a peer that does not read would hold open, so whatever has not
  closed ``CLOSE_WAIT_SECONDS`` later (the health server's bound too) is aborted. Short of that,
  a route's answer is not cancelled when its caller goes away (it may be committing a
  reservation); its response is dropped.

A route never raises: :func:`services.webhook.server.answer_body` turns every failure into an
AdmissionReview answer. Should one raise anyway, the connection answers 500 and closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Final

from spreadbus.runtime.health import CLOSE_WAIT_SECONDS

log = logging.getLogger(__name__)

Answer = tuple[int, bytes]
"""HTTP status and JSON body."""

MAX_HEAD: Final = 64 * 1024
IDLE_TIMEOUT_SECONDS: Final = 75.0
"""Below the API server's 90 s for idle connections, so the webhook is the side that closes."""
MAX_CONNECTIONS: Final = 500
"""Connections kept at once; an API server keeps a few dozen to each webhook."""
STALLED_SECONDS: Final = 2.0
"""A request arriving for longer than this makes its connection evictable, as an idle one is."""
_CRLF2: Final = b"\r\n\r\n"
_REASONS: Final = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    411: "Length Required",
    413: "Request Entity Too Large",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
}


@dataclass(frozen=True)
class Route:
    answer: Callable[[bytes, str], Awaitable[Answer]]
    """The answer to a body, given the request's query string (``timeout=10s``)."""
    too_large: Callable[[], Answer]
    """The answer to a body over the limit, which is not read."""


@dataclass(frozen=True)
class _Head:
    method: str
    path: str
    query: str
    length: int
    chunked: bool
    keep_alive: bool
    expect_continue: bool


class _Refusal(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def parse_head(raw: bytes) -> _Head:
    """A request head (without its blank line); raises :class:`_Refusal` naming what is wrong."""
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _Refusal(400, "malformed request line")
    method, target, version = parts
    if not target.startswith("/"):
        raise _Refusal(400, "request target must be a path")
    path, _, query = target.partition("?")
    lengths: set[str] = set()
    chunked = False
    connection: list[str] = []
    expect = ""
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise _Refusal(400, "malformed header line")
        name, value = name.lower(), value.strip()
        if name == "content-length":
            lengths.add(value)
        elif name == "transfer-encoding":
            chunked = True
        elif name == "connection":
            connection += [token.strip().lower() for token in value.split(",")]
        elif name == "expect":
            expect = value.lower()
    if len(lengths) > 1:
        raise _Refusal(400, "conflicting Content-Length headers")
    length = lengths.pop() if lengths else "0"
    if not length.isdigit():
        raise _Refusal(400, "Content-Length is not a number")
    keep_alive = ("keep-alive" in connection if version == "HTTP/1.0"
                  else "close" not in connection)
    return _Head(method, path, query, int(length), chunked, keep_alive,
                 expect == "100-continue")


class ReviewServer:
    """Protocol factory for the review paths, keeping the connections it made until closed."""

    def __init__(self, routes: Mapping[str, Route], *, max_body: int,
                 idle_timeout: float = IDLE_TIMEOUT_SECONDS,
                 max_connections: int = MAX_CONNECTIONS) -> None:
        self.routes = routes
        self.max_body = max_body
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections
        self.evicted = 0
        """Idle connections closed to make room for a new one."""
        self.refused = 0
        """New connections closed at once because every kept one was busy."""
        self.closed = False
        self._live: set[_Connection] = set()
        self._none_left = asyncio.Event()

    def __call__(self) -> asyncio.Protocol:
        return _Connection(self)

    @property
    def connections(self) -> int:
        return len(self._live)

    async def close(self, grace: float) -> None:
        """Close idle connections now, the others after their answer or ``grace`` seconds
        (cancelling the answer)."""
        self.closed = True
        answering = [c.answering for c in self._live if c.answering is not None]
        for connection in list(self._live):
            connection.finish()
        if answering:
            _, late = await asyncio.wait(answering, timeout=grace)
            for task in late:
                task.cancel()
        if self._live:
            self._none_left.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._none_left.wait(), CLOSE_WAIT_SECONDS)
        for connection in list(self._live):
            connection.abort()

    def _keep(self, connection: _Connection) -> bool:
        """Keep a new connection, evicting the longest idle one when full; ``False`` when every
        kept connection is busy and the new one must go."""
        if len(self._live) >= self.max_connections:
            stalled_since = asyncio.get_running_loop().time() - STALLED_SECONDS
            idle = [c for c in self._live if c.idle or c.stalled(stalled_since)]
            if not idle:
                self.refused += 1
                return False
            oldest = min(idle, key=lambda c: c.idle_since)
            oldest.abort()
            self.evicted += 1
        self._live.add(connection)
        return True

    def _forget(self, connection: _Connection) -> None:
        self._live.discard(connection)
        if not self._live:
            self._none_left.set()


class _Connection(asyncio.Protocol):
    def __init__(self, server: ReviewServer) -> None:
        self._server = server
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._head: _Head | None = None
        """The head of the request whose body is still arriving."""
        self._route: Route | None = None
        self._finishing = False
        self._paused = False
        self._idle: asyncio.TimerHandle | None = None
        self.answering: asyncio.Task[None] | None = None
        self.idle_since = 0.0
        """Loop time of the last answer, or of the connection's start."""
        self.receiving_since: float | None = None
        """Loop time of the first byte of the request not yet whole, if one is arriving."""

    # -- asyncio.Protocol ----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        if self._server.closed or not self._server._keep(self):
            transport.abort()
            return
        self._wait_idle()

    def data_received(self, data: bytes) -> None:
        if self.receiving_since is None and data:
            self.receiving_since = asyncio.get_running_loop().time()
        self._buffer += data
        if self.answering is None:
            self._advance()
        elif len(self._buffer) > MAX_HEAD + self._server.max_body and not self._paused:
            self._paused = True  # a client pipelining without end waits for its answers
            assert self._transport is not None
            self._transport.pause_reading()

    def eof_received(self) -> bool | None:
        self.finish()  # the client sends nothing more; TLS cannot stay half-open anyway
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._server._forget(self)
        if self._idle is not None:
            self._idle.cancel()
        self._finishing = True

    # -- requests ------------------------------------------------------------------------------

    def _advance(self) -> None:
        """Start answering the next request if the buffer holds all of it."""
        if self._finishing:
            return
        if self._head is None:
            end = self._buffer.find(_CRLF2, 0, MAX_HEAD + len(_CRLF2))
            if end < 0:
                if len(self._buffer) > MAX_HEAD:
                    self._refuse(431, "request head too large")
                return
            try:
                head = parse_head(bytes(self._buffer[:end]))
            except _Refusal as refusal:
                self._refuse(refusal.status, str(refusal))
                return
            del self._buffer[:end + len(_CRLF2)]
            if not self._accept(head):
                return
        waiting, route = self._head, self._route
        assert waiting is not None
        assert route is not None
        if len(self._buffer) < waiting.length:
            return
        head = waiting
        body = bytes(self._buffer[:head.length])
        del self._buffer[:head.length]
        self._head = self._route = None
        # what is left is the start of a pipelined request
        self.receiving_since = asyncio.get_running_loop().time() if self._buffer else None
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        self.answering = asyncio.get_running_loop().create_task(self._answer(route, head, body))

    def _accept(self, head: _Head) -> bool:
        """Whether the request can be answered by a route; if not, it is refused."""
        route = self._server.routes.get(head.path)
        if route is None:
            self._refuse(404, f"no review path {head.path}")
        elif head.method != "POST":
            self._refuse(405, "only POST is served", extra=b"Allow: POST\r\n")
        elif head.chunked:
            self._refuse(411, "a body needs a Content-Length")
        elif head.length > self._server.max_body:
            status, body = route.too_large()
            self._respond(status, body, close=True)
        else:
            self._head, self._route = head, route
            if head.expect_continue and len(self._buffer) < head.length:
                self._write(b"HTTP/1.1 100 Continue\r\n\r\n")
            return True
        return False

    async def _answer(self, route: Route, head: _Head, body: bytes) -> None:
        try:
            status, answer = await route.answer(body, head.query)
        except Exception:
            log.exception("review path %s raised", head.path)
            self._refuse(500, "internal error")
            return
        finally:
            self.answering = None
        self._respond(status, answer, close=not head.keep_alive or self._finishing)
        if self._finishing:
            return
        self._wait_idle()
        if self._paused:
            self._paused = False
            assert self._transport is not None
            self._transport.resume_reading()
        self._advance()

    # -- answering and closing -----------------------------------------------------------------

    def _respond(self, status: int, body: bytes, *, close: bool,
                 content_type: bytes = b"application/json; charset=utf-8",
                 extra: bytes = b"") -> None:
        head = b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s%s\r\n" % (
            status, _REASONS.get(status, "Unknown").encode(), content_type, len(body), extra,
            b"Connection: close\r\n" if close else b"")
        self._write(head + body)
        if close:
            self._close()

    def _refuse(self, status: int, message: str, *, extra: bytes = b"") -> None:
        self._respond(status, message.encode() + b"\n", close=True,
                      content_type=b"text/plain; charset=utf-8", extra=extra)

    def _write(self, data: bytes) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)

    @property
    def idle(self) -> bool:
        """No request under way: nothing answering and no part of one received."""
        return self.answering is None and self._head is None and not self._buffer

    def stalled(self, started_before: float) -> bool:
        """A request is arriving (nothing answering) since before ``started_before``."""
        return (self.answering is None and self.receiving_since is not None
                and self.receiving_since < started_before)

    def _wait_idle(self) -> None:
        self.idle_since = asyncio.get_running_loop().time()
        self._idle = asyncio.get_running_loop().call_later(
            self._server.idle_timeout, self._idle_too_long)

    def _idle_too_long(self) -> None:
        self._idle = None
        if self.answering is None:
            self._close()

    def finish(self) -> None:
        """Take no further request: close now if idle, else after the answer in flight."""
        self._finishing = True
        if self.answering is None:
            self._close()

    def _close(self) -> None:
        self._finishing = True
        if self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        self._finishing = True
        if self._transport is not None:
            with contextlib.suppress(Exception):
                self._transport.abort()
        self._server._forget(self)
