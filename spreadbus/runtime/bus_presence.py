"""A service's check that the bus holds what it needs, before it starts its work.

Services never create or reconfigure streams or buckets (their users may not: only the setup
step does, :mod:`spreadbus.runtime.bus_setup`). A service that starts before the setup step ran,
or on a bus where something it needs was removed, would otherwise fail at its first publish or
read; instead it says what is missing and which command creates it, keeps its ``bus`` readiness
condition false (``/readyz`` shows the same words as a note), and looks again every
``interval`` seconds until everything is there.

Signatures::

    BUS_CONDITION = "bus"
    SETUP_COMMAND = "spreadbus bus-setup"
    async missing(js: JetStreamContext, needs: Sequence[str]) -> list[str]
    async await_bus(js: JetStreamContext, needs: Sequence[str], gate: ReadinessGate, *,
                    interval: float = 2.0) -> None
    missing_text(names: Sequence[str]) -> str
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Final

from nats.errors import Error as NatsError
from nats.js.client import JetStreamContext
from nats.js.errors import Error as JetStreamError
from nats.js.errors import NotFoundError

from spreadbus.runtime.health import ReadinessGate

log = logging.getLogger(__name__)

BUS_CONDITION: Final = "bus"
SETUP_COMMAND: Final = "spreadbus bus-setup"


def _kind(name: str) -> str:
    if name.startswith("KV_"):
        return f"bucket {name.removeprefix('KV_')}"
    if name.startswith("OBJ_"):
        return f"object store {name.removeprefix('OBJ_')}"
    return f"stream {name}"


def missing_text(names: Sequence[str]) -> str:
    """``missing stream PLANS, bucket spreadbus-leases: create them with spreadbus bus-setup``."""
    return f"missing {', '.join(_kind(n) for n in names)}: create them with `{SETUP_COMMAND}`"


async def missing(js: JetStreamContext, needs: Sequence[str]) -> list[str]:
    """The streams of ``needs`` the server does not have."""
    absent = []
    for name in needs:
        try:
            await js.stream_info(name)
        except NotFoundError:
            absent.append(name)
    return absent


async def await_bus(js: JetStreamContext, needs: Sequence[str], gate: ReadinessGate, *,
                    interval: float = 2.0) -> None:
    """Return once every stream of ``needs`` exists; until then ``bus`` is false and noted."""
    said = ""
    while True:
        try:
            absent = await missing(js, needs)
        except (NatsError, JetStreamError, OSError, TimeoutError) as exc:
            absent, problem = list(needs), f"cannot look up the bus yet: {exc!r}"
        else:
            problem = missing_text(absent) if absent else ""
        if not absent:
            gate.note(BUS_CONDITION, None)
            gate.set(BUS_CONDITION, True)
            if said:
                log.info("the bus holds what this service needs")
            return
        if problem != said:
            log.warning(problem, extra={"missing": absent})
            said = problem
        gate.note(BUS_CONDITION, problem)
        gate.set(BUS_CONDITION, False)
        await asyncio.sleep(interval)
