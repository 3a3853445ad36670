"""Each bus user may publish and read exactly its part, on a real nats-server.

The server runs with the users and permissions the local stack and deploy/ use (built-in features),
and every user connects with its own nkey seed: a forged plan from the watcher, the webhook or
the read-only user is refused and never stored, the planner's is; an anonymous client cannot
connect at all; the reader reads every stream but configures none. No user but ``setup`` may
update, seal, purge or delete a stream, and no user but the actuator may pull from, acknowledge
on, change or delete the actuator's plan consumer; the reader reads through consumers of its own.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StreamInfo
from nats.js.errors import Error as JetStreamError
from nats.js.errors import NotFoundError

from events import streams
from spreadbus.features.workloadspread.core.reservation_contract import BUCKET as RESERVATIONS
from spreadbus.runtime.bus_permissions import READER, SERVICES, SETUP, actuator_consumer
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.server_barrier import processed
from spreadbus.runtime.stream_setup import stream_config
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
    await processed(reader, timeout=10)  # the server has the interest before any publish
    # A plain publish, which the stream stores as well.
    await watcher.publish("kube.obs.c1.apps.deployments.default.web", b"{}")
    await wait_until_async(lambda: seen, what="the reader to hear the observation")
    assert seen == ["kube.obs.c1.apps.deployments.default.web"]

    async def stored() -> bytes | None:
        try:
            found = await reader.jetstream().get_last_msg(streams.KUBE.name, "kube.obs.>")
        except NotFoundError:
            return None
        return found.data

    assert await wait_until_async(stored, what="KUBE to store the observation") == b"{}"
    with pytest.raises((NatsError, asyncio.TimeoutError)):
        await reader.jetstream().delete_stream(streams.KUBE.name)
    await sub.unsubscribe()
    assert any("Publish Violation" in line and "STREAM.DELETE" in line
               for line in violations(server))


async def test_the_reader_subscribes_with_the_usual_wildcards_but_not_to_everything(
    secured_bus: tuple[NatsServer, Path], clients: dict[str, Client],
) -> None:
    """``kube.>`` and ``webhook.>`` take in what the watcher and the webhook publish; ``>``,
    the JetStream API (every consumer's name) and another user's inbox stay refused."""
    server, _ = secured_bus
    reader = clients[READER]
    seen: list[str] = []

    async def note(msg: Msg) -> None:
        seen.append(msg.subject)

    for subject in ("kube.>", "webhook.>", "history.>"):
        await reader.subscribe(subject, cb=note)
    await processed(reader, timeout=10)
    # Plain publishes: what is tested is the reader's subscription.
    await clients["watcher"].publish("kube.sync.c1.pods", b"{}")
    await clients["watcher"].publish("history.c1.pod.default.web-1", b"{}")
    await clients["webhook"].publish("webhook.spreads.c1.default.ws", b"{}")
    await wait_until_async(lambda: len(seen) == 3, what="the reader to hear all three")
    assert sorted(seen) == ["history.c1.pod.default.web-1", "kube.sync.c1.pods",
                            "webhook.spreads.c1.default.ws"]
    assert violations(server) == []
    refused = (">", "$JS.API.>", "$JS.EVENT.>", "_INBOX_planner.>", "*.>")
    for subject in refused:
        await reader.subscribe(subject)
    await reader.flush()
    await wait_until_async(lambda: len(violations(server)) >= len(refused),
                           what="each wider subscription refused")
    assert [line.rsplit('Subject "', 1)[1].split('"')[0] for line in violations(server)] == list(
        refused)
    assert all("Subscription Violation" in line for line in violations(server))


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


def plan_consumer_config() -> ConsumerConfig:
    """The actuator's consumer as :class:`services.actuator.consumer.PlanConsumer` creates it."""
    return ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, deliver_policy=DeliverPolicy.ALL,
                          ack_wait=30.0, max_ack_pending=64)


