"""The services' NATS connection: TLS with our CA, several URLs, and readiness flips."""

from __future__ import annotations

from pathlib import Path

from nats.aio.client import Client

from spreadbus.runtime.health import ReadinessGate
from spreadbus.runtime.nats_connection import NatsOptions, connect_nats
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.settings import ServiceSettings
from spreadbus.tls.certs import issue_server_cert, make_ca


async def test_a_tls_only_server_is_reached_through_the_configured_ca(tmp_path: Path) -> None:
    ca = make_ca("bus test CA")
    ca_paths = ca.write(tmp_path, "ca")
    server_paths = issue_server_cert(ca, ["127.0.0.1", "localhost"]).write(tmp_path, "server")
    server = NatsServer(
        store_dir=tmp_path / "nats",
        extra_args=["--tls", "--tlscert", str(server_paths.cert), "--tlskey",
                    str(server_paths.key)],
    ).start()
    try:
        settings = ServiceSettings(
            nats_url=("nats://127.0.0.1:1", f"tls://127.0.0.1:{server.port}"),
            nats_tls_ca=str(ca_paths.cert),
        )
        gate = ReadinessGate("nats")
        options = NatsOptions.from_settings(settings, name="tls-test")
        nc: Client = await connect_nats(options, gate=gate)
        try:
            assert nc.is_connected
            assert gate.conditions == {"nats": True}
            await nc.publish("hello", b"x")
            await nc.flush()
        finally:
            await nc.close()
        assert gate.conditions == {"nats": False}
    finally:
        server.stop()
