"""The planner against a real nats-server: replay, decide only when caught up, snapshot + tail."""

from __future__ import annotations

import asyncio
from typing import Any

import nats
from nats.aio.client import Client

from events import codec
from events.messages import Plan
from services.planner.planner import Planner
from spreadbus.engine.bus_access import BucketSpec
from spreadbus.projection import snapshot
from spreadbus.runtime.bus_setup import ensure_bucket
from spreadbus.runtime.lease import Lease
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.snapshot_store import SnapshotStore
from spreadbus.runtime.stream_setup import ensure_streams
from tests.backbone.log_builders import deployment, observe, synced
from tests.fixtures.observed_generation import ANNOTATION, ObservedGeneration, written_value
from tests.fixtures.polling import wait_until_async
from tests.fixtures.running import running


async def publish(nc: Client, entries: list[tuple[str, bytes]]) -> None:
    js = nc.jetstream()
    for subject, data in entries:
        await js.publish_async(subject, data)
    await js.publish_async_completed()


async def plans_on_bus(nc: Client) -> list[Plan]:
    js = nc.jetstream()
    info = await js.stream_info("PLANS")
    out: list[Plan] = []
    for seq in range(1, info.state.last_seq + 1):
        raw = await js.get_msg("PLANS", seq)
        decoded = codec.decode(raw.data or b"")
        assert isinstance(decoded, Plan)
        out.append(decoded)
    return out


def make_planner(nc: Client, **kwargs: object) -> Planner:
    return Planner(
        nc,
        cluster="c1",
        rules=[ObservedGeneration("c1")],
        snapshots=SnapshotStore(nc),
        **kwargs,
    )  # type: ignore[arg-type]


async def test_nothing_is_decided_before_the_sync_marker_then_one_plan_per_deployment(
    nats_client: Client,
) -> None:
    await ensure_streams(nats_client.jetstream())
    await publish(nats_client, [observe(deployment(f"d{i}", 2, 10 + i), "ADDED") for i in range(5)])
    planner = make_planner(nats_client)
    await planner.restore()
    planner.set_leader(True)
    async with running(planner.run):
        await wait_until_async(
            lambda: all(f.caught_up for f in planner.followers()),
            what="all(f.caught_up for f in planner.followers())",
        )
        assert not planner.caught_up  # no sync marker yet
        assert await planner.step() == 0
        await publish(nats_client, [synced()])
        await wait_until_async(
            lambda: planner.decisions.in_flight() != [] and len(planner.decisions.in_flight()) == 5,
            what="planner.decisions.in_flight() != [] and len(planner.decisions.in_flight()) == 5",
        )
    plans = await plans_on_bus(nats_client)
    assert sorted(p.target.name for p in plans) == [f"d{i}" for i in range(5)]
    assert all(written_value(p.patch) == "2" for p in plans)


async def test_a_standby_replays_but_never_decides(nats_client: Client) -> None:
    await ensure_streams(nats_client.jetstream())
    await publish(nats_client, [observe(deployment("d", 1, 1), "ADDED"), synced()])
    planner = make_planner(nats_client)
    await planner.restore()
    async with running(planner.run):
        await wait_until_async(lambda: planner.caught_up, what="planner.caught_up")
        assert await planner.step() == 0
    assert await plans_on_bus(nats_client) == []


async def test_snapshot_plus_tail_equals_a_full_replay_and_replans_nothing(
    nats_client: Client,
) -> None:
    await ensure_streams(nats_client.jetstream())
    await publish(
        nats_client, [observe(deployment(f"d{i}", 1, i), "ADDED") for i in range(50)] + [synced()]
    )
    first = make_planner(nats_client)
    await first.restore()
    first.set_leader(True)
    async with running(first.run):
        await wait_until_async(
            lambda: len(first.decisions.in_flight()) == 50,
            what="len(first.decisions.in_flight()) == 50",
        )
        await first.save_snapshot()
    # More happens after the snapshot: annotations land, new generations arrive.
    await publish(
        nats_client,
        [observe(deployment(f"d{i}", 1, 100 + i, {ANNOTATION: "1"})) for i in range(10)]
        + [observe(deployment(f"d{i}", 2, 200 + i)) for i in range(10, 15)],
    )

    resumed = make_planner(nats_client)
    assert await resumed.restore() == "snapshot"
    replayed = Planner(nats_client, cluster="c1", rules=[ObservedGeneration("c1")])
    assert await replayed.restore() == "replay"
    for planner in (resumed, replayed):
        async with running(planner.run):
            await wait_until_async(lambda p=planner: p.caught_up, what="p.caught_up")  # type: ignore[misc]
    assert snapshot.dump(
        resumed.projection.state, resumed.decisions.state, taken_at=0.0
    ) == snapshot.dump(replayed.projection.state, replayed.decisions.state, taken_at=0.0)
    resumed.set_leader(True)
    async with running(resumed.run):
        await wait_until_async(
            lambda: len(resumed.decisions.in_flight()) == 55,
            what="len(resumed.decisions.in_flight()) == 55",
        )
    plans = await plans_on_bus(nats_client)
    assert len(plans) == 55  # 50 first plans + 5 for the new generations, none repeated
    assert len({p.id for p in plans}) == 55


async def test_a_corrupt_snapshot_falls_back_to_a_full_replay(nats_client: Client) -> None:
    await ensure_streams(nats_client.jetstream())
    await publish(nats_client, [observe(deployment("d", 1, 1), "ADDED"), synced()])
    store = SnapshotStore(nats_client)
    await store.save("planner.c1", b"\x93not a snapshot")
    planner = make_planner(nats_client)
    assert await planner.restore() == "replay"
    async with running(planner.run):
        await wait_until_async(lambda: planner.caught_up, what="planner.caught_up")
    assert planner.projection.get("c1", "apps", "deployments", "default", "d") is not None