async def send_all(nc: Client, attempts: dict[str, bytes], answers: list[str]) -> None:
    """Publish each attempt as a request would, noting any answer the server sends back."""
    inbox = nc.new_inbox()

    async def answered(msg: Msg) -> None:
        answers.append(msg.data.decode())

    await nc.subscribe(inbox, cb=answered)
    for subject, body in attempts.items():
        await nc.publish(subject, body, reply=inbox)
    await nc.flush()


async def test_no_other_user_may_pull_from_ack_on_change_or_delete_the_actuators_consumer(
    secured_bus: tuple[NatsServer, Path], clients: dict[str, Client],
) -> None:
    server, _ = secured_bus
    durable = actuator_consumer("c1")
    actuator = clients["actuator"].jetstream()
    planner = clients["planner"].jetstream()
    sub = await actuator.pull_subscribe("plan.c1.>", durable=durable, stream=streams.PLANS.name,
                                        config=plan_consumer_config())
    await planner.publish("plan.c1.patch.apps.deployments.default.a", b'{"n":1}')
    [held] = await sub.fetch(1, timeout=5)  # delivered to the actuator, not yet acknowledged
    await planner.publish("plan.c1.patch.apps.deployments.default.b", b'{"n":2}')
    before = await actuator.consumer_info(streams.PLANS.name, durable)
    assert (before.num_ack_pending, before.num_pending) == (1, 1)
    deaf = json.dumps({"stream_name": streams.PLANS.name, "config": {
        "name": durable, "durable_name": durable, "filter_subject": "plan.nowhere.>",
        "ack_policy": "explicit", "deliver_policy": "all"}}).encode()
    attempts = {
        f"$JS.API.CONSUMER.DELETE.PLANS.{durable}": b"",
        f"$JS.API.CONSUMER.CREATE.PLANS.{durable}.plan.nowhere.>": deaf,
        f"$JS.API.CONSUMER.CREATE.PLANS.{durable}": deaf,
        f"$JS.API.CONSUMER.DURABLE.CREATE.PLANS.{durable}": deaf,
        "$JS.API.CONSUMER.CREATE.PLANS": deaf,  # unnamed: would update the consumer its body names
        f"$JS.API.CONSUMER.MSG.NEXT.PLANS.{durable}": b'{"batch": 1, "expires": 1000000000}',
        held.reply: b"+ACK",  # $JS.ACK.PLANS.<durable>.…: acknowledging the held plan
    }
    attackers = [user for user in clients if user != "actuator"]
    answers: list[str] = []
    for user in attackers:
        await send_all(clients[user], attempts, answers)
    expected = len(attackers) * len(attempts)
    await wait_until_async(lambda: len(violations(server)) >= expected,
                           what=f"{expected} refusals in the server's log")
    assert all("Publish Violation" in line for line in violations(server))
    after = await actuator.consumer_info(streams.PLANS.name, durable)
    assert after.config.filter_subject == before.config.filter_subject == "plan.c1.>"
    assert (after.num_ack_pending, after.num_pending) == (1, 1)  # nothing acked, nothing taken
    assert after.delivered.consumer_seq == 1
    assert answers == []  # the server never acted on any of them
    # The actuator still gets every plan, and its acknowledgements count.
    [second] = await sub.fetch(1, timeout=5)
    assert second.data == b'{"n":2}'
    await held.ack_sync()
    await second.ack_sync()
    done = await actuator.consumer_info(streams.PLANS.name, durable)
    assert (done.num_ack_pending, done.num_pending) == (0, 0)
    assert len(violations(server)) == expected


async def test_the_reader_reads_plans_through_a_consumer_of_its_own(
    secured_bus: tuple[NatsServer, Path], clients: dict[str, Client],
) -> None:
    server, _ = secured_bus
    await clients["planner"].jetstream().publish("plan.c1.patch.apps.deployments.default.a",
                                                 b"{}")
    reader = clients[READER].jetstream()
    own = await reader.pull_subscribe("plan.>", stream=streams.PLANS.name)  # named by the client
    [plan] = await own.fetch(1, timeout=5)
    assert plan.subject == "plan.c1.patch.apps.deployments.default.a"
    await plan.ack_sync()
    assert violations(server) == []
    with pytest.raises((NatsError, asyncio.TimeoutError)):
        await reader.add_consumer(streams.PLANS.name, ConsumerConfig(), timeout=1)  # unnamed
    assert any("$JS.API.CONSUMER.CREATE.PLANS\"" in line for line in violations(server))


