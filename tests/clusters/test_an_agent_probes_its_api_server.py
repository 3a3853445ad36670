"""The member agent's probe of its own API server, over HTTP with the official client: a
healthy kubesim gives Healthy and its version, a server whose ``/readyz`` fails gives
Unhealthy, one that does not answer gives Unreachable; and the heartbeat is put under the
member's own key."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kubernetes import client

from services.watcher.heartbeat import beat_forever, probe
from spreadbus.clusterregistry.heartbeat import BUCKET, decode, heartbeat_key
from spreadbus.runtime.kube_client import KubeClient
from spreadbus.runtime.nats_server import NatsServer
from tests.backbone.service_processes import free_port
from tests.fixtures.polling import wait_until_async


class _NotReady(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"[-]etcd failed: reason withheld\nreadyz check failed"
        self.send_response(500)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def not_ready_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotReady)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _client(url: str) -> client.ApiClient:
    configuration = client.Configuration()
    configuration.host = url
    return client.ApiClient(configuration)


async def test_a_healthy_api_server_gives_its_version(kube_api_client: client.ApiClient) -> None:
    beat = await probe(KubeClient(kube_api_client), lambda: 12.5)
    assert (beat.health, beat.at) == ("Healthy", 12.5)
    assert beat.kubernetesVersion.startswith("v1.")


async def test_a_failing_readyz_is_unhealthy(not_ready_server: str) -> None:
    with _client(not_ready_server) as api:
        beat = await probe(KubeClient(api), lambda: 1.0)
    assert (beat.health, beat.kubernetesVersion) == ("Unhealthy", "")


async def test_a_server_that_does_not_answer_is_unreachable() -> None:
    with _client(f"http://127.0.0.1:{free_port()}") as api:
        beat = await probe(KubeClient(api), lambda: 1.0)
    assert beat.health == "Unreachable"


async def test_the_heartbeat_lands_under_the_members_key(
        nats_server: NatsServer, kube_api_client: client.ApiClient) -> None:
    import nats

    nc = await nats.connect(nats_server.url)
    stopping = asyncio.Event()
    try:
        task = asyncio.create_task(beat_forever(nc, KubeClient(kube_api_client), "member.1",
                                                stopping, every=0.05, now=lambda: 7.0))
        kv = await nc.jetstream().key_value(BUCKET)

        async def two_beats() -> bool:
            try:
                entry = await kv.get(heartbeat_key("member.1"))
            except Exception:  # not there yet
                return False
            return (entry.revision or 0) >= 2 and decode(entry.value or b"") is not None

        await wait_until_async(two_beats, what="two heartbeats of member.1", timeout=10)
        entry = await kv.get(heartbeat_key("member.1"))
        beat = decode(entry.value or b"")
        assert beat is not None
        assert (beat.health, beat.at) == ("Healthy", 7.0)
        stopping.set()
        await asyncio.wait_for(task, 10)
    finally:
        stopping.set()
        await nc.close()
