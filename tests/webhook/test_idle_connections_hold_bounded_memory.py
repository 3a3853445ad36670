"""3,000 idle TLS connections against one webhook replica leave it under its memory limit.

The replica runs as its own process, as deployed, without ``--client-ca`` (the worst case:
every connection completes its handshake; with it, a caller without a certificate is dropped in
the handshake). Its resident memory is read from ``/proc``. Two floods: connections that
complete the TLS handshake and send nothing (the replica keeps ``--max-connections`` of them and
evicts the longest idle for each new one), and connections that open TCP and never send a
ClientHello (held only until the handshake timeout). After each, a review is still answered
promptly. And while 3,000 idle connections and more slow ones than the cap (a request head sent
a byte a second) are held, reviews from the API server are all answered with their steering
patch. The figures are printed (``pytest -s``).
"""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import socket
import ssl
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import nats
import pytest

from events import codec, subjects
from events.messages import Observation, SyncMarker
from services.webhook.review_protocol import STALLED_SECONDS
from spreadbus.cli.local_stack import Child
from spreadbus.runtime.nats_server import NatsServer
from tests.fixtures.connection_flood import ConnectionFlood
from tests.webhook.admission_reviews import pod, review
from tests.workloadspread.webhook.cluster_state import (
    LISTED,
    MATCHED,
    RESOURCES,
    deployment,
    new_pod,
    replicaset,
    spread,
    zone_subset,
)
from tlsserving import PemPaths, issue_server_cert, make_ca

FLOOD = 3_000
KEPT = 500
SLOW = 600
"""More than ``KEPT``: slow clients alone would fill every slot if they could keep them."""
REVIEWS = 200
LIMIT_BYTES = 512 * 1024 * 1024
"""The webhook container's memory limit in deploy/services/webhook.yaml."""


class Replica:
    def __init__(self, child: Child, port: int, health_port: int, ca_file: Path) -> None:
        self.child = child
        self.port = port
        self.health_port = health_port
        self.ca_file = ca_file

    def rss(self) -> int:
        """Resident memory in bytes, from ``/proc/<pid>/status``."""
        assert self.child.process is not None
        status = Path(f"/proc/{self.child.process.pid}/status").read_text()
        line = next(x for x in status.splitlines() if x.startswith("VmRSS:"))
        return int(line.split()[1]) * 1024

    def metric(self, name: str) -> float:
        url = f"http://127.0.0.1:{self.health_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            for line in response.read().decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[1])
        raise AssertionError(f"no metric {name}")

    def context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def review_seconds(self) -> float:
        """Time to answer one pod review on a new connection, handshake included."""
        body = json.dumps(review(operation="CREATE", resource="pods",
                                 obj=pod(generate_name="web-"))).encode()
        started = time.perf_counter()
        with (socket.create_connection(("127.0.0.1", self.port), timeout=10) as raw,
              self.context().wrap_socket(raw, server_hostname="127.0.0.1") as tls):
            tls.sendall(b"POST /mutate-pod HTTP/1.1\r\nHost: w\r\nContent-Length: %d\r\n"
                        b"Connection: close\r\n\r\n%s" % (len(body), body))
            answer = b""
            while chunk := tls.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
        return time.perf_counter() - started


@pytest.fixture
def replica(nats_server: NatsServer, tmp_path: Path) -> Iterator[Replica]:
    ca = make_ca("flood CA")
    ca_file = ca.write(tmp_path, "ca").cert
    server: PemPaths = issue_server_cert(ca, ["127.0.0.1"]).write(tmp_path, "webhook")
    argv = [sys.executable, "-m", "services.webhook", f"--nats-url={nats_server.url}",
            "--cluster=c1", "--host=127.0.0.1", "--port=0", "--http-host=127.0.0.1",
            "--http-port=0", f"--tls-cert={server.cert}", f"--tls-key={server.key}",
            f"--max-connections={KEPT}", "--tls-handshake-timeout-seconds=5"]
    child = Child("webhook", argv, tmp_path / "webhook.log")
    child.start()
    try:
        deadline = time.monotonic() + 60
        while not (child.reported_port("webhook listening") and child.ready()):
            assert child.running, child.log_tail()
            assert time.monotonic() < deadline, child.log_tail()
            time.sleep(0.1)
        yield Replica(child, child.reported_port("webhook listening"), child.health_port,
                      ca_file)
    finally:
        child.terminate()
        child.wait_or_kill(time.monotonic() + 10)


def test_idle_tls_connections_beyond_the_cap_evict_the_longest_idle_and_memory_stays_low(
    replica: Replica,
) -> None:
    before = replica.rss()
    context = replica.context()
    with ExitStack() as held:
        for _ in range(FLOOD):
            raw = held.enter_context(socket.create_connection(("127.0.0.1", replica.port)))
            held.enter_context(context.wrap_socket(raw, server_hostname="127.0.0.1"))
        time.sleep(0.5)  # the last handshakes' protocols are made after the client's finish
        flooded = replica.rss()
        kept = replica.metric("spreadbus_webhook_connections")
        evicted = replica.metric("spreadbus_webhook_connections_evicted")
        answer = replica.review_seconds()
    print(f"\n{FLOOD} idle TLS connections: RSS {before / 2**20:.1f} MiB -> "
          f"{flooded / 2**20:.1f} MiB; kept {kept:.0f}, evicted {evicted:.0f}; "
          f"a review then took {answer * 1000:.1f} ms")
    assert kept <= KEPT
    assert evicted >= FLOOD - KEPT
    assert flooded < LIMIT_BYTES / 4, "far below the limit: the cap bounds what is held"
    assert answer < 1.0


