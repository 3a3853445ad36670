"""The caches and work queue the simulated components are built on, against a real kubesim."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from kubesim import KubeSim
from kubesim.behaviour.informer import Informer, by_namespace
from kubesim.behaviour.workqueue import WorkQueue
from kubesim.interface import GVR, ApiError
from tests.fixtures.polling import wait_until_async
from tests.kubesim_behaviour.virtual_clock import VirtualClockLoop

CONFIGMAPS_GVR = GVR("", "v1", "configmaps")


def configmap(name: str, value: str = "1") -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"v": value},
    }


@pytest.fixture
async def sim() -> AsyncIterator[KubeSim]:
    server = KubeSim(tls=False, watch_history=5)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def test_an_informer_that_fell_behind_the_watch_history_relists_and_catches_up(
    sim: KubeSim,
) -> None:
    cluster = sim.cluster
    for i in range(3):
        await cluster.create(CONFIGMAPS_GVR, configmap(f"cm-{i}"), namespace="default")
    informer = Informer(cluster, CONFIGMAPS_GVR)
    informer.add_index("namespace", by_namespace)
    changes: list[tuple[str | None, str | None]] = []
    informer.add_handler(
        lambda old, new: changes.append(
            (old and old["metadata"]["name"], new and new["metadata"]["name"])
        )
    )
    informer.start()
    await informer.synced.wait()
    assert sorted(k for k in informer.store) == ["default/cm-0", "default/cm-1", "default/cm-2"]
    await informer.stop()
    # while it is away, more changes happen than the server keeps for watch resumption
    await cluster.delete(CONFIGMAPS_GVR, "cm-0", namespace="default")
    for i in range(3, 12):
        await cluster.create(CONFIGMAPS_GVR, configmap(f"cm-{i}"), namespace="default")
    changes.clear()
    informer.start()
    await wait_until_async(lambda: len(informer.store) == 11, what="eleven cached config maps")
    await informer.stop()
    assert "default/cm-0" not in informer.store
    assert ("cm-0", None) in changes
    assert len(informer.by_index("namespace", "default")) == 11


async def test_write_through_results_are_not_undone_by_older_watch_events(sim: KubeSim) -> None:
    cluster = sim.cluster
    informer = Informer(cluster, CONFIGMAPS_GVR)
    informer.start()
    await informer.synced.wait()
    created = await cluster.create(CONFIGMAPS_GVR, configmap("cm", "1"), namespace="default")
    updated = await cluster.update(
        CONFIGMAPS_GVR, {**created, "data": {"v": "2"}}, namespace="default"
    )
    informer.write_result(updated)
    informer.upsert(created)  # a late event for the older version
    assert informer.get("default/cm")["data"] == {"v": "2"}  # type: ignore[index]
    deleted = await cluster.delete(CONFIGMAPS_GVR, "cm", namespace="default")
    informer.remove(deleted)
    informer.upsert(updated)  # late again: the key stays deleted
    assert informer.get("default/cm") is None
    await informer.stop()


async def test_the_queue_runs_a_key_once_per_burst_and_again_if_it_changed_meanwhile() -> None:
    runs: list[str] = []
    gate = asyncio.Event()
    drained = asyncio.Event()

    async def reconcile(key: str) -> None:
        runs.append(key)
        if key == "last":
            drained.set()
        elif len(runs) == 1:
            await gate.wait()

    queue = WorkQueue("test", reconcile)
    queue.start()
    for _ in range(5):
        queue.add("a")
    await wait_until_async(lambda: runs == ["a"], what="the first run of the burst")
    queue.add("a")  # changed while being processed
    queue.add("a")
    gate.set()
    await wait_until_async(lambda: runs == ["a", "a"], what="the run for the change")
    # one worker takes keys in order: anything the second run left queued comes before this one
    queue.add("last")
    await asyncio.wait_for(drained.wait(), timeout=10)
    await queue.stop()
    assert runs == ["a", "a", "last"]


def test_the_queue_retries_a_conflicting_key_until_it_succeeds_and_then_leaves_it() -> None:
    async def scenario() -> list[float]:
        attempts: list[float] = []
        succeeded = asyncio.Event()
        loop = asyncio.get_running_loop()

        async def reconcile(key: str) -> None:
            attempts.append(loop.time())
            if len(attempts) < 3:
                raise ApiError(409, "Conflict", "stale")
            succeeded.set()

        queue = WorkQueue("test", reconcile)
        queue.start()
        queue.add_after("k", 0.05)
        await succeeded.wait()
        # an hour of simulated time: longer than any backoff, so a stray retry would run
        await asyncio.sleep(3600)
        await queue.stop()
        return attempts

    with asyncio.Runner(loop_factory=VirtualClockLoop) as runner:
        attempts = runner.run(scenario())
    assert len(attempts) == 3