def history_body(**changes: object) -> bytes:
    config = stream_config(streams.HISTORY).as_dict()
    config.update(changes)
    return json.dumps(config).encode()


async def test_no_user_but_setup_may_update_seal_purge_or_delete_a_stream(
    secured_bus: tuple[NatsServer, Path], clients: dict[str, Client],
) -> None:
    server, credentials = secured_bus
    for n in range(3):
        await clients["watcher"].jetstream().publish(f"history.pod.c1.default.p{n}", b"{}")
        await clients["planner"].jetstream().publish(f"plan.c1.patch._.pods.default.p{n}", b"{}")
    js = clients[READER].jetstream()

    async def history_settled() -> StreamInfo | None:
        """HISTORY once it holds its own three points and its copies of the three plans, which
        the server sources in after the publishes were acknowledged."""
        info = await js.stream_info(streams.HISTORY.name)
        return info if info.state.messages == 6 else None

    history = await wait_until_async(history_settled, what="HISTORY to source the plans")
    plans = await js.stream_info(streams.PLANS.name)
    sealed = json.dumps({**stream_config(streams.PLANS).as_dict(), "sealed": True}).encode()
    attempts = {
        "$JS.API.STREAM.UPDATE.HISTORY": history_body(max_msgs=1),
        "$JS.API.STREAM.UPDATE.PLANS": sealed,
        "$JS.API.STREAM.PURGE.PLANS": b"",
        "$JS.API.STREAM.PURGE.HISTORY": b"",
        "$JS.API.STREAM.MSG.DELETE.PLANS": b'{"seq": 1}',
        "$JS.API.STREAM.DELETE.OUTCOMES": b"",
    }
    sourceless = history_body(sources=None)
    answers: list[str] = []
    for nc in clients.values():
        await send_all(nc, attempts, answers)
    await send_all(clients["webhook"], {"$JS.API.STREAM.UPDATE.HISTORY": sourceless}, answers)
    expected = len(clients) * len(attempts) + 1
    await wait_until_async(lambda: len(violations(server)) >= expected,
                           what=f"{expected} refusals in the server's log")
    assert all("Publish Violation" in line for line in violations(server))
    assert answers == []
    history_after = await js.stream_info(streams.HISTORY.name)
    plans_after = await js.stream_info(streams.PLANS.name)
    assert history_after.config.max_msgs == history.config.max_msgs == -1
    assert [s.name for s in history_after.config.sources or []] == \
        [s.name for s in history.config.sources or []] == ["ADMISSIONS", "PLANS", "OUTCOMES"]
    assert history_after.state.messages == history.state.messages == 6
    assert not plans_after.config.sealed
    assert plans_after.state.messages == plans.state.messages == 3
    assert (await js.stream_info(streams.OUTCOMES.name)).config.name == "OUTCOMES"
    # The setup user may: a purge (an operator's reset) empties PLANS.
    setup = await connect_as(server, credentials, SETUP)
    try:
        await setup.jetstream().purge_stream(streams.PLANS.name)
    finally:
        await setup.close()
    assert (await js.stream_info(streams.PLANS.name)).state.messages == 0
    assert len(violations(server)) == expected


async def test_a_bucket_writer_sets_and_deletes_its_keys_but_cannot_empty_the_bucket(
    clients: dict[str, Client],
) -> None:
    kv = await clients["webhook"].jetstream().key_value(RESERVATIONS)
    await kv.put("c1.default.a", b"1")
    await kv.put("c1.default.b", b"2")
    await kv.delete("c1.default.b")
    with pytest.raises(JetStreamError, match="rollup not permitted"):
        await clients["webhook"].jetstream().publish(
            f"$KV.{RESERVATIONS}.c1.default.c", b"", headers={"Nats-Rollup": "all"})
    assert (await kv.get("c1.default.a")).value == b"1"
