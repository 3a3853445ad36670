"""A member's leaf credential carries only that member's part of the link, refused by the real
hub server otherwise: it is no client credential, a leaf server dialing with it cannot pass
another cluster's observations or outcomes, nor any subject of its own past the streams, nor
read another member's plans; and what a member's own streams hold of another cluster is not
copied to the hub."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import nats
from nats.aio.msg import Msg

from events import streams
from spreadbus.runtime import member_bus
from spreadbus.runtime.member_bus import leaf_user
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.stream_setup import ensure_streams
from tests.fixtures.member_bus import ADMIN, PASSWORDS, MemberBus, leaf_connections
from tests.memberbus.bus_reading import messages, subjects_held, wait_for


async def test_a_leaf_credential_is_no_client_credential(member_bus_stack: MemberBus) -> None:
    server = member_bus_stack.hub.server

    async def answer(user: str, password: str) -> bytes:
        """The hub's answer to a client's CONNECT and PING, as the protocol has it."""
        reader, writer = await asyncio.open_connection(server.host, server.port)
        try:
            await reader.readline()  # INFO
            connect = {"user": user, "pass": password, "verbose": False, "protocol": 1}
            writer.write(f"CONNECT {json.dumps(connect)}\r\nPING\r\n".encode())
            await writer.drain()
            return await asyncio.wait_for(reader.readline(), 10)
        finally:
            writer.close()

    assert await answer(ADMIN["user"], ADMIN["password"]) == b"PONG\r\n"
    refused = await answer(leaf_user("member1"), PASSWORDS["member1"])
    assert refused.startswith(b"-ERR 'Authorization Violation'"), refused


async def test_a_stolen_leaf_credential_passes_nothing_but_its_part(
    member_bus_stack: MemberBus, tmp_path: Path,
) -> None:
    bus = member_bus_stack
    # A server of the thief's own dials as member1's leaf user, in a domain of its own. The
    # hub keeps one link per leaf user, so member1's own server is stopped first.
    bus.members["member1"].stop()
    await wait_for("member1's link gone", lambda: _links(bus, 1))
    config = member_bus.member_server_config("rogue", bus.hub.leaf_url, PASSWORDS["member1"])
    path = tmp_path / "rogue.conf"
    path.write_text(config.render().replace(leaf_user("rogue"), leaf_user("member1")))
    rogue = NatsServer(store_dir=tmp_path / "rogue", extra_args=["-c", str(path)]).start()
    hub_seen: list[str] = []

    async def seen(msg: Msg) -> None:
        hub_seen.append(msg.subject)

    await bus.hub_client.subscribe(">", cb=seen)
    await bus.hub_client.flush()
    client = await nats.connect(rogue.url)
    try:
        await wait_for("the rogue's leaf link", lambda: _links(bus, 2))
        def create(name: str, filter_subject: str) -> tuple[str, bytes]:
            config = {"name": name, "ack_policy": "none", "filter_subject": filter_subject}
            return (f"$JS.hub.API.CONSUMER.CREATE.PLANS.{name}.{filter_subject}",
                    json.dumps({"stream_name": "PLANS", "config": config}).encode())

        forged = [("kube.obs.member2.core.pods.default.forged", b"forged"),
                  ("outcome.member2.delete.core.pods.default.forged", b"forged"),
                  ("kube.obs.member1.core.pods.default.direct", b"direct"),
                  ("plan.member2.delete.core.pods.default.forged", b"forged"),
                  (f"{member_bus.delivery_prefix('member2')}.S.forged", b"forged"),
                  create("other", "plan.member2.>"),
                  ("$JS.hub.API.CONSUMER.CREATE.PLANS", b"{}"),
                  ("$JS.hub.API.DIRECT.GET.PLANS", b'{"seq": 1}'),
                  ("$JS.hub.API.STREAM.MSG.GET.PLANS", b'{"seq": 1}')]
        replies = await client.subscribe("$JSC.R.thief")
        prefix = member_bus.delivery_prefix("member1")  # member1's own: may cross

        async def crosses(subject: str) -> bool:
            await client.publish(subject, b"probe")
            await client.flush()
            return subject in hub_seen

        # The hub's interest has reached the thief's server once a probe crosses.
        await wait_for("a probe at the hub", lambda: crosses(f"{prefix}.probe"))
        for subject, payload in forged:
            await client.publish(subject, payload, reply="$JSC.R.thief")
        control = f"{prefix}.control"
        await client.publish(control, b"after the forgeries")
        own, payload = create("own", "plan.member1.>")  # member1's own part of PLANS
        await client.publish(own, payload, reply="$JSC.R.thief")
        await client.flush()
        await wait_for("the control message at the hub", lambda: _holds(hub_seen, control))
        # Sent before the control on one connection: had they crossed, they would be here.
        assert [s for s in hub_seen if s in dict(forged)] == []
        reply = await replies.next_msg(timeout=10)
        while not reply.data:  # "no responders", from the thief's own server
            assert (reply.headers or {}).get("Status") == "503", reply.headers
            reply = await replies.next_msg(timeout=10)
        answer = json.loads(reply.data)
        assert answer.get("config", {}).get("filter_subject") == "plan.member1.>", answer
        consumers = {c.name: c.config.filter_subject
                     for c in await bus.hub_client.jetstream().consumers_info("PLANS")}
        assert consumers == {"own": "plan.member1.>"}
    finally:
        await client.close()
        rogue.stop()


async def test_the_hub_copies_only_the_members_subjects_from_its_streams(
    member_bus_stack: MemberBus,
) -> None:
    bus = member_bus_stack
    member = bus.clients["member1"].jetstream()
    # member1's own set-up turned against member2: its KUBE also captures member2's subjects.
    (kube, *_) = member_bus.member_streams("member1")
    await ensure_streams(member, [member_bus.replace_spec(
        kube, subjects=(*kube.subjects, "kube.obs.member2.>"))])
    await member.publish("kube.obs.member2.core.pods.default.forged", b"forged")
    await member.publish("kube.obs.member1.core.pods.default.real", b"real")
    hub = bus.hub_client.jetstream()

    async def real_arrived() -> bool:
        return "kube.obs.member1.core.pods.default.real" in await subjects_held(
            hub, streams.KUBE.name)

    await wait_for("member1's own observation at the hub", real_arrived)
    # Stored in member1's stream before the real one, and sourcing copies in order.
    assert await messages(hub, streams.KUBE.name) == [
        ("kube.obs.member1.core.pods.default.real", b"real")]


async def _links(bus: MemberBus, count: int) -> bool:
    return leaf_connections(bus.hub.server) == count


async def _holds(seen: list[str], subject: str) -> bool:
    return subject in seen
