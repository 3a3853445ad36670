"""The nats-server fixture gives a JetStream-enabled server on a port of its own."""

from __future__ import annotations

from nats.aio.client import Client

from spreadbus.runtime.nats_server import NatsServer


async def test_fixture_server_serves_jetstream(
    nats_server: NatsServer, nats_client: Client
) -> None:
    assert nats_server.port > 0
    js = nats_client.jetstream()
    await js.add_stream(name="T", subjects=["t.>"])
    ack = await js.publish("t.one", b"x")
    assert ack.seq == 1


def test_restart_keeps_port_and_store(nats_server: NatsServer) -> None:
    port = nats_server.port
    nats_server.restart()
    assert nats_server.port == port
