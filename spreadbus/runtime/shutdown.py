"""Clean shutdown on SIGTERM and SIGINT: the signal only sets an event the service awaits.

A loop that watches the stop event pauses (a backoff after an error, a poll interval) through
:func:`sleep_unless_stopping`, so a stop request ends the pause at once instead of after it.
Loops that end by being cancelled (a background poll, a keep-alive) need no event and sleep
plainly.

Signatures::

    install_shutdown_handlers(loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Event
    async sleep_unless_stopping(stopping: asyncio.Event, seconds: float) -> bool
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

log = logging.getLogger(__name__)


def install_shutdown_handlers(loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Event:
    """Return an event set by the first SIGTERM or SIGINT; a second one exits at once."""
    loop = loop or asyncio.get_running_loop()
    stopping = asyncio.Event()

    def on_signal(signum: int) -> None:
        if stopping.is_set():
            log.warning("second signal, exiting now", extra={"signal": signum})
            raise SystemExit(128 + signum)
        log.info("shutting down", extra={"signal": signal.Signals(signum).name})
        stopping.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal, signum)
    return stopping


async def sleep_unless_stopping(stopping: asyncio.Event, seconds: float) -> bool:
    """Sleep ``seconds``, or less once ``stopping`` is set; return whether it is set.

    A stopping service must not wait out a backoff, and the caller's loop condition can use
    the answer instead of asking the event again.
    """
    if not stopping.is_set():
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await stopping.wait()
    return stopping.is_set()