def test_connections_that_never_say_hello_are_dropped_at_the_handshake_timeout(
    replica: Replica,
) -> None:
    before = replica.rss()
    with ExitStack() as held:
        for _ in range(FLOOD):
            held.enter_context(socket.create_connection(("127.0.0.1", replica.port)))
        time.sleep(1.0)
        flooded = replica.rss()
        answer = replica.review_seconds()
        time.sleep(5.5)  # the handshake timeout
        failed = replica.metric("spreadbus_webhook_tls_handshakes_failed")
    print(f"\n{FLOOD} silent TCP connections: RSS {before / 2**20:.1f} MiB -> "
          f"{flooded / 2**20:.1f} MiB; a review meanwhile took {answer * 1000:.1f} ms; "
          f"{failed:.0f} handshakes timed out")
    assert flooded < LIMIT_BYTES / 4
    assert failed >= FLOOD
    assert answer < 1.0


async def publish_cluster(url: str) -> None:
    """A Deployment's ReplicaSet under a WorkloadSpread of two zones, listed, on the bus."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        for obj in (deployment(), replicaset(),
                    spread([zone_subset("zone-a", 1000), zone_subset("zone-b")])):
            group, version, resource = RESOURCES[obj["kind"]]
            meta = obj["metadata"]
            message = Observation(cluster="c1", group=group, version=version, resource=resource,
                                  event="ADDED", object=obj)
            await js.publish(subjects.observation("c1", group, resource, meta["namespace"],
                                                  meta["name"]), codec.encode(message))
        for kind in LISTED:
            group, version, resource = RESOURCES[kind]
            marker = SyncMarker(cluster="c1", group=group, version=version, resource=resource,
                                complete=True)
            await js.publish(subjects.sync("c1", group, resource), codec.encode(marker))
    finally:
        await nc.close()


def steering_review(connection: http.client.HTTPSConnection) -> tuple[str, dict[str, Any]]:
    """A ReplicaSet's pod CREATE on a kept-alive connection: the uid sent and the answer."""
    body = review(operation="CREATE", resource="pods", obj=new_pod())
    connection.request("POST", "/mutate-pod", body=json.dumps(body).encode(),
                       headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    answer = json.loads(response.read())
    assert response.status == 200, answer
    return str(body["request"]["uid"]), answer


def patched_subset(answer: dict[str, Any]) -> str | None:
    """The subset the answer's patch puts the pod in (``None`` without a patch)."""
    if "patch" not in answer["response"]:
        return None
    for op in json.loads(base64.b64decode(answer["response"]["patch"])):
        value = op.get("value")
        if op["path"].endswith(MATCHED.replace("/", "~1")):
            return str(json.loads(value)["subset"])
        if isinstance(value, dict) and MATCHED in value:
            return str(json.loads(value[MATCHED])["subset"])
    return None


def test_reviews_are_all_answered_with_their_patch_while_idle_and_slow_connections_are_held(
    replica: Replica, nats_server: NatsServer,
) -> None:
    asyncio.run(publish_cluster(nats_server.url))
    api_server = http.client.HTTPSConnection("127.0.0.1", replica.port, timeout=10,
                                             context=replica.context())
    deadline = time.monotonic() + 30
    while patched_subset(steering_review(api_server)[1]) is None:
        assert time.monotonic() < deadline, "the webhook never steered: its view is not listed"
        time.sleep(0.1)
    api_server.close()  # the flood will have evicted it: the API server's next call reconnects
    with ConnectionFlood(replica.port, replica.context(), idle=FLOOD, slow=SLOW) as flood:
        time.sleep(STALLED_SECONDS)  # the first slow requests have been arriving long enough
        held = replica.rss()
        api_server.connect()
        answers = [steering_review(api_server) for _ in range(REVIEWS)]
        api_server.close()
        kept = replica.metric("spreadbus_webhook_connections")
        evicted = replica.metric("spreadbus_webhook_connections_evicted")
        refused = replica.metric("spreadbus_webhook_connections_refused")
        opened = flood.opened
    print(f"\n{REVIEWS} reviews while {opened} connections ({FLOOD} idle, {SLOW} slow) were "
          f"held: RSS {held / 2**20:.1f} MiB; kept {kept:.0f}, evicted {evicted:.0f}, "
          f"refused {refused:.0f}")
    assert opened == FLOOD + SLOW
    for uid, answer in answers:
        assert answer["response"]["uid"] == uid
        assert answer["response"]["allowed"] is True
        assert patched_subset(answer) == "zone-a", answer
    assert kept <= KEPT
    assert held < LIMIT_BYTES
