"""A webhook replica that has been ready stays ready while NATS restarts.

Every replica loses the bus at the same moment; if each left the Service, the API server would
apply ``failurePolicy: Ignore`` to every pod deletion and eviction, and no PodUnavailableBudget
would be asked. Staying, a replica refuses what it cannot spend. Readiness still shows the lost
link in its conditions.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from spreadbus.runtime.nats_server import NatsServer
from tests.backbone.service_processes import ServiceProcess, logs_on_failure
from tests.webhook.conftest import WebhookTls

pytestmark = pytest.mark.e2e


def test_a_ready_replica_stays_ready_while_nats_is_down_and_shows_the_lost_link(
    nats_server: NatsServer, webhook_tls: WebhookTls, tmp_path: Path,
) -> None:
    args = ["--nats-url", nats_server.url, "--cluster", "c1", "--host", "127.0.0.1",
            "--port", "0", "--tls-cert", str(webhook_tls.server.cert),
            "--tls-key", str(webhook_tls.server.key)]
    webhook = ServiceProcess("webhook", args, tmp_path).start()
    try:
        webhook.wait_ready()
        nats_server.stop()
        seen: list[tuple[int, object]] = []
        deadline = time.monotonic() + 4
        with logs_on_failure(webhook):
            while time.monotonic() < deadline:
                status, body = webhook.readyz()
                conditions = body.get("conditions")
                seen.append((status, conditions.get("nats") if isinstance(conditions, dict)
                             else None))
                time.sleep(0.1)
            assert (200, False) in seen, f"the disconnect never showed: {seen}"
            assert all(status == 200 for status, _ in seen), seen
            nats_server.start()
            assert webhook.terminate() == 0
    finally:
        webhook.kill()
