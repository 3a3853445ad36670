"""Clean shutdown on SIGTERM and SIGINT: the signal only sets an event the service awaits.

Signature::

    install_shutdown_handlers(loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Event
"""

from __future__ import annotations

import asyncio
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
