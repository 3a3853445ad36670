"""What a member records reaches the hub's streams, and the hub's plans reach only their member,
by stream sourcing across real leaf links between real nats-servers."""

from __future__ import annotations

from events import streams
from spreadbus.runtime.member_bus import hub_streams, member_streams
from spreadbus.runtime.stream_setup import ensure_streams
from tests.fixtures.member_bus import MEMBERS, MemberBus
from tests.memberbus.bus_reading import messages, subjects_held, wait_for


async def test_a_members_observations_and_outcomes_reach_the_hub_once(
    member_bus_stack: MemberBus,
) -> None:
    bus = member_bus_stack
    member = bus.clients["member1"].jetstream()
    hub = bus.hub_client.jetstream()
    sent = [f"kube.obs.member1.apps.deployments.default.d{i}" for i in range(5)]
    for subject in sent:
        await member.publish(subject, subject.encode())
    await member.publish("outcome.member1.create.apps.deployments.default.d0", b"done",
                         headers={"Nats-Msg-Id": "outcome:p0"})

    async def arrived() -> bool:
        return (set(sent) <= set(await subjects_held(hub, streams.KUBE.name))
                and len(await subjects_held(hub, streams.OUTCOMES.name)) == 1)

    await wait_for("member1's observations and outcome in the hub's streams", arrived)
    # Once each: the leaf link does not carry the subjects themselves, only the sourced copies.
    assert [s for s, _ in await messages(hub, streams.KUBE.name)] == sent
    assert await messages(hub, streams.OUTCOMES.name) == [
        ("outcome.member1.create.apps.deployments.default.d0", b"done")]


async def test_setting_the_streams_up_again_changes_nothing(member_bus_stack: MemberBus) -> None:
    bus = member_bus_stack
    assert await ensure_streams(bus.hub_client.jetstream(), hub_streams(MEMBERS)) == []
    for member, client in bus.clients.items():
        assert await ensure_streams(client.jetstream(), member_streams(member)) == []
    # A member added later is a change to the hub's streams, made in place.
    changed = await ensure_streams(bus.hub_client.jetstream(),
                                   hub_streams((*MEMBERS, "member3")))
    assert [line.split(":")[0] for line in changed] == [
        "stream KUBE updated", "stream OUTCOMES updated", "stream ADMISSIONS updated",
        "stream HISTORY updated"]
    info = await bus.hub_client.jetstream().stream_info(streams.KUBE.name)
    assert sorted((s.external.api if s.external else "") for s in info.config.sources or []) \
        == ["$JS.member1.API", "$JS.member2.API", "$JS.member3.API"]


async def test_a_plan_for_member1_reaches_member1_and_not_member2(
    member_bus_stack: MemberBus,
) -> None:
    bus = member_bus_stack
    hub = bus.hub_client.jetstream()
    for member in ("member1", "member2"):
        await hub.publish(f"plan.{member}.create.apps.deployments.default.web", member.encode(),
                          headers={"Nats-Msg-Id": f"plan-{member}"})
    plans = {m: bus.clients[m].jetstream() for m in ("member1", "member2")}

    async def both_arrived() -> bool:
        held = [await subjects_held(js, streams.PLANS.name) for js in plans.values()]
        return all(held)

    await wait_for("each member's plan in its own PLANS", both_arrived)
    for member, js in plans.items():
        assert await messages(js, streams.PLANS.name) == [
            (f"plan.{member}.create.apps.deployments.default.web", member.encode())]
