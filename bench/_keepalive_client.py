"""POSTs to webhooks over a pool of kept-alive TLS connections, as an API server calls them.

The admission benchmarks send hundreds of reviews a second from the host the webhook runs on,
so what their client spends of the cores is taken from the webhook being measured. aiohttp's
client cost about 0.4-0.6 ms of CPU per review there, a third of the host's work per review;
this client writes each request in one piece and reads the answer by its ``Content-Length``
(the webhook answers nothing else: no chunked bodies, no ``Connection: close`` while it runs),
and spends a fraction of that.

A connection is opened when no idle one to the same address is left and the pool
(``size`` per address) is not full; otherwise a request waits for one to come back. A request
that fails closes its connection and raises.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass, field
from urllib.parse import urlsplit


class BadAnswer(RuntimeError):
    """The webhook's answer is not an HTTP/1.1 200 with a ``Content-Length``."""


@dataclass
class _Pool:
    idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = field(default_factory=list)
    opened: int = 0
    returned: asyncio.Condition = field(default_factory=asyncio.Condition)


class KeepAliveClient:
    """``post(url, body)`` over at most ``size`` connections per host and port."""

    def __init__(self, context: ssl.SSLContext, size: int) -> None:
        self.context = context
        self.size = size
        self._pools: dict[tuple[str, int], _Pool] = {}

    async def post(self, url: str, body: bytes) -> bytes:
        """The answer's body; raises :class:`BadAnswer` on anything but a 200."""
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port or 443
        pool = self._pools.setdefault((host, port), _Pool())
        reader, writer = await self._take(pool, host, port)
        try:
            writer.write(b"POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s"
                         % (parts.path.encode(), host.encode(), port, len(body), body))
            head = await reader.readuntil(b"\r\n\r\n")
            status, length = _status_and_length(head)
            answer = await reader.readexactly(length)
        except BaseException:
            writer.close()
            pool.opened -= 1
            async with pool.returned:
                pool.returned.notify()
            raise
        async with pool.returned:
            pool.idle.append((reader, writer))
            pool.returned.notify()
        if status != 200:
            raise BadAnswer(f"HTTP {status} from {url}: {answer[:200]!r}")
        return answer

    async def _take(self, pool: _Pool, host: str, port: int,
                    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        async with pool.returned:
            while not pool.idle and pool.opened >= self.size:
                await pool.returned.wait()
            if pool.idle:
                return pool.idle.pop()
            pool.opened += 1
        try:
            return await asyncio.open_connection(host, port, ssl=self.context)
        except BaseException:
            pool.opened -= 1
            raise

    async def close(self) -> None:
        for pool in self._pools.values():
            for _, writer in pool.idle:
                writer.close()
            pool.idle.clear()


def _status_and_length(head: bytes) -> tuple[int, int]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise BadAnswer(f"not an HTTP/1.1 status line: {lines[0]!r}")
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length" and value.strip().isdigit():
            return int(parts[1]), int(value.strip())
    raise BadAnswer(f"an answer without a Content-Length: {head[:200]!r}")
