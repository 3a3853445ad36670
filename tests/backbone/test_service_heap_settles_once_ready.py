"""A service's folded projection leaves the garbage collector once the service is first ready.

The services run with :mod:`spreadbus.runtime.heap`'s settings: fewer young collections, and
what survived the replay frozen the moment every readiness condition first holds.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator

import pytest

from spreadbus.runtime import heap
from spreadbus.runtime.health import ReadinessGate
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.service import ServiceContext, run_service
from spreadbus.runtime.settings import ServiceSettings


@pytest.fixture
def collector_restored() -> Iterator[None]:
    """The test process's collector as it was: thresholds, and nothing frozen before or after."""
    thresholds = gc.get_threshold()
    gc.unfreeze()
    yield
    gc.set_threshold(*thresholds)
    gc.unfreeze()


def test_the_first_ready_hook_runs_once_when_the_last_condition_holds() -> None:
    calls: list[dict[str, bool]] = []
    gate = ReadinessGate("nats", "caught_up", on_first_ready=lambda: calls.append(gate.conditions))

    gate.set("nats", True)
    gate.set("caught_up", False)
    assert calls == []
    gate.set("caught_up", True)
    assert calls == [{"nats": True, "caught_up": True}]
    gate.set("nats", False)
    gate.set("nats", True)  # ready again after a reconnect: not a first time
    assert len(calls) == 1


def test_tune_makes_young_collections_rarer_and_keeps_the_older_ratios(
    collector_restored: None,
) -> None:
    gc.set_threshold(700, 11, 12)
    heap.tune()
    assert gc.get_threshold() == (heap.YOUNG_THRESHOLD, 11, 12)
    assert heap.YOUNG_THRESHOLD > 700


def test_settle_freezes_what_survives_and_dropped_objects_are_still_freed(
    collector_restored: None,
) -> None:
    projection = [{"metadata": {"name": f"pod-{i}"}} for i in range(1000)]
    heap.settle()
    assert gc.get_freeze_count() >= len(projection)

    class Probe:
        pass

    probe = Probe()
    freed: list[bool] = []
    weakref.finalize(probe, freed.append, True)
    heap.settle()
    del probe  # frozen, yet reference counting still frees it at once
    assert freed == [True]


async def test_a_service_settles_its_heap_when_it_first_becomes_ready(
    nats_server: NatsServer, collector_restored: None
) -> None:
    frozen_when_ready: list[int] = []
    ready = asyncio.Event()

    def settled() -> None:
        heap.settle()
        frozen_when_ready.append(gc.get_freeze_count())
        ready.set()

    async def main(ctx: ServiceContext) -> None:
        assert frozen_when_ready == []  # connected to NATS, but not caught up yet
        ctx.gate.set("caught_up", True)
        await ctx.stopping.wait()

    stopping = asyncio.Event()
    settings = ServiceSettings(nats_url=(nats_server.url,), http_host="127.0.0.1", http_port=0)
    shell = asyncio.create_task(
        run_service(
            "heap-probe",
            settings,
            main,
            conditions=("caught_up",),
            stopping=stopping,
            on_first_ready=settled,
        )
    )
    try:
        async with asyncio.timeout(30):
            await ready.wait()
    finally:
        stopping.set()
    assert await shell == 0
    assert len(frozen_when_ready) == 1
    assert frozen_when_ready[0] > 0
