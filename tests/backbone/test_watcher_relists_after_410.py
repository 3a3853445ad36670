"""The watcher against kubesim over HTTP: list, watch, resume, and relist after 410 Gone."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
from kubernetes import client
from nats.aio.client import Client
from nats.js.errors import NotFoundError

from events import codec
from events.messages import Observation, ResourceRef, SyncMarker
from events.streams import TOMBSTONE_TTL_SECONDS
from kubesim import KubeSimThread
from services.watcher.resource_watch import Change, ResourceWatch, clean_object
from services.watcher.service import prepare_watches
from services.watcher.settings import WatcherSettings
from spreadbus.runtime.kube_client import Gone, KubeClient, kube_api_client
from spreadbus.runtime.stream_setup import ensure_streams
from tests.backbone.bus_recording import tap
from tests.fixtures.polling import wait_until_async

CONFIG_MAPS = ResourceRef(group="", version="v1", resource="configmaps")


def config_map(name: str, value: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"v": value},
    }


def recorder() -> tuple[list[Change], list[tuple[bool, str, int]], Any, Any]:
    changes: list[Change] = []
    marks: list[tuple[bool, str, int]] = []

    async def emit(change: Change) -> None:
        changes.append(change)

    async def mark(complete: bool, rv: str, count: int) -> None:
        marks.append((complete, rv, count))

    return changes, marks, emit, mark


async def test_a_relist_after_410_publishes_only_the_differences(
    kubesim_factory: Callable[..., KubeSimThread], tmp_path: Path
) -> None:
    sim = kubesim_factory(watch_history=5)
    api = kube_api_client(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
    core = client.CoreV1Api(api)
    for name in ("keep", "change", "remove"):
        core.create_namespaced_config_map("default", config_map(name))
    changes, marks, emit, mark = recorder()
    watch = ResourceWatch(KubeClient(api), CONFIG_MAPS, emit=emit, mark=mark, watch_timeout=5)
    await watch.relist()
    assert sorted((c.event, c.name) for c in changes) == [
        ("ADDED", "change"),
        ("ADDED", "keep"),
        ("ADDED", "remove"),
    ]
    assert marks[0][0] is False
    assert marks[-1] == (True, watch.resource_version, 3)
    changes.clear()

    # While nobody watches, more happens than the server's watch history keeps.
    core.patch_namespaced_config_map("change", "default", {"data": {"v": "2"}})
    core.delete_namespaced_config_map("remove", "default")
    for i in range(10):
        core.create_namespaced_config_map("default", config_map(f"new-{i}"))
        core.delete_namespaced_config_map(f"new-{i}", "default")
    core.create_namespaced_config_map("default", config_map("added"))

    stopping = asyncio.Event()
    raised: BaseException | None = None
    try:
        await asyncio.wait_for(watch.watch(stopping), 10)
    except Gone as exc:
        raised = exc
    assert isinstance(raised, Gone)
    await watch.relist()
    got = sorted((c.event, c.name, c.relist) for c in changes)
    assert got == [
        ("ADDED", "added", True),
        ("DELETED", "remove", True),
        ("MODIFIED", "change", True),
    ]
    deleted = next(c for c in changes if c.event == "DELETED")
    assert msgspec.json.decode(deleted.raw)["metadata"]["name"] == "remove"
    api.close()


async def test_watch_events_reach_the_bus_with_ids_and_sync_markers(
    nats_client: Client, kubesim: KubeSimThread, tmp_path: Path
) -> None:
    js = nats_client.jetstream()
    await ensure_streams(js)
    api = kube_api_client(str(kubesim.write_kubeconfig(tmp_path / "kubeconfig")))
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map("default", config_map("before"))
    settings = WatcherSettings(
        cluster="east", resources=("v1/configmaps",), watch_timeout_seconds=5
    )
    [watch] = await prepare_watches(nats_client, settings, KubeClient(api))
    stopping = asyncio.Event()
    async with tap(nats_client) as published:
        task = asyncio.create_task(watch.run(stopping))
        try:
            await wait_until_async(lambda: _ready(watch), what="_ready(watch)")
            core.create_namespaced_config_map("default", config_map("during"))
            core.delete_namespaced_config_map("before", "default")

            async def seen_delete() -> bool:
                return any(isinstance(e, Observation) and e.event == "DELETED"
                           for _, e, _ in published.messages)

            await wait_until_async(seen_delete, what="the deletion published")
        finally:
            stopping.set()
            await asyncio.wait_for(task, 10)
            api.close()
    messages = [(subject, event, headers.get("Nats-Msg-Id", ""))
                for subject, event, headers in published.messages]
    ttls = [(getattr(e, "event", None), headers.get("Nats-TTL"))
            for _, e, headers in published.messages if isinstance(e, Observation)]
    assert ttls == [("ADDED", None), ("ADDED", None), ("DELETED", str(TOMBSTONE_TTL_SECONDS))], (
        "only a deletion expires, after the tombstone TTL"
    )
    kinds = [
        (type(e).__name__, getattr(e, "event", getattr(e, "complete", None)))
        for _, e, _ in messages
    ]
    assert kinds == [
        ("SyncMarker", False),
        ("Observation", "ADDED"),
        ("SyncMarker", True),
        ("Observation", "ADDED"),
        ("Observation", "DELETED"),
    ]
    for subject, event, msg_id in messages:
        if isinstance(event, Observation):
            meta = event.object["metadata"]
            assert subject == f"kube.obs.east._.configmaps.default.{meta['name']}"
            assert msg_id == f"{meta['uid']}:{meta['resourceVersion']}:{event.event}"
            assert event.object["kind"] == "ConfigMap"
        else:
            assert isinstance(event, SyncMarker)
    # The stream keeps the latest of each: the complete marker, "during", and the deletion.
    kept = [(type(e).__name__, getattr(e, "event", getattr(e, "complete", None)))
            for _, e, _ in await _kube_messages(nats_client)]
    assert kept == [("SyncMarker", True), ("Observation", "ADDED"), ("Observation", "DELETED")]


async def test_a_restarted_watcher_publishes_only_what_changed_while_it_was_down(
    nats_client: Client, kubesim: KubeSimThread, tmp_path: Path
) -> None:
    js = nats_client.jetstream()
    await ensure_streams(js)
    api = kube_api_client(str(kubesim.write_kubeconfig(tmp_path / "kubeconfig")))
    core = client.CoreV1Api(api)
    for name in ("a", "b", "c"):
        core.create_namespaced_config_map("default", config_map(name))
    settings = WatcherSettings(cluster="east", resources=("v1/configmaps",))
    [first] = await prepare_watches(nats_client, settings, KubeClient(api))
    await first.relist()
    core.delete_namespaced_config_map("b", "default")  # while no watcher runs
    async with tap(nats_client) as published:
        [second] = await prepare_watches(nats_client, settings, KubeClient(api))
        await second.relist()

        async def relist_complete() -> bool:
            return any(isinstance(e, SyncMarker) and e.complete for _, e, _ in published.messages)

        await wait_until_async(relist_complete, what="the relist's complete sync marker")
    observed = [
        (e.event, e.object["metadata"]["name"], e.relist)
        for _, e, _ in published.messages
        if isinstance(e, Observation)
    ]
    assert observed == [("DELETED", "b", True)]
    api.close()


async def _ready(watch: ResourceWatch) -> bool:
    return watch.synced


async def _kube_messages(nc: Client) -> list[tuple[str, Any, str]]:
    """(subject, message, dedup id) of what KUBE holds now: each subject's latest."""
    js = nc.jetstream()
    info = await js.stream_info("KUBE")
    out = []
    for seq in range(1, info.state.last_seq + 1):
        try:
            raw = await js.get_msg("KUBE", seq)
        except NotFoundError:
            continue  # replaced by a newer message on its subject
        headers = raw.headers or {}
        out.append(
            (raw.subject or "", codec.decode(raw.data or b""), headers.get("Nats-Msg-Id", ""))
        )
    return out


