"""``spreadbus bus-setup --member NAME`` sets a member's domain up on its leaf server and
``spreadbus bus-setup --members ...`` makes the hub's streams and buckets copy the members' (a
bucket only the member's own keys), on real servers;
a name that cannot be a member's domain is a bad setting naming the flag."""

from __future__ import annotations

import asyncio
from pathlib import Path

import nats
import pytest

from events import streams
from spreadbus.cli import main
from spreadbus.clusterregistry.heartbeat import BUCKET, heartbeat_key
from spreadbus.runtime import member_bus
from tests.memberbus.bus_reading import subjects_held, wait_for


def test_bus_setup_sets_a_member_and_the_hub_up(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    hub = member_bus.start_hub(tmp_path / "hub", tmp_path / "conf", {})
    member = member_bus.start_member_server(tmp_path / "m1", tmp_path / "conf", "member1",
                                            hub.leaf_url, "")
    try:
        assert main(["bus-setup", "--nats-url", member.url, "--member", "member1"]) == 0
        assert main(["bus-setup", "--nats-url", hub.server.url, "--members", "member1"]) == 0
        assert "stream KUBE created" in capsys.readouterr().out
        asyncio.run(_observation_crosses(member.url, hub.server.url))
    finally:
        member.stop()
        hub.stop()


async def _observation_crosses(member_url: str, hub_url: str) -> None:
    member, hub = await nats.connect(member_url), await nats.connect(hub_url)
    try:
        subject = "kube.obs.member1.core.pods.default.web-0"
        await member.jetstream().publish(subject, b"{}")

        async def arrived() -> bool:
            return subject in await subjects_held(hub.jetstream(), streams.KUBE.name)

        await wait_for("member1's observation in the hub's KUBE", arrived)
        # A member's services write its buckets; the hub's copy the member's own keys only.
        local = await member.jetstream().key_value(BUCKET)
        await local.put(heartbeat_key("member1"), b"beat")
        await local.put("member2.agent", b"forged")
        hub_kv = await hub.jetstream().key_value(BUCKET)

        async def beat_arrived() -> bool:
            return bool(await subjects_held(hub.jetstream(), f"KV_{BUCKET}"))

        await wait_for("member1's heartbeat in the hub's bucket", beat_arrived)
        assert (await hub_kv.get(heartbeat_key("member1"))).value == b"beat"
        assert await subjects_held(hub.jetstream(), f"KV_{BUCKET}") == {
            f"$KV.{BUCKET}.member1.agent": 1}
        info = await member.jetstream().stream_info(streams.PLANS.name)
        assert [(s.name, s.filter_subject) for s in info.config.sources or []] == [
            ("PLANS", "plan.member1.>")]
        for stream in ("ADMISSIONS", "HISTORY"):
            await member.jetstream().stream_info(stream)
    finally:
        await member.close()
        await hub.close()


@pytest.mark.parametrize(("args", "message"), [
    (["--member", "hub"], "bad setting --member 'hub': is the hub's domain"),
    (["--members", "member1,Member_2"], "bad setting --members 'Member_2': "),
    (["--member", "member1", "--members", "member2"], "not both"),
])
def test_a_name_that_cannot_be_a_domain_is_a_bad_setting(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bus-setup", "--nats-url", "nats://127.0.0.1:1", *args]) == 2
    assert message in capsys.readouterr().err
