"""Each bus user may publish and read exactly its part, on a real nats-server.

The server runs with the users and permissions the local stack and deploy/ use (built-in features),
and every user connects with its own nkey seed: a forged plan from the watcher, the webhook or
the read-only user is refused and never stored, the planner's is; an anonymous client cannot
connect at all; the reader reads every stream but configures none.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import Error as NatsError

from events import streams
from spreadbus.runtime.bus_permissions import READER, SERVICES
from spreadbus.runtime.nats_server import NatsServer
from tests.fixtures.polling import wait_until_async
from tests.fixtures.secured_bus import connect_as


@pytest.fixture
async def clients(secured_bus: tuple[NatsServer, Path]) -> AsyncIterator[dict[str, Client]]:
    server, credentials = secured_bus
    connected = {user: await connect_as(server, credentials, user) for user in (*SERVICES, READER)}
    try:
        yield connected
    finally:
        for nc in connected.values():
            await nc.close()


def violations(server: NatsServer) -> list[str]:
    return [line for line in server.log.decode().splitlines() if "Violation" in line]


async def test_only_the_planner_publishes_plans_and_only_the_actuator_outcomes(
    secured_bus: tuple[NatsServer, Path], clients: dict[str, Client],
) -> None:
    server, _ = secured_bus
    for user, nc in clients.items():
        await nc.publish(f"plan.c1.patch.apps.deployments.default.{user}", b"{}")
        await nc.publish(f"outcome.c1.patch.apps.deployments.default.{user}", b"{}")
        await nc.flush()
    # Each user but one is refused each of the two; the planner and the actuator one each.
    expected = 2 * (len(clients) - 1)
    await wait_until_async(lambda: len(violations(server)) >= expected,
                           what=f"{expected} refusals in the server's log")
    js = clients[READER].jetstream()

    async def stored() -> tuple[int, int] | None:
        counts = ((await js.stream_info(streams.PLANS.name)).state.messages,
                  (await js.stream_info(streams.OUTCOMES.name)).state.messages)
        return counts if counts == (1, 1) else None

    await wait_until_async(stored, what="the planner's plan and the actuator's outcome stored",
                           timeout=10)
    assert (await js.stream_info(streams.PLANS.name)).state.messages == 1
    assert (await js.get_last_msg(streams.PLANS.name, "plan.>")).subject.endswith(".planner")
    assert (await js.get_last_msg(streams.OUTCOMES.name, "outcome.>")).subject.endswith(
        ".actuator")
    refused = violations(server)
    assert len(refused) == expected, refused
    assert all("Publish Violation" in line for line in refused)


async def test_the_reader_follows_the_bus_but_changes_nothing(
    secured_bus: tuple[NatsServer, Path], clients: dict[str, Client],
) -> None:
    server, _ = secured_bus
    watcher, reader = clients["watcher"], clients[READER]
    seen: list[str] = []

    async def note(msg: Msg) -> None:
        seen.append(msg.subject)

    sub = await reader.subscribe("kube.obs.>", cb=note)
    await reader.flush()  # the server knows the interest before anything is published
    await watcher.jetstream().publish("kube.obs.c1.apps.deployments.default.web", b"{}")
    await wait_until_async(lambda: seen, what="the reader to hear the observation")
    assert seen == ["kube.obs.c1.apps.deployments.default.web"]
    stored = await reader.jetstream().get_last_msg(streams.KUBE.name, "kube.obs.>")
    assert stored.data == b"{}"
    with pytest.raises((NatsError, asyncio.TimeoutError)):
        await reader.jetstream().delete_stream(streams.KUBE.name)
    await sub.unsubscribe()
    assert any("Publish Violation" in line and "STREAM.DELETE" in line
               for line in violations(server))


async def test_an_anonymous_client_cannot_connect(secured_bus: tuple[NatsServer, Path]) -> None:
    server, _ = secured_bus
    anonymous = Client()
    try:
        with pytest.raises(NatsError, match="Authorization Violation"):
            await anonymous.connect(server.url, allow_reconnect=False, max_reconnect_attempts=0,
                                    connect_timeout=2)
    finally:
        await anonymous.close()  # the client keeps its socket after a refused connect


async def test_the_audit_user_reads_the_history_and_publishes_nothing(
    secured_bus: tuple[NatsServer, Path], clients: dict[str, Client],
) -> None:
    server, _ = secured_bus
    watcher, audit = clients["watcher"], clients["audit"]
    await watcher.publish("history.pod.c1.default.web-1", b'{"type":"pod"}')
    await watcher.flush()
    js = audit.jetstream()

    async def stored() -> bool:
        return (await js.stream_info(streams.HISTORY.name)).state.messages == 1

    await wait_until_async(stored, what="the watcher's point in HISTORY", timeout=5)
    assert (await js.get_last_msg(streams.HISTORY.name, "history.>")).data == b'{"type":"pod"}'
    await audit.publish("history.pod.c1.default.web-2", b"{}")
    await audit.flush()
    await asyncio.sleep(0.2)
    assert any("Publish Violation" in line and "history.pod.c1.default.web-2" in line
               for line in violations(server))