def test_managed_fields_are_stripped_and_list_items_get_their_kind() -> None:
    raw = msgspec.json.encode(
        {"metadata": {"name": "a", "managedFields": [{"manager": "x"}]}, "data": {"k": "v"}}
    )
    cleaned = msgspec.json.decode(clean_object(raw, "v1", "ConfigMap"))
    assert cleaned == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "a"},
        "data": {"k": "v"},
    }
    untouched = msgspec.json.encode({"metadata": {"name": "b"}})
    assert clean_object(untouched) is untouched


async def test_a_watched_object_is_published_without_its_managed_fields() -> None:
    changes, _, emit, mark = recorder()
    api = client.ApiClient()
    watch = ResourceWatch(KubeClient(api), CONFIG_MAPS, emit=emit, mark=mark)
    managed = {"metadata": {"name": "a", "namespace": "default", "uid": "u", "resourceVersion": "7",
                            "managedFields": [{"manager": "x"}]}, "data": {"k": "v"}}
    plain = {"metadata": {"name": "b", "namespace": "default", "uid": "w", "resourceVersion": "8"}}
    plain_raw = msgspec.json.encode(plain)
    for event in ({"type": "ADDED", "object": managed}, {"type": "MODIFIED", "object": plain}):
        await watch._on_line(msgspec.json.encode(event), 0.0)
    api.close()
    assert [(c.event, c.name, c.resource_version) for c in changes] == [
        ("ADDED", "a", "7"), ("MODIFIED", "b", "8")]
    assert msgspec.json.decode(changes[0].raw)["metadata"] == {
        "name": "a", "namespace": "default", "uid": "u", "resourceVersion": "7"}
    assert changes[1].raw == plain_raw  # published as received
    assert watch.resource_version == "8"


async def test_bookmarks_move_the_resume_point_without_publishing(
    kubesim_factory: Callable[..., KubeSimThread], tmp_path: Path
) -> None:
    sim = kubesim_factory(bookmark_interval=0.2)
    api = kube_api_client(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map("default", config_map("a"))
    changes, _, emit, mark = recorder()
    watch = ResourceWatch(KubeClient(api), CONFIG_MAPS, emit=emit, mark=mark, watch_timeout=30)
    await watch.relist()
    listed_at = int(watch.resource_version)
    changes.clear()
    stopping = asyncio.Event()
    task = asyncio.create_task(watch.watch(stopping))
    try:
        # Writes to another resource advance the global resourceVersion; only bookmarks carry it.
        core.create_namespaced_secret("default", {"metadata": {"name": "s"}, "data": {}})

        async def advanced() -> bool:
            return int(watch.resource_version) > listed_at

        await wait_until_async(advanced, what="advanced", timeout=10)
    finally:
        stopping.set()
        await asyncio.wait_for(task, 10)
        api.close()
    assert changes == []
