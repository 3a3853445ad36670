"""``spreadbus bus-users --member NAME`` writes the member's leaf-link user into the hub's users,
with a password of its own that the member's leaf server dials with, on real servers."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from spreadbus.cli import main
from spreadbus.runtime import member_bus
from spreadbus.runtime.nats_server import NatsServer, ServerConfig, free_port
from tests.fixtures.member_bus import leaf_connections
from tests.memberbus.bus_reading import wait_for


async def test_a_member_dials_the_hub_with_what_bus_users_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    credentials = tmp_path / "credentials"
    assert main(["bus-users", "--out", str(credentials), "--cluster", "host",
                 "--member", "member1"]) == 0
    assert "url=nats-leaf://member1-leaf:$(cat " in capsys.readouterr().out
    password_file = member_bus.leaf_password_file(credentials, "member1")
    assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
    password = password_file.read_text().strip()
    assert main(["bus-users", "--out", str(credentials), "--cluster", "host",
                 "--member", "member1"]) == 0  # again: the link's credential is kept
    assert password_file.read_text().strip() == password

    users = (credentials / "users.conf").read_text()
    listen = f"127.0.0.1:{free_port()}"
    config = member_bus.hub_server_config(listen, {}, base=ServerConfig(blocks=(users,)))
    (tmp_path / "hub.conf").write_text(config.render())
    hub = NatsServer(store_dir=tmp_path / "hub", monitor=True,
                     extra_args=["-c", str(tmp_path / "hub.conf")]).start()
    servers = [hub]
    try:
        for name, secret in (("member1", password), ("member1", "a wrong password")):
            servers.append(member_bus.start_member_server(
                tmp_path / f"{name}-{len(servers)}", tmp_path / f"conf{len(servers)}", name,
                f"nats-leaf://{listen}", secret, monitor=True))

        async def linked() -> bool:
            refused = b"authentication error" in hub.log.lower()  # the wrong one has tried
            return refused and [leaf_connections(s) for s in servers] == [1, 1, 0]

        await wait_for("member1's link with the right password only", linked, timeout=20)
    finally:
        for server in servers:
            server.stop()
