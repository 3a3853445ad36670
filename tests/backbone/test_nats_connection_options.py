"""The services' NATS connection: TLS with our CA, an nkey seed, several URLs, readiness."""

from __future__ import annotations

import os
from pathlib import Path

import nats
import nats.errors
import nkeys
import pytest
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


async def test_a_server_requiring_an_nkey_is_reached_with_the_seed_file(tmp_path: Path) -> None:
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    user = nkeys.from_seed(bytearray(seed)).public_key.decode()
    seed_path = tmp_path / "user.nk"
    seed_path.write_bytes(seed)
    config = tmp_path / "nats.conf"
    config.write_text(f'authorization {{ users = [ {{ nkey: "{user}" }} ] }}\n')
    server = NatsServer(store_dir=tmp_path / "nats", extra_args=["-c", str(config)]).start()
    try:
        with pytest.raises(nats.errors.Error, match="Authorization Violation"):
            await nats.connect(server.url, allow_reconnect=False, max_reconnect_attempts=0,
                               connect_timeout=2)  # the server does require the nkey
        gate = ReadinessGate("nats")
        settings = ServiceSettings(nats_url=(server.url,), nats_nkey_seed=str(seed_path))
        nc: Client = await connect_nats(NatsOptions.from_settings(settings, name="nkey-test"),
                                        gate=gate)
        try:
            assert nc.is_connected
            reply = await nc.request("$JS.API.INFO", b"", timeout=5)  # the server answers us
            assert reply.data
        finally:
            await nc.close()
    finally:
        server.stop()
