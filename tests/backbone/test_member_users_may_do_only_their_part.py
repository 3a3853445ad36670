"""A member cluster's agent users may publish only that member's subjects and read only its
plans, on a real nats-server whose users ``spreadbus bus-users --member`` wrote.

The hub (cluster ``host``) and two members share one server, as they would the hub before
leaf nodes carry their traffic: ``member1``'s watcher cannot forge ``member2``'s observations
or history, its actuator cannot forge ``member2``'s outcomes nor read ``member2``'s plans
(not through ``member2``'s consumer, not through its own consumer re-filtered, not by a direct
get, not by subscribing), and its webhook cannot write ``member2``'s admissions or reservation
keys, and its watcher cannot put a heartbeat for ``member2`` or the host; the server refuses
every one, while the same operations on ``member1``'s own subjects
succeed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client
from nats.errors import Error as NatsError
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import Error as JetStreamError

from events import streams
from spreadbus.cli import main
from spreadbus.clusterregistry.heartbeat import BUCKET as HEARTBEATS_BUCKET
from spreadbus.clusterregistry.heartbeat import STREAM as HEARTBEATS
from spreadbus.clusterregistry.heartbeat import Heartbeat, encode, heartbeat_subject
from spreadbus.features.workloadspread.core.reservation_contract import BUCKET as RESERVATIONS
from spreadbus.runtime.bus_permissions import SETUP, actuator_consumer, inbox_prefix
from spreadbus.runtime.bus_users import seed_file
from spreadbus.runtime.member_permissions import plan_filter
from spreadbus.runtime.nats_server import NatsServer
from tests.fixtures.bus_setup import set_up
from tests.fixtures.polling import wait_until_async

PLANS = streams.PLANS.name


@pytest.fixture
def member_bus(tmp_path: Path, capsys: pytest.CaptureFixture[str],
               ) -> Iterator[tuple[NatsServer, Path]]:
    credentials = tmp_path / "credentials"
    assert main(["bus-users", "--out", str(credentials), "--cluster", "host",
                 "--member", "member1", "--member", "member2"]) == 0
    assert "member1-actuator.nk" in capsys.readouterr().out
    server = NatsServer(store_dir=tmp_path / "store",
                        extra_args=["-c", str(credentials / "users.conf")]).start()
    try:
        set_up(server.url, nkeys_seed=str(seed_file(credentials, SETUP)),
               inbox_prefix=inbox_prefix(SETUP))
        yield server, credentials
    finally:
        server.stop()


@pytest.fixture
async def clients(member_bus: tuple[NatsServer, Path]) -> AsyncIterator[dict[str, Client]]:
    server, credentials = member_bus
    users = ["planner", "member1-watcher", "member1-actuator", "member1-webhook",
             "member2-actuator"]
    connected = {user: await nats.connect(server.url, allow_reconnect=False,
                                          nkeys_seed=str(seed_file(credentials, user)),
                                          inbox_prefix=inbox_prefix(user))
                 for user in users}
    try:
        yield connected
    finally:
        for nc in connected.values():
            await nc.close()


def violations(server: NatsServer) -> list[str]:
    return [line for line in server.log.decode().splitlines() if "Violation" in line]


async def stored(nc: Client, stream: str, subject: str) -> int:
    info = await nc.jetstream().stream_info(stream, subjects_filter=subject)
    return sum((info.state.subjects or {}).values())


async def test_a_member_publishes_only_its_own_observations_history_and_outcomes(
        member_bus: tuple[NatsServer, Path], clients: dict[str, Client]) -> None:
    server, _ = member_bus
    watcher, actuator = clients["member1-watcher"], clients["member1-actuator"]
    forged = [(watcher, "kube.obs.member2.apps.deployments.default.web"),
              (watcher, "kube.sync.member2.apps.deployments"),
              (watcher, "history.pod.member2.default.web-1"),
              (watcher, "kube.obs.host.apps.deployments.default.web"),
              (actuator, "outcome.member2.patch.apps.deployments.default.web"),
              (actuator, "outcome.host.patch.apps.deployments.default.web")]
    for nc, subject in forged:
        await nc.publish(subject, b"{}")
    own = [(watcher, "kube.obs.member1.apps.deployments.default.web"),
           (watcher, "history.pod.member1.default.web-1"),
           (actuator, "outcome.member1.patch.apps.deployments.default.web")]
    for nc, subject in own:
        await nc.publish(subject, b"{}")
    for nc in (watcher, actuator):
        await nc.flush()
    await wait_until_async(lambda: len(violations(server)) >= len(forged),
                           what=f"{len(forged)} refusals in the server's log")
    refused = violations(server)
    assert len(refused) == len(forged), refused
    for _, subject in forged:
        assert any("Publish Violation" in line and subject in line for line in refused), subject
    planner = clients["planner"]

    async def own_stored() -> bool:
        return (await stored(planner, streams.KUBE.name, "kube.obs.member1.>") == 1
                and await stored(planner, streams.OUTCOMES.name, "outcome.member1.>") == 1)

    await wait_until_async(own_stored, what="member1's own observation and outcome stored")
    assert await stored(planner, streams.KUBE.name, "kube.obs.member2.>") == 0
    assert await stored(planner, streams.OUTCOMES.name, "outcome.>") == 1


async def test_a_member_reads_its_own_plans_and_no_one_elses(
        member_bus: tuple[NatsServer, Path], clients: dict[str, Client]) -> None:
    server, _ = member_bus
    planner, actuator = clients["planner"], clients["member1-actuator"]
    pjs = planner.jetstream()
    await pjs.publish("plan.member1.patch.apps.deployments.default.web", b"mine")
    await pjs.publish("plan.member2.patch.apps.deployments.default.web", b"secret")
    js = actuator.jetstream(timeout=1.0)
    config = ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, deliver_policy=DeliverPolicy.ALL)

    # Its own consumer, on its own plans: allowed, and it gets exactly its plan.
    sub = await js.pull_subscribe(plan_filter("member1"), durable=actuator_consumer("member1"),
                                  stream=PLANS, config=config)
    (msg,) = await sub.fetch(1, timeout=5)
    assert msg.data == b"mine"
    await msg.ack()

    # member2's consumer: refused by name.
    with pytest.raises((NatsError, JetStreamError, asyncio.TimeoutError)):
        await js.pull_subscribe(plan_filter("member2"), durable=actuator_consumer("member2"),
                                stream=PLANS, config=config)
    # Its own consumer re-filtered to member2's plans, by the subject naming that filter.
    with pytest.raises((NatsError, JetStreamError, asyncio.TimeoutError)):
        await js.add_consumer(PLANS, config=ConsumerConfig(
            name=actuator_consumer("member1"), durable_name=actuator_consumer("member1"),
            filter_subject=plan_filter("member2"), ack_policy=AckPolicy.EXPLICIT))
    # ... or by the allowed subject with another filter in the body: the server refuses it.
    name = actuator_consumer("member1")
    codes = []
    for body in ({"filter_subject": plan_filter("member2")},
                 {"filter_subjects": [plan_filter("member2")]}):
        request = {"stream_name": PLANS, "config": {"name": name, "durable_name": name,
                                                    "ack_policy": "explicit", **body}}
        reply = await actuator.request(
            f"$JS.API.CONSUMER.CREATE.{PLANS}.{name}.{plan_filter('member1')}",
            json.dumps(request).encode(), timeout=5)
        codes.append(json.loads(reply.data)["error"]["err_code"])
    # "did not match filtered subject from create subject"; "multiple subject filters cannot
    # use subject based API"
    assert codes == [10131, 10137]
    # A consumer of its own, a direct get, a plain subscription: refused.
    with pytest.raises((NatsError, JetStreamError, asyncio.TimeoutError)):
        await js.add_consumer(PLANS, config=ConsumerConfig(
            name="f0" * 16, filter_subject=plan_filter("member2")))
    with pytest.raises((NatsError, JetStreamError, asyncio.TimeoutError)):
        await js.get_last_msg(PLANS, plan_filter("member2"), direct=True)
    await actuator.subscribe("plan.member2.>")
    await actuator.flush()
    await wait_until_async(
        lambda: any("Subscription Violation" in line and "plan.member2.>" in line
                    for line in violations(server)),
        what="the plain subscription to member2's plans refused")
    refused = [line for line in violations(server) if "Publish Violation" in line]
    for subject in (f"$JS.API.CONSUMER.INFO.{PLANS}.actuator-member2",
                    f"$JS.API.CONSUMER.CREATE.{PLANS}.actuator-member1.plan.member2.>",
                    f"$JS.API.DIRECT.GET.{PLANS}.plan.member2.>"):
        assert any(f'"{subject}"' in line for line in refused), (subject, refused)
    # The consumer still filters member1's plans only.
    info = await js.consumer_info(PLANS, name)
    assert info.config.filter_subject == plan_filter("member1")
    # member2's own actuator does read its plan.
    js2 = clients["member2-actuator"].jetstream(timeout=5.0)
    sub2 = await js2.pull_subscribe(plan_filter("member2"),
                                    durable=actuator_consumer("member2"), stream=PLANS,
                                    config=config)
    (msg2,) = await sub2.fetch(1, timeout=5)
    assert msg2.data == b"secret"


async def test_a_members_webhook_writes_only_its_own_admissions_and_keys(
        member_bus: tuple[NatsServer, Path], clients: dict[str, Client]) -> None:
    server, _ = member_bus
    webhook = clients["member1-webhook"]
    await webhook.publish("admission.member2.default.web", b"{}")
    await webhook.publish("admission.member1.default.web", b"{}")
    await webhook.flush()
    kv = await webhook.jetstream(timeout=1.0).key_value(RESERVATIONS)
    await kv.put("member1.default.ws", b"{}")
    with pytest.raises((NatsError, JetStreamError, asyncio.TimeoutError)):
        await kv.put("member2.default.ws", b"{}")
    refused = violations(server)
    assert any("admission.member2.default.web" in line for line in refused), refused
    assert any(f"$KV.{RESERVATIONS}.member2.default.ws" in line for line in refused), refused
    assert not any("member1" in line for line in refused), refused


async def test_a_members_watcher_beats_only_for_its_own_cluster(
        member_bus: tuple[NatsServer, Path], clients: dict[str, Client]) -> None:
    server, _ = member_bus
    js = clients["member1-watcher"].jetstream(timeout=1.0)
    beat = encode(Heartbeat(health="Healthy", at=1.0))
    await js.publish(heartbeat_subject("member1"), beat)
    for forged in ("member2", "host"):
        with pytest.raises((NatsError, JetStreamError, asyncio.TimeoutError)):
            await js.publish(heartbeat_subject(forged), beat)
    refused = violations(server)
    for forged in ("member2", "host"):
        assert any(heartbeat_subject(forged) in line for line in refused), refused
    assert not any("member1" in line for line in refused), refused
    planner = clients["planner"]
    assert await stored(planner, HEARTBEATS, heartbeat_subject("member1")) == 1
    assert await stored(planner, HEARTBEATS, f"$KV.{HEARTBEATS_BUCKET}.>") == 1
