"""The local stack with its bus open (``Stack(secured_bus=False)``), which the benchmarks compare
the secured bus against: it starts, its services connect, and the bus speaks plain NATS."""

from __future__ import annotations

import asyncio
from pathlib import Path

import nats
import pytest

from spreadbus.cli.local_stack import Stack
from tests.backbone.bus_recording import last_seq
from tests.fixtures.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


async def anonymous_round_trip(url: str) -> bytes:
    """Publish and receive on a subject no user may use on the secured bus."""
    nc = await nats.connect(url, connect_timeout=5, allow_reconnect=False)
    try:
        sub = await nc.subscribe("bench.open")
        await nc.publish("bench.open", b"anyone")
        message = await sub.next_msg(timeout=5)
        return bytes(message.data)
    finally:
        await nc.close()


def test_the_open_bus_stack_starts_and_its_services_reach_a_plain_nats(tmp_path: Path) -> None:
    stack = Stack(data_dir=tmp_path / "stack", cluster="local",
                  kubesim_args=["--topology=elastic", "--no-events"], secured_bus=False)
    try:
        stack.start(120.0)  # returns once every service answers /readyz, the bus included
        assert stack.nats is not None
        url = (tmp_path / "stack" / "nats-url").read_text().strip()
        assert stack.bus_options() == {}
        assert asyncio.run(anonymous_round_trip(url)) == b"anyone"
        # The watcher published the cluster it lists onto the plain bus.
        wait_until(lambda: asyncio.run(last_seq(url, "KUBE")) > 0,
                   what="observations in KUBE", timeout=30)
        assert not (tmp_path / "stack" / "credentials").exists(), "no users were made"
        for service in stack.services:
            assert not any(a.startswith(("--nats-nkey-seed", "--nats-tls-ca"))
                           for a in service.argv), service.name
        log = stack.nats.log.decode(errors="replace")
        assert "Violation" not in log, log
        assert "TLS" not in log.split("Server is ready")[0], log
    finally:
        stack.stop()
