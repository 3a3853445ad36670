"""With the hub's certificate (as its clients get TLS), its leaf port takes TLS links only: a
member that checks the hub against the CA links and its observations cross; one dialing
without TLS does not link, on real servers."""

from __future__ import annotations

import ssl
from pathlib import Path

import nats

from events import streams
from spreadbus.runtime import member_bus
from spreadbus.runtime.nats_server import ServerConfig
from spreadbus.runtime.stream_setup import ensure_streams
from tests.fixtures.member_bus import ADMIN, leaf_connections
from tests.memberbus.bus_reading import subjects_held, wait_for
from tlsserving.certs import issue_server_cert, make_ca


async def test_a_member_links_over_tls_and_a_plain_one_does_not(tmp_path: Path) -> None:
    ca = make_ca("hub-ca")
    ca_paths = ca.write(tmp_path / "pki", "ca")
    served = issue_server_cert(ca, ["127.0.0.1", "localhost"]).write(tmp_path / "pki", "hub")
    hub = member_bus.start_hub(tmp_path / "hub", tmp_path / "conf",
                               {"member1": "p1", "member2": "p2"}, users=[ADMIN], monitor=True,
                               base=ServerConfig(tls_cert=served.cert, tls_key=served.key))
    secure = member_bus.start_member_server(tmp_path / "m1", tmp_path / "conf", "member1",
                                            hub.leaf_url, "p1", hub_ca=ca_paths.cert,
                                            monitor=True)
    plain = member_bus.start_member_server(tmp_path / "m2", tmp_path / "conf", "member2",
                                           hub.leaf_url, "p2", monitor=True)
    try:
        local = await nats.connect(secure.url)
        try:
            await ensure_streams(local.jetstream(), member_bus.member_streams("member1"))
            subject = "kube.obs.member1.core.pods.default.web-0"
            await local.jetstream().publish(subject, b"{}")
        finally:
            await local.close()
        hub_client = await nats.connect(hub.server.url, user=ADMIN["user"],
                                        password=ADMIN["password"], max_reconnect_attempts=1,
                                        tls=ssl.create_default_context(cafile=str(ca_paths.cert)))
        try:
            await ensure_streams(hub_client.jetstream(), member_bus.hub_streams(["member1"]))

            async def crossed() -> bool:
                return subject in await subjects_held(hub_client.jetstream(),
                                                      streams.KUBE.name)

            await wait_for("member1's observation over the TLS link", crossed)
        finally:
            await hub_client.close()

        async def refused() -> bool:
            return (b"tls" in plain.log.lower() and leaf_connections(plain) == 0
                    and leaf_connections(secure) == 1)

        await wait_for("the plain link refused", refused, timeout=20)
    finally:
        plain.stop()
        secure.stop()
        hub.stop()

