"""The link between member1's leaf server and the hub is cut (a TCP proxy that closes every
connection and refuses new ones) while member1 keeps recording observations and outcomes and
applies the plans it already holds. When the link returns the hub has every message of the cut,
in order per subject, none twice, and the plans published during the cut reach member1 then;
member1's actuator consumer applies each plan once. ``make test`` cuts for 5 s, ``make chaos``
for 60 s."""

from __future__ import annotations

import time
from collections import defaultdict

import pytest
from nats.js.api import AckPolicy, ConsumerConfig
from nats.js.client import JetStreamContext

from events import streams
from spreadbus.runtime.bus_permissions import actuator_consumer
from spreadbus.runtime.member_permissions import plan_filter
from tests.fixtures.member_bus import MemberBus, leaf_connections
from tests.memberbus.bus_reading import messages, subjects_held, wait_for

PLAN = "plan.member1.create.apps.deployments.default.d{}"
SAME_OBJECT = "outcome.member1.update.apps.deployments.default.web"
"""Outcomes of several plans on one object: their order on the subject must hold."""


async def publish_plans(hub: JetStreamContext, numbers: range) -> list[str]:
    ids = []
    for i in numbers:
        await hub.publish(PLAN.format(i), f"plan-{i}".encode(), headers={"Nats-Msg-Id": f"p{i}"})
        ids.append(f"p{i}")
    return ids


async def held(js: JetStreamContext, stream: str) -> int:
    return int((await js.stream_info(stream)).state.messages)


@pytest.mark.parametrize("cut_seconds", [
    pytest.param(5.0, id="5s"),
    pytest.param(60.0, id="60s", marks=[pytest.mark.slow, pytest.mark.chaos,
                                        pytest.mark.chaos_only, pytest.mark.timeout(300)]),
])
async def test_a_member_cut_off_from_the_hub_loses_nothing_and_applies_each_plan_once(
    member_bus_stack: MemberBus, cut_seconds: float,
) -> None:
    bus = member_bus_stack
    hub = bus.hub_client.jetstream()
    member = bus.clients["member1"].jetstream()
    plans_before = await publish_plans(hub, range(5))

    async def member_holds(count: int) -> bool:
        return await held(member, streams.PLANS.name) == count

    await wait_for("the first plans in member1's PLANS", lambda: member_holds(5))
    actuator = await member.pull_subscribe(
        plan_filter("member1"), durable=actuator_consumer("member1"), stream=streams.PLANS.name,
        config=ConsumerConfig(ack_policy=AckPolicy.EXPLICIT))
    applied: list[str] = []
    recorded: dict[str, list[bytes]] = defaultdict(list)

    async def record(subject: str, payload: bytes, msg_id: str) -> None:
        await member.publish(subject, payload, headers={"Nats-Msg-Id": msg_id})
        recorded[subject].append(payload)

    async def apply(count: int) -> None:
        for msg in await actuator.fetch(count, timeout=10):
            plan_id = (msg.headers or {})["Nats-Msg-Id"]
            applied.append(plan_id)
            await record(msg.subject.replace("plan.", "outcome.", 1), plan_id.encode(),
                         f"outcome:{plan_id}")
            await msg.ack_sync()

    await apply(2)

    async def hub_holds_outcomes(count: int) -> bool:
        return await held(hub, streams.OUTCOMES.name) == count

    await wait_for("the outcomes before the cut at the hub", lambda: hub_holds_outcomes(2))

    bus.proxy.cut()
    await wait_for("member1's leaf link down on both sides", lambda: _link_down(bus))
    plans_during = await publish_plans(hub, range(5, 8))
    await apply(3)  # the plans member1 already had
    batches = 0
    end = time.monotonic() + cut_seconds
    while time.monotonic() < end:
        await bus.proxy.refused_attempt()  # member1's leaf server retries, and is refused
        batches += 1
        for k in range(3):
            subject = f"kube.obs.member1.apps.deployments.default.cut-{batches}-{k}"
            await record(subject, subject.encode(), f"obs-{batches}-{k}")
        for k in range(2):
            await record(SAME_OBJECT, f"{batches}-{k}".encode(), f"outcome:same-{batches}-{k}")
    assert await held(member, streams.PLANS.name) == 5, "a plan crossed the cut link"
    assert await hub_holds_outcomes(2), "an outcome crossed the cut link"

    bus.proxy.restore()
    outcomes = sum(len(v) for s, v in recorded.items() if s.startswith("outcome."))

    async def everything_arrived() -> bool:
        return (await held(hub, streams.OUTCOMES.name) >= outcomes
                and await held(hub, streams.KUBE.name) >= 3 * batches
                and await member_holds(8))

    await wait_for("the cut's messages at the hub and the cut's plans at member1",
                   everything_arrived, timeout=90)
    await apply(3)
    await wait_for("the outcomes of the plans applied after the cut at the hub",
                   lambda: hub_holds_outcomes(outcomes + 3), timeout=90)

    assert applied == plans_before + plans_during
    info = await actuator.consumer_info()
    assert (info.num_pending, info.num_ack_pending, info.num_redelivered) == (0, 0, 0)
    at_hub: dict[str, list[bytes]] = defaultdict(list)
    for subject, payload in await messages(hub, streams.OUTCOMES.name):
        at_hub[subject].append(payload)
    assert at_hub == {s: v for s, v in recorded.items() if s.startswith("outcome.")}
    kube = await subjects_held(hub, streams.KUBE.name)
    observed = {s for s in recorded if s.startswith("kube.")}
    assert {s: kube.get(s) for s in observed} == dict.fromkeys(observed, 1)
    assert len(kube) == len(observed)
    assert batches >= 2, "the cut ended before member1's leaf server retried twice"


async def _link_down(bus: MemberBus) -> bool:
    return (leaf_connections(bus.members["member1"]) == 0
            and leaf_connections(bus.hub.server) == 1)  # member2's link stays
