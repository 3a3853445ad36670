"""The watcher against kubesim and a real bus: a burst of modifications of one object goes out as
its latest state, and nothing held is lost when a watch ends or the bus refuses it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from nats.aio.client import Client
from prometheus_client import CollectorRegistry

from events.messages import Observation
from kubesim import KubeSimThread
from services.watcher.resource_watch import Change, Emit, Mark, ResourceWatch
from services.watcher.service import SupersededCount, prepare_watches
from services.watcher.settings import WatcherSettings
from spreadbus.runtime.kube_client import Gone, KubeClient, kube_api_client
from spreadbus.runtime.stream_setup import ensure_streams
from tests.backbone.bus_recording import Tap, tap
from tests.backbone.test_watcher_relists_after_410 import CONFIG_MAPS, config_map, recorder
from tests.fixtures.polling import wait_until_async


def _observed(messages: list[tuple[str, Any, dict[str, str]]]) -> list[tuple[str, str, str]]:
    """(event, name, data.v) of each observation published, in order."""
    return [(e.event, e.object["metadata"]["name"], e.object["data"]["v"])
            for _, e, _ in messages if isinstance(e, Observation)]


@asynccontextmanager
async def watching(
    nc: Client, kubesim: KubeSimThread, tmp_path: Path, **settings: Any
) -> AsyncIterator[tuple[ResourceWatch, Any, Tap]]:
    """A watcher of ConfigMaps with ``settings``, listed once and running: its watch, the core
    API, and the recording of what it publishes."""
    await ensure_streams(nc.jetstream())
    api = kube_api_client(str(kubesim.write_kubeconfig(tmp_path / "kubeconfig")))
    options = WatcherSettings(cluster="east", resources=("v1/configmaps",), **settings)
    [watch] = await prepare_watches(nc, options, KubeClient(api))
    stopping = asyncio.Event()
    async with tap(nc) as published:
        task = asyncio.create_task(watch.run(stopping))
        try:
            await wait_until_async(lambda: watch.synced, what="the first list")
            yield watch, client.CoreV1Api(api), published
        finally:
            stopping.set()
            await asyncio.wait_for(task, 10)
            api.close()


async def test_a_burst_of_modifications_goes_out_as_the_objects_latest_state(
    nats_client: Client, kubesim: KubeSimThread, tmp_path: Path
) -> None:
    async with watching(nats_client, kubesim, tmp_path, modified_hold_seconds=1.0) as (
        watch, core, published
    ):
        registry = CollectorRegistry()
        registry.register(SupersededCount([watch]))
        await asyncio.to_thread(core.create_namespaced_config_map, "default",
                                config_map("burst"))
        for value in "23456":
            await asyncio.to_thread(core.patch_namespaced_config_map, "burst", "default",
                                    {"data": {"v": value}})

        async def modified() -> bool:
            return any(event == "MODIFIED" for event, _, _ in _observed(published.messages))

        await wait_until_async(modified, what="the held modification published")
    assert _observed(published.messages) == [("ADDED", "burst", "1"), ("MODIFIED", "burst", "6")]
    assert watch.hold.superseded == 4
    assert registry.get_sample_value("spreadbus_watcher_observations_superseded_total",
                                     {"group": "", "resource": "configmaps"}) == 4


async def test_what_is_held_when_the_server_ends_the_watch_goes_out_then(
    nats_client: Client, kubesim: KubeSimThread, tmp_path: Path
) -> None:
    async with watching(nats_client, kubesim, tmp_path, modified_hold_seconds=600.0,
                        watch_timeout_seconds=1) as (_, core, published):
        await asyncio.to_thread(core.create_namespaced_config_map, "default", config_map("slow"))
        await asyncio.to_thread(core.patch_namespaced_config_map, "slow", "default",
                                {"data": {"v": "2"}})

        async def modified() -> bool:
            return ("MODIFIED", "slow", "2") in _observed(published.messages)

        # Well before the hold would end: the watch's end (after 1 s) lets it out.
        await wait_until_async(modified, what="the held modification published", timeout=20)


async def _watch_patched(
    kubesim: KubeSimThread, tmp_path: Path, name: str, emit: Emit, mark: Mark, hold: float
) -> tuple[ResourceWatch, asyncio.Task[None], Any]:
    """A listed and watched ConfigMap ``name``, then patched: the watch, its task, the API."""
    api = kube_api_client(str(kubesim.write_kubeconfig(tmp_path / "kubeconfig")))
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map("default", config_map(name))
    watch = ResourceWatch(KubeClient(api), CONFIG_MAPS, emit=emit, mark=mark, watch_timeout=30,
                          hold_seconds=hold)
    await watch.relist()
    # The watch resumes from the list's resourceVersion: the patch is seen however soon it is.
    watching = asyncio.create_task(watch.watch(asyncio.Event()))
    await asyncio.to_thread(core.patch_namespaced_config_map, name, "default",
                            {"data": {"v": "2"}})
    return watch, watching, api


async def test_a_held_change_the_bus_refused_is_sent_by_the_relist(
    kubesim: KubeSimThread, tmp_path: Path
) -> None:
    changes, _, record, mark = recorder()

    async def emit(change: Change) -> None:
        if change.event == "MODIFIED" and not change.relist:
            raise ConnectionError("the bus is away")
        await record(change)

    watch, watching, api = await _watch_patched(kubesim, tmp_path, "refused", emit, mark, 0.05)
    with pytest.raises(ConnectionError):
        await asyncio.wait_for(watching, 10)
    changes.clear()  # the list's ADDED
    await watch.relist()
    assert [(c.event, c.name, c.relist) for c in changes] == [("MODIFIED", "refused", True)]
    api.close()


async def test_a_held_change_is_sent_by_the_relist_when_the_watch_fails(
    kubesim: KubeSimThread, tmp_path: Path
) -> None:
    changes, _, emit, mark = recorder()
    watch, watching, api = await _watch_patched(kubesim, tmp_path, "held", emit, mark, 600.0)
    await wait_until_async(lambda: len(watch.hold) == 1, what="the modification held")
    changes.clear()  # the list's ADDED
    watch.lost(("default", "elsewhere"))  # another publish was lost: the watch gives way
    with pytest.raises(Gone, match="lost"):
        await asyncio.wait_for(watching, 10)
    assert changes == [], "a held change goes out only through the relist"
    await watch.relist()
    assert [(c.event, c.name, c.relist) for c in changes] == [("MODIFIED", "held", True)]
    assert changes[0].raw.count(b'"v":"2"') == 1
    api.close()


