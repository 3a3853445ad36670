"""A service that loses NATS stays alive and not-ready, and is ready again when NATS returns."""

from __future__ import annotations

import asyncio
import urllib.request
from pathlib import Path

import nats
import pytest

from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.stream_setup import ensure_streams
from tests.backbone.log_builders import synced
from tests.backbone.service_processes import ServiceProcess, logs_on_failure
from tests.fixtures.generation_feature import PLUGIN
from tests.fixtures.polling import wait_until


async def publish_sync(url: str) -> None:
    nc = await nats.connect(url)
    await ensure_streams(nc.jetstream())
    subject, data = synced(cluster="r")
    await nc.jetstream().publish(subject, data)
    await nc.close()


def wait_for_status(
    service: ServiceProcess, status: int, timeout: float = 30.0
) -> dict[str, object]:
    def answered() -> tuple[int, dict[str, object]] | None:
        answer = service.readyz()
        return answer if answer[0] == status else None

    with logs_on_failure(service):
        return wait_until(answered, what=f"readyz {status}", timeout=timeout, interval=0.1)[1]


@pytest.mark.e2e
def test_readyz_follows_the_nats_connection_while_healthz_stays_up(
    nats_server: NatsServer, tmp_path: Path
) -> None:
    asyncio.run(publish_sync(nats_server.url))
    # The test feature's rule reads Deployments alone, whose list the sync marker completes.
    args = ["--nats-url", nats_server.url, "--cluster", "r", "--feature-plugins", PLUGIN]
    planner = ServiceProcess("planner", args, tmp_path).start()
    try:
        planner.wait_ready()
        nats_server.stop()
        body = wait_for_status(planner, 503)
        conditions = body["conditions"]
        assert isinstance(conditions, dict)
        assert conditions["nats"] is False
        with urllib.request.urlopen(f"http://127.0.0.1:{planner.port}/healthz", timeout=2) as r:
            assert r.status == 200
        nats_server.start()
        wait_for_status(planner, 200)
        assert planner.terminate() == 0
    finally:
        planner.kill()
