"""An HTTPS listener whose every TLS handshake is bounded in time and aborted on stop.

The webhook serves its review paths with it, and kubesim its API.

``loop.create_server`` with TLS leaves a connection whose handshake is still in progress to
nobody the shutdown can reach: the protocol only sees it once the handshake completes, and the
asyncio server (before Python 3.12) keeps no list of its connections. Stopping such a server
closed the listening socket but left the connection open until the handshake timeout, 60 s by
default; a peer that connects and never says hello (a port scanner, a load balancer's TCP
probe, a client stalled on a loop about to stop) kept a socket of a stopped webhook that long.

So this site accepts connections itself and runs each handshake as a task of its own,
with ``loop.connect_accepted_socket`` and a ``handshake_timeout`` well below that default but
above any call timeout the webhook configurations allow (a handshake the API server would not
wait for is of no use). :meth:`HttpsSite.stop` closes the listening sockets and cancels the
handshakes still running, which aborts their connections at once. A connection whose handshake
completed belongs to the protocol factory from then on, which closes it (the webhook's
``ReviewServer.close``, an aiohttp runner's clean-up).

A failed handshake is logged at debug level only, as asyncio's own server does: they are the
normal noise of a listening port. They are counted (:attr:`HttpsSite.failed_handshakes`): on a
site that requires client certificates, each is a caller refused before it could say anything.

A connection gets its TLS state (the protocol, OpenSSL's objects and buffers) only once its
first bytes arrive; until then, and for the whole handshake, ``handshake_timeout`` bounds it.
Each connection reads TLS records through a buffer of ``READ_BUFFER_BYTES`` rather than asyncio's
256 KiB, which its TLS protocol allocates (and fills, so it is resident) for every connection,
idle or not: most of what an idle connection cost. A TLS record holds at most 16 KiB, so the
smaller buffer costs a large body a few more reads and nothing else.

That buffer is set on a subclass of ``asyncio.sslproto.SSLProtocol``, a module asyncio does not
document: it is used only on the Python versions it was checked on (:data:`LEAN_TLS_CHECKED_ON`).
On any other version a connection is handed to asyncio's public TLS server path
(``connect_accepted_socket`` with ``ssl``) and keeps everything above but the smaller buffer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import sys
from asyncio import sslproto
from collections.abc import Callable
from typing import Final

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT_SECONDS: Final = 10.0
"""Twice the longest ``timeoutSeconds`` of the webhook configurations in ``deploy/webhook/``, and
beyond any handshake a client of kubesim waits for."""
ACCEPT_RETRY_SECONDS: Final = 1.0
"""Pause after a failed accept (out of file descriptors, say), as asyncio's own server makes."""
READ_BUFFER_BYTES: Final = 32 * 1024
"""Encrypted bytes read from the socket at once: two TLS records of the largest size."""


LEAN_TLS_CHECKED_ON: Final = frozenset({(3, 11), (3, 12), (3, 13)})
"""The Python versions whose ``asyncio.sslproto.SSLProtocol`` the smaller read buffer was
checked on (this module's tests, run on each)."""


class _LeanTls(sslproto.SSLProtocol):
    """asyncio's server-side TLS protocol with a read buffer of ``READ_BUFFER_BYTES``."""

    max_size = READ_BUFFER_BYTES


def lean_tls_checked(version: tuple[int, ...] = tuple(sys.version_info[:2])) -> bool:
    """Is the undocumented TLS protocol of this Python one the smaller buffer was checked on?"""
    return (tuple(version[:2]) in LEAN_TLS_CHECKED_ON
            and isinstance(getattr(sslproto.SSLProtocol, "max_size", None), int))


async def _first_bytes(loop: asyncio.AbstractEventLoop, conn: socket.socket) -> None:
    """Wait until the peer sends something (or closes), reading nothing: a connection costs its
    TLS state only once its ClientHello arrives, so a peer that connects and stays silent holds
    a socket and this wait, a few KB."""
    readable: asyncio.Future[None] = loop.create_future()

    def ready() -> None:
        if not readable.done():
            readable.set_result(None)

    loop.add_reader(conn.fileno(), ready)
    try:
        await readable
    finally:
        loop.remove_reader(conn.fileno())


