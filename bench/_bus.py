"""Shared set-up for the bus benchmarks: a throw-away nats-server, set up as ``spreadbus bus-setup``
sets it up, and realistic observations."""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nats

from events import codec, subjects
from events.messages import Observation, SyncMarker
from spreadbus.cli.bus_setup import BusSetupSettings, layout_of
from spreadbus.runtime.bus_setup import set_up_bus
from spreadbus.runtime.nats_server import NatsServer


def full_size() -> bool:
    return os.environ.get("SPREADBUS_BENCH_FULL") == "1"


@contextlib.contextmanager
def nats_server() -> Iterator[NatsServer]:
    with tempfile.TemporaryDirectory(prefix="spreadbus-bench-") as tmp:
        server = NatsServer(store_dir=Path(tmp) / "nats").start()
        try:
            # On a thread of its own: benchmarks enter this from their running event loop.
            with ThreadPoolExecutor(1) as pool:
                pool.submit(asyncio.run, set_up(server.url)).result()
            yield server
        finally:
            server.stop()


async def set_up(url: str, **options: Any) -> None:
    """Every stream and bucket the services need, as the setup user would create them."""
    nc = await nats.connect(url, **options)
    try:
        await set_up_bus(nc.jetstream(), layout_of(BusSetupSettings()))
    finally:
        await nc.close()


def deployment(i: int, generation: int) -> dict[str, object]:
    name = f"web-{i}"
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": f"team-{i % 20}",
            "uid": f"00000000-0000-4000-8000-{i:012d}",
            "resourceVersion": str(i * 7 + generation),
            "generation": generation,
            "labels": {"app": name},
            "annotations": {"spreadbus.io/observed-generation": str(generation - 1)},
        },
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": name}}},
        "status": {"replicas": 3, "readyReplicas": 3, "observedGeneration": generation},
    }


def observation(i: int, objects: int, cluster: str = "bench") -> tuple[str, bytes, str]:
    """The i-th observation of a log cycling through ``objects`` Deployments."""
    index, generation = i % objects, i // objects + 1
    obj = deployment(index, generation)
    meta = obj["metadata"]
    assert isinstance(meta, dict)
    event = "ADDED" if generation == 1 else "MODIFIED"
    message = Observation(cluster=cluster, group="apps", version="v1", resource="deployments",
                          event=event, object=obj, ts=float(i))  # type: ignore[arg-type]
    subject = subjects.observation(cluster, "apps", "deployments", str(meta["namespace"]),
                                   str(meta["name"]))
    return subject, codec.encode(message), f"{meta['uid']}:{meta['resourceVersion']}:{event}"


def sync_marker(cluster: str = "bench") -> tuple[str, bytes]:
    marker = SyncMarker(cluster=cluster, group="apps", version="v1", resource="deployments",
                        complete=True)
    return subjects.sync(cluster, "apps", "deployments"), codec.encode(marker)
