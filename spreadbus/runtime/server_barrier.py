"""A round trip proving the server has processed every command a connection sent before it.

nats-py 2.16's ``Client.flush()`` writes its PING straight to the socket, while commands made
just before (a SUB, a PUB) may still wait in the client's buffer for its flusher task: the PONG
can then come back before the server has them. nats-server's trace on a loaded host showed it: a
reader's three SUBs reached the server after another client's publishes, which had waited for
the reader's ``flush()``. A request travels through that buffer in order, so its reply means the
server processed everything before it. The request is ``$JS.API.INFO``: the server answers it
itself, and every bus user may make it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nats.aio.client import Client

JS_INFO = "$JS.API.INFO"


async def processed(nc: Client, *, timeout: float) -> None:
    """Return once the server has taken every SUB and PUB sent on ``nc`` before this call."""
    await nc.request(JS_INFO, b"", timeout=timeout)
