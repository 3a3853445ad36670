"""Review routes served over plain TCP on a free port, for tests of the HTTP side alone."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

from services.webhook.review_protocol import ReviewServer, Route


@contextlib.asynccontextmanager
async def serving(
    routes: Mapping[str, Route], **options: Any
) -> AsyncIterator[tuple[str, ReviewServer]]:
    """``(base URL, server)`` while ``routes`` are served; closed (one second of grace) after."""
    reviews = ReviewServer(routes, **{"max_body": 1 << 20, **options})
    listener = await asyncio.get_running_loop().create_server(reviews, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", reviews
    finally:
        listener.close()
        await reviews.close(1.0)
        await listener.wait_closed()