async def test_a_warm_standby_takes_over_deciding_when_the_leader_dies(
    nats_server: NatsServer,
) -> None:
    leader_nc = await nats.connect(nats_server.url)
    standby_nc = await nats.connect(nats_server.url)
    await ensure_streams(standby_nc.jetstream())
    # A short lease, as the setup step creates the bucket with ``--lease-ttl-seconds 2``.
    await ensure_bucket(standby_nc.jetstream(),
                        BucketSpec(name="short-leases", history=1, ttl_seconds=2.0))
    await publish(standby_nc, [observe(deployment("a", 1, 1), "ADDED"), synced()])
    planners, leases, tasks = [], [], []
    stopping = asyncio.Event()
    for name, nc in (("leader", leader_nc), ("standby", standby_nc)):
        planner = make_planner(nc)
        await planner.restore()
        lease = Lease(
            nc.jetstream(),
            key="planner.c1",
            holder=name,
            bucket="short-leases",
            ttl_seconds=2.0,
            on_change=planner.set_leader,
        )
        planners.append(planner)
        leases.append(lease)
        tasks.append(asyncio.create_task(planner.run(stopping)))
        tasks.append(asyncio.create_task(lease.run()))
        if name == "leader":
            await wait_until_async(lambda p=planner: p.leader, what="p.leader")  # type: ignore[misc]
    standby = planners[1]
    try:
        await wait_until_async(
            lambda: len(standby.decisions.in_flight()) == 1,
            what="len(standby.decisions.in_flight()) == 1",
        )  # replayed, warm
        assert not standby.leader
        await leader_nc.close()  # the leader dies
        await publish(standby_nc, [observe(deployment("b", 1, 2), "ADDED")])
        await wait_until_async(lambda: standby.leader, what="standby.leader", timeout=15)
        await wait_until_async(
            lambda: len(standby.decisions.in_flight()) == 2,
            what="len(standby.decisions.in_flight()) == 2",
        )
    finally:
        stopping.set()
        for lease in leases:
            lease.stop()
        await asyncio.gather(*tasks, return_exceptions=True)
        await standby_nc.close()
    plans = await _plans_via(nats_server.url)
    assert sorted(p.target.name for p in plans) == ["a", "b"]


async def _plans_via(url: str) -> list[Plan]:
    nc = await nats.connect(url)
    try:
        return await plans_on_bus(nc)
    finally:
        await nc.close()


class _BrokenRule:
    name = "broken"
    resources = ObservedGeneration("c1").resources

    def desired(self, view: object, changed: object, now: float) -> list[object]:
        raise RuntimeError("bug in a rule")


async def test_a_failing_rule_does_not_stop_the_other_rules(nats_client: Client) -> None:
    await ensure_streams(nats_client.jetstream())
    await publish(nats_client, [observe(deployment("a", 1, 1), "ADDED"), synced()])
    planner = Planner(nats_client, cluster="c1", rules=[_BrokenRule(), ObservedGeneration("c1")])  # type: ignore[list-item]
    await planner.restore()
    planner.set_leader(True)
    async with running(planner.run):
        await wait_until_async(
            lambda: len(planner.decisions.in_flight()) == 1,
            what="len(planner.decisions.in_flight()) == 1",
        )
    assert [p.target.name for p in await plans_on_bus(nats_client)] == ["a"]


class _FlakyRule:
    """ObservedGeneration that raises on its first ``failures`` calls, recording what it saw."""

    name = "flaky"
    resources = ObservedGeneration("c1").resources

    def __init__(self, failures: int) -> None:
        self.inner = ObservedGeneration("c1")
        self.failures = failures
        self.offers: list[set[tuple[str, str]]] = []

    def desired(self, view: Any, changed: Any, now: float) -> list[Any]:
        self.offers.append(set(changed))
        if self.failures > 0:
            self.failures -= 1
            raise RuntimeError("transient failure")
        return self.inner.desired(view, changed, now)


async def test_a_failing_rule_is_offered_its_changes_again_after_a_backoff(
    nats_client: Client,
) -> None:
    await ensure_streams(nats_client.jetstream())
    await publish(nats_client, [observe(deployment("a", 1, 1), "ADDED"), synced()])
    clock = [1000.0]
    rule = _FlakyRule(failures=2)
    planner = Planner(nats_client, cluster="c1", rules=[rule], clock=lambda: clock[0])
    await planner.restore()
    planner.set_leader(True)
    async with running(planner.run):
        await wait_until_async(lambda: len(rule.offers) == 1, what="len(rule.offers) == 1")
        # Nothing new happens on the bus: only the retry can bring the change back.
        clock[0] += 0.1
        await asyncio.sleep(0.3)
        assert len(rule.offers) == 1  # backing off
        clock[0] += 1.0
        planner._wake.set()
        await wait_until_async(lambda: len(rule.offers) == 2, what="len(rule.offers) == 2")
        clock[0] += 0.5  # the second backoff is longer than the first
        planner._wake.set()
        await asyncio.sleep(0.3)
        assert len(rule.offers) == 2
        clock[0] += 2.0
        planner._wake.set()
        await wait_until_async(
            lambda: len(planner.decisions.in_flight()) == 1,
            what="len(planner.decisions.in_flight()) == 1",
        )
    assert all(offer == rule.offers[0] for offer in rule.offers)
    assert [p.target.name for p in await plans_on_bus(nats_client)] == ["a"]
