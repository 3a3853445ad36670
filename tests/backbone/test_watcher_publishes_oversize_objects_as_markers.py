"""An object too large for the bus is published as a marker that names it and its size, and
the watcher goes on with the rest: the other objects are observed, the watcher gets ready, and
``/readyz`` names the object. Runs against a real nats-server whose ``max_payload`` is small."""

from __future__ import annotations

import asyncio
from pathlib import Path

import nats
from kubernetes import client
from nats.aio.client import Client
from prometheus_client import CollectorRegistry

from events import codec
from events.messages import Observation
from events.streams import KUBE
from kubesim import KubeSimThread
from services.watcher.service import (
    OVERSIZE_NOTE,
    SYNCED,
    WatchReadiness,
    prepare_watches,
)
from services.watcher.settings import WatcherSettings
from spreadbus.runtime.health import ReadinessGate
from spreadbus.runtime.kube_client import KubeClient, kube_api_client
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.stream_setup import ensure_streams
from tests.fixtures.polling import wait_until_async

MAX_PAYLOAD = 64 * 1024


async def _observations_of(nc: Client) -> list[Observation]:
    """Every observation the KUBE stream holds, oldest first."""
    sub = await nc.jetstream().pull_subscribe("kube.obs.>", stream=KUBE.name)
    out: list[Observation] = []
    try:
        while True:
            try:
                msgs = await sub.fetch(256, timeout=0.5)
            except Exception:
                return out
            for msg in msgs:
                event = codec.decode(msg.data)
                if isinstance(event, Observation):
                    out.append(event)
                await msg.ack()
    finally:
        await sub.unsubscribe()


async def test_an_object_too_large_for_the_bus_becomes_a_marker_and_the_rest_go_on(
    kubesim: KubeSimThread, tmp_path: Path
) -> None:
    config = tmp_path / "nats.conf"
    config.write_text(f"max_payload: {MAX_PAYLOAD}\n")
    api = kube_api_client(str(kubesim.write_kubeconfig(tmp_path / "kubeconfig")))
    core = client.CoreV1Api(api)
    big = "x" * (2 * MAX_PAYLOAD)
    core.create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="big", namespace="default"), data={"blob": big}))
    for name in ("small-1", "small-2"):
        core.create_namespaced_config_map("default", client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name=name, namespace="default"), data={"v": "1"}))
    with NatsServer(store_dir=tmp_path / "nats", extra_args=["-c", str(config)]) as server:
        nc = await nats.connect(server.url)
        try:
            assert nc.max_payload == MAX_PAYLOAD
            await ensure_streams(nc.jetstream())
            settings = WatcherSettings(cluster="c1", resources=("v1/configmaps",),
                                       modified_hold_seconds=0)
            registry = CollectorRegistry()
            watches = await prepare_watches(nc, settings, KubeClient(api), registry)
            readiness = WatchReadiness(watches, registry, watches.publisher)
            stopping = asyncio.Event()
            tasks = [asyncio.create_task(w.run(stopping)) for w in watches]
            try:
                await wait_until_async(readiness.synced, what="the watcher synced")
                await watches.publisher.flush()
                gate = ReadinessGate(SYNCED)
                readiness.report(gate)
                assert gate.ready
                note = gate.notes[OVERSIZE_NOTE]
                assert note.startswith("configmaps default/big (")
                observed = {o.object["metadata"]["name"]: o
                            for o in await _observations_of(nc) if isinstance(o, Observation)}
                assert {"small-1", "small-2", "big"} <= set(observed)
                marker = observed["big"]
                assert marker.oversize > 2 * MAX_PAYLOAD
                assert f"({marker.oversize} bytes)" in note
                assert "data" not in marker.object
                assert marker.object["metadata"]["uid"]
                assert marker.object["kind"] == "ConfigMap"
                assert observed["small-1"].oversize == 0
                assert observed["small-1"].object["data"] == {"v": "1"}
                assert registry.get_sample_value("spreadbus_watcher_oversize_objects_total",
                                                 {"resource": "configmaps"}) == 1.0

                # Shrunk below the limit, it is observed whole again and the note goes.
                core.patch_namespaced_config_map("big", "default", {"data": {"blob": "small"}})

                async def whole_again() -> bool:
                    latest = [o for o in await _observations_of(nc)
                              if isinstance(o, Observation)
                              and o.object["metadata"]["name"] == "big"]
                    return bool(latest) and latest[-1].oversize == 0
                await wait_until_async(whole_again, what="big observed whole", interval=0.2)
                readiness.report(gate)
                assert OVERSIZE_NOTE not in gate.notes
            finally:
                stopping.set()
                await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            await nc.close()