class HttpsSite:
    """``protocol`` served over HTTPS on ``host``/``port`` (0 picks a free port, see
    :attr:`port`), its handshakes bounded by ``handshake_timeout`` and aborted by :meth:`stop`."""

    def __init__(
        self,
        protocol: Callable[[], asyncio.Protocol],
        host: str,
        port: int,
        *,
        ssl_context: ssl.SSLContext,
        handshake_timeout: float = HANDSHAKE_TIMEOUT_SECONDS,
        backlog: int = 128,
        lean_tls: bool | None = None,
    ) -> None:
        self._protocol = protocol
        self.lean_tls = lean_tls_checked() if lean_tls is None else lean_tls
        """Whether connections read through the smaller buffer (see the module's docstring);
        forced off only to test the public path."""
        self._backlog = backlog
        self._host = host
        self._port = port
        self._tls = ssl_context
        self._handshake_timeout = handshake_timeout
        self._bound_port = 0
        self._listeners: list[socket.socket] = []
        self._accepting: list[asyncio.Task[None]] = []
        self._handshakes: set[asyncio.Task[None]] = set()
        self._unowned: dict[asyncio.Task[None], socket.socket] = {}
        """Accepted sockets whose handshake task has not started yet (so no transport owns
        them): closed here if that task is cancelled before it starts."""
        self.failed_handshakes = 0
        """Connections closed because their TLS handshake failed or timed out (a client
        certificate missing or not trusted among them)."""

    @property
    def name(self) -> str:
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"https://{host}:{self.port}"

    @property
    def port(self) -> int:
        """The bound port once started (the first listener's), else the one asked for."""
        return self._bound_port or self._port

    @property
    def handshaking(self) -> int:
        """Connections accepted whose TLS handshake has not ended yet."""
        return len(self._handshakes)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(
            self._host or None,
            self._port,
            type=socket.SOCK_STREAM,
            flags=socket.AI_PASSIVE,
        )
        try:
            for family, kind, proto, _, address in dict.fromkeys(infos):
                self._listeners.append(self._listen(family, kind, proto, address))
        except BaseException:
            for listener in self._listeners:
                listener.close()
            self._listeners.clear()
            raise
        self._bound_port = int(self._listeners[0].getsockname()[1])
        for listener in self._listeners:
            self._accepting.append(loop.create_task(self._accept(listener)))

    def _listen(
        self, family: int, kind: int, proto: int, address: tuple[object, ...]
    ) -> socket.socket:
        listener = socket.socket(family, kind, proto)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            listener.bind(address)
            listener.listen(self._backlog)
            listener.setblocking(False)
        except BaseException:
            listener.close()
            raise
        return listener

    async def _accept(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = await loop.sock_accept(listener)
            except OSError as exc:
                log.warning("accepting a connection failed", extra={"error": repr(exc)})
                await asyncio.sleep(ACCEPT_RETRY_SECONDS)
                continue
            handshake = loop.create_task(self._handshake(conn))
            self._unowned[handshake] = conn
            self._handshakes.add(handshake)
            handshake.add_done_callback(self._handshakes.discard)

    async def _handshake(self, conn: socket.socket) -> None:
        task = asyncio.current_task()
        assert task is not None  # run as a task by _accept
        # From here on this task owns the socket until the peer's first bytes, then the
        # connection's transport, which closes it however the handshake ends: completed (then
        # the server's), failed, timed out or cancelled.
        del self._unowned[task]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._handshake_timeout
        try:
            async with asyncio.timeout_at(deadline):
                await _first_bytes(loop, conn)
        except BaseException as exc:
            conn.close()
            if not isinstance(exc, TimeoutError):
                raise
            self.failed_handshakes += 1
            log.debug("no ClientHello before the handshake timeout")
            return
        # typeshed says int; asyncio takes any positive number of seconds
        left: float = max(deadline - loop.time(), 0.001)
        if not self.lean_tls:
            await self._public_handshake(loop, conn, left)
            return
        handshaken: asyncio.Future[None] = loop.create_future()
        tls = _LeanTls(loop, self._protocol(), self._tls, handshaken, server_side=True,
                       ssl_handshake_timeout=left)  # type: ignore[arg-type]
        try:
            transport, _ = await loop.connect_accepted_socket(lambda: tls, conn)
        except Exception as exc:
            log.debug("accepted connection lost", extra={"error": repr(exc)})
            return
        try:
            await handshaken
        except Exception as exc:
            # the TLS protocol has aborted the connection already
            self.failed_handshakes += 1
            log.debug("TLS handshake failed", extra={"error": repr(exc)})
        except BaseException:
            transport.abort()
            raise

    async def _public_handshake(
        self, loop: asyncio.AbstractEventLoop, conn: socket.socket, left: float
    ) -> None:
        """The handshake through asyncio's documented TLS server path, which closes the
        connection itself if the handshake fails, times out or is cancelled."""
        try:
            await loop.connect_accepted_socket(
                self._protocol, conn, ssl=self._tls,
                ssl_handshake_timeout=left)
        except Exception as exc:
            self.failed_handshakes += 1
            log.debug("TLS handshake failed", extra={"error": repr(exc)})

    async def stop(self) -> None:
        """Stop listening and abort every connection still in its handshake."""
        for task in self._accepting:
            task.cancel()
        await asyncio.gather(*self._accepting, return_exceptions=True)
        self._accepting.clear()
        for listener in self._listeners:
            listener.close()
        handshakes = list(self._handshakes)
        for task in handshakes:
            task.cancel()
        await asyncio.gather(*handshakes, return_exceptions=True)
        for conn in self._unowned.values():
            with contextlib.suppress(OSError):
                conn.close()
        self._unowned.clear()
