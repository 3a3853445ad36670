"""The in-process Cluster goes through the same pipeline as HTTP and shares its watch fan-out."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client

from kubesim import KubeSim, KubeSimThread
from kubesim.interface import NAMESPACES, PODS, ApiError, Cluster
from tests.kubesim.conftest import pod


class RecordingBehaviour:
    def __init__(self) -> None:
        self.events: list[str] = []
        self.cluster: Cluster | None = None

    async def start(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.events.append("start")

    async def stop(self) -> None:
        self.events.append("stop")


async def test_cluster_calls_share_resource_versions_with_http() -> None:
    sim = KubeSim(tls=False)
    await sim.start()
    try:
        created = await sim.cluster.create(PODS, pod("a"), namespace="default")
        got = await sim.cluster.get(PODS, "a", namespace="default")
        assert got["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
        items, rv = await sim.cluster.list(PODS, namespace="default")
        assert [i["metadata"]["name"] for i in items] == ["a"]
        assert int(rv) >= int(created["metadata"]["resourceVersion"])
        got["metadata"]["labels"] = {"mutated": "locally"}
        again = await sim.cluster.get(PODS, "a", namespace="default")
        assert again["metadata"].get("labels") == {}
    finally:
        await sim.stop()


async def test_cluster_errors_are_api_errors_with_status() -> None:
    sim = KubeSim(tls=False)
    await sim.start()
    try:
        with pytest.raises(ApiError) as info:
            await sim.cluster.get(PODS, "missing", namespace="default")
        assert (info.value.code, info.value.reason) == (404, "NotFound")
        await sim.cluster.create(PODS, pod("a"), namespace="default")
        with pytest.raises(ApiError) as info:
            await sim.cluster.create(PODS, pod("a"), namespace="default")
        assert info.value.status()["reason"] == "AlreadyExists"
    finally:
        await sim.stop()


async def test_cluster_watch_sees_writes_made_over_the_cluster() -> None:
    sim = KubeSim(tls=False)
    await sim.start()
    try:
        _, rv = await sim.cluster.list(PODS, namespace="default")
        events: list[tuple[str, str]] = []

        async def consume() -> None:
            async for ev in sim.cluster.watch(PODS, namespace="default", resource_version=rv):
                events.append((ev.type, ev.object["metadata"]["name"]))
                if len(events) == 3:
                    return

        task = asyncio.create_task(consume())
        await sim.cluster.create(PODS, pod("a"), namespace="default")
        await sim.cluster.patch(
            PODS,
            "a",
            {"metadata": {"labels": {"x": "1"}}},
            patch_type="strategic",
            namespace="default",
        )
        await sim.cluster.delete(PODS, "a", namespace="default")
        await asyncio.wait_for(task, 5)
        assert events == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    finally:
        await sim.stop()


async def test_injected_clock_stamps_objects() -> None:
    fixed = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    sim = KubeSim(tls=False, clock=lambda: fixed)
    await sim.start()
    try:
        assert sim.cluster.now() == "2030-01-02T03:04:05Z"
        ns = await sim.cluster.create(NAMESPACES, {"metadata": {"name": "t"}})
        assert ns["metadata"]["creationTimestamp"] == "2030-01-02T03:04:05Z"
    finally:
        await sim.stop()


def test_behaviours_start_with_the_cluster_and_stop_first() -> None:
    behaviour = RecordingBehaviour()
    sim = KubeSimThread(behaviours=[behaviour]).start()
    try:
        assert behaviour.events == ["start"]
        assert behaviour.cluster is sim.cluster
    finally:
        sim.stop()
    assert behaviour.events == ["start", "stop"]


def test_objects_created_in_process_are_visible_over_https(
    kubesim: KubeSimThread, kube_api_client: client.ApiClient
) -> None:
    async def make() -> dict[str, Any]:
        return await kubesim.cluster.create(PODS, pod("inproc"), namespace="default")

    created = kubesim.call(make())
    seen = client.CoreV1Api(kube_api_client).read_namespaced_pod("inproc", "default")
    assert seen.metadata.uid == created["metadata"]["uid"]


def test_kubeconfig_points_at_the_https_server(kubeconfig_path, kubesim: KubeSimThread) -> None:  # type: ignore[no-untyped-def]
    from kubernetes import config

    api = config.new_client_from_config(str(kubeconfig_path))
    try:
        names = [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items]
    finally:
        api.close()
    assert kubesim.url.startswith("https://")
    assert "default" in names
    assert "kube-system" in names
