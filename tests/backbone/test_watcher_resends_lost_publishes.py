"""A publish the bus never stored is sent again by the relist it triggers, deletions included.

The bus refuses publishes for real here: the KUBE stream is deleted while Kubernetes changes,
and created again afterwards.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from nats.aio.client import Client
from prometheus_client import CollectorRegistry

from events import codec
from events.messages import Observation
from events.streams import KUBE
from kubesim import KubeSimThread
from services.watcher.resource_watch import Change, ResourceWatch
from services.watcher.service import prepare_watches
from services.watcher.settings import WatcherSettings
from spreadbus.runtime.kube_client import KubeClient, kube_api_client
from spreadbus.runtime.stream_setup import ensure_streams
from tests.backbone.test_watcher_relists_after_410 import CONFIG_MAPS, config_map
from tests.fixtures.polling import wait_until_async


async def _observations(nc: Client) -> list[tuple[str, str]]:
    """(event, name) of every observation the KUBE stream holds, oldest first."""
    js = nc.jetstream()
    sub = await js.pull_subscribe("kube.obs.>", stream=KUBE.name)
    out: list[tuple[str, str]] = []
    try:
        while True:
            try:
                msgs = await sub.fetch(256, timeout=0.5)
            except Exception:
                break
            for msg in msgs:
                event = codec.decode(msg.data)
                if isinstance(event, Observation):
                    out.append((event.event, event.object["metadata"]["name"]))
                await msg.ack()
    finally:
        await sub.unsubscribe()
    return out


def _failures(registry: CollectorRegistry) -> float:
    return registry.get_sample_value("spreadbus_watcher_publish_failures_total") or 0.0


@pytest.mark.parametrize("first", ["delete", "modify-then-delete"])
async def test_a_deletion_whose_publish_was_lost_is_published_by_the_relist(
    first: str, nats_client: Client, kubesim: KubeSimThread, tmp_path: Path
) -> None:
    js = nats_client.jetstream()
    await ensure_streams(js)
    api = kube_api_client(str(kubesim.write_kubeconfig(tmp_path / "kubeconfig")))
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map("default", config_map("doomed"))
    registry = CollectorRegistry()
    settings = WatcherSettings(
        cluster="east", resources=("v1/configmaps",), watch_timeout_seconds=30
    )
    [watch] = await prepare_watches(nats_client, settings, KubeClient(api), registry)
    stopping = asyncio.Event()
    task = asyncio.create_task(watch.run(stopping))
    try:

        async def listed() -> bool:
            return watch.synced and ("ADDED", "doomed") in await _observations(nats_client)

        await wait_until_async(listed, what="listed")

        await js.delete_stream(KUBE.name)  # from here on every publish fails
        if first == "modify-then-delete":
            core.patch_namespaced_config_map("doomed", "default", {"data": {"v": "2"}})

            async def modify_lost() -> bool:
                return _failures(registry) >= 1

            await wait_until_async(modify_lost, what="modify_lost")
        core.delete_namespaced_config_map("doomed", "default")
        after_delete = int(core.list_namespaced_config_map("default").metadata.resource_version)

        async def delete_lost() -> bool:
            # the watch has passed the deletion, and the bus refused at least one publish
            return (
                watch.resource_version != ""
                and int(watch.resource_version) >= after_delete
                and _failures(registry) >= 1
            )

        await wait_until_async(delete_lost, what="delete_lost")
        await ensure_streams(js)

        async def deletion_published() -> bool:
            return ("DELETED", "doomed") in await _observations(nats_client)

        await wait_until_async(deletion_published, what="deletion_published")
        assert ("default", "doomed") not in watch.known  # the acknowledged tombstone is gone
    finally:
        stopping.set()
        await asyncio.wait_for(task, 15)
        api.close()


async def test_a_relist_resends_a_dirty_key_and_a_tombstone_but_not_what_was_acknowledged(
    kubesim: KubeSimThread, tmp_path: Path
) -> None:
    api = kube_api_client(str(kubesim.write_kubeconfig(tmp_path / "kubeconfig")))
    core = client.CoreV1Api(api)
    for name in ("steady", "lost-modify", "deleted"):
        core.create_namespaced_config_map("default", config_map(name))
    changes: list[Change] = []

    async def emit(change: Change) -> None:
        changes.append(change)

    async def mark(complete: bool, rv: str, count: int) -> None:
        return None

    watch = ResourceWatch(KubeClient(api), CONFIG_MAPS, emit=emit, mark=mark)
    await watch.relist()
    changes.clear()
    watch.lost(("default", "lost-modify"))
    core.delete_namespaced_config_map("deleted", "default")
    await watch.relist()
    got = sorted((c.event, c.name) for c in changes)
    assert got == [("DELETED", "deleted"), ("MODIFIED", "lost-modify")]
    assert watch.known[("default", "deleted")].deleted  # kept until the bus acknowledges
    deletion = next(c for c in changes if c.event == "DELETED")
    watch.acked(deletion)
    assert ("default", "deleted") not in watch.known
    changes.clear()
    await watch.relist()
    assert changes == []
    api.close()


def _watch_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "watch-configmaps" and t.is_alive())


async def test_relists_do_not_leave_abandoned_watch_threads_behind(
    kubesim: KubeSimThread, tmp_path: Path
) -> None:
    api = kube_api_client(str(kubesim.write_kubeconfig(tmp_path / "kubeconfig")))
    changes: list[Any] = []

    async def emit(change: Change) -> None:
        changes.append(change)

    async def mark(complete: bool, rv: str, count: int) -> None:
        return None

    watch = ResourceWatch(KubeClient(api), CONFIG_MAPS, emit=emit, mark=mark, watch_timeout=300)
    stopping = asyncio.Event()
    task = asyncio.create_task(watch.run(stopping))
    try:
        for round_ in range(1, 6):

            async def relisted(round_: int = round_) -> bool:
                return watch.relists >= round_ and _watch_threads() >= 1

            await wait_until_async(relisted, what="relisted")
            watch.lost(("default", "nothing"))  # forces a relist and a new watch

        async def settled() -> bool:
            return watch.relists >= 6 and _watch_threads() <= 1

        await wait_until_async(settled, what="settled")
    finally:
        stopping.set()
        await asyncio.wait_for(task, 15)

    async def all_gone() -> bool:
        return _watch_threads() == 0

    await wait_until_async(all_gone, what="all_gone")
    api.close()
