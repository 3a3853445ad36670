"""Three planner shards decide exactly the plans one planner decides, each over its namespaces.

Two real nats-servers get the same workload mix (:mod:`tests.backbone.shard_mix`): twelve
namespaces, the nodes and a WorkloadRebalancer naming Deployments in three of them. On the first
one planner reads ``KUBE``; on the second three shards read ``KUBE_SHARDS_3``, which the server
fills through its partition function. The plans on the two ``PLANS`` streams are the same set,
and each shard held its own namespaces' objects and every cluster-scoped one, nothing else.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import nats
from nats.aio.client import Client
from nats.js.client import JetStreamContext

from events import codec
from events.messages import Plan
from events.shards import Shards, partition, stream_name
from events.subjects import escape, unescape
from services.planner.planner import Planner
from spreadbus.cli.bus_setup import BusSetupSettings, layout_of
from spreadbus.runtime.bus_setup import set_up_bus
from spreadbus.runtime.nats_server import NatsServer
from tests.backbone.shard_mix import NOW, mix, rules
from tests.fixtures.polling import wait_until_async

NAMESPACES = [f"team-{k}" for k in range(12)]
REBALANCED = NAMESPACES[:3]


async def publish(nc: Client, entries: list[tuple[str, bytes]]) -> None:
    js = nc.jetstream()
    for subject, data in entries:
        await js.publish(subject, data)


async def plans_on_bus(nc: Client) -> list[Plan]:
    js = nc.jetstream()
    info = await js.stream_info("PLANS")
    out = []
    for seq in range(1, info.state.last_seq + 1):
        decoded = codec.decode((await js.get_msg("PLANS", seq)).data or b"")
        assert isinstance(decoded, Plan)
        out.append(decoded)
    return out


async def settle(planner: Planner) -> None:
    """Decide rounds until one decides nothing with every plan folded back."""
    await wait_until_async(lambda: planner.caught_up and all(
        planner.rule_ready(rule) for rule in planner.rules), what="the planner caught up")
    plans = planner.followers()[1]
    while True:
        published = await planner.step()
        await wait_until_async(lambda: plans.caught_up, what="its plans folded back")
        if published == 0 and not planner.projection.changed:
            return


async def decide(url: str, shards: int) -> tuple[list[Plan], list[Planner]]:
    nc = await nats.connect(url)
    try:
        await set_up_bus(nc.jetstream(), layout_of(BusSetupSettings(shards=shards)))
        await publish(nc, mix(NAMESPACES, REBALANCED))
        if shards > 1:
            copied = len(mix(NAMESPACES, REBALANCED))
            js = nc.jetstream()
            await wait_until_async(
                lambda: _messages(js, stream_name(shards), copied),
                what="the server copied every observation into the shard stream")
        planners = [Planner(nc, cluster="c1", rules=rules(s), clock=lambda: NOW, shards=s)
                    for s in (Shards(shards, i) for i in range(shards))]
        tasks = []
        for planner in planners:
            await planner.restore()
            planner.set_leader(True)
            tasks += [asyncio.ensure_future(f.run()) for f in planner.followers()]
        try:
            for planner in planners:
                await settle(planner)
        finally:
            for planner in planners:
                for follower in planner.followers():
                    follower.stop()
            for task in tasks:
                await task
        return await plans_on_bus(nc), planners
    finally:
        await nc.close()


async def _messages(js: JetStreamContext, stream: str, count: int) -> bool:
    info = await js.stream_info(stream)
    return info.state.messages >= count


def plan_set(plans: list[Plan]) -> set[tuple[str, str, str, str, str]]:
    return {(p.id, p.verb, p.target.resource, p.target.namespace, p.target.name) for p in plans}


async def test_three_shards_publish_the_plans_one_planner_publishes(tmp_path: Path) -> None:
    one = NatsServer(store_dir=tmp_path / "one").start()
    three = NatsServer(store_dir=tmp_path / "three").start()
    try:
        single, (whole,) = await decide(one.url, 1)
        sharded, shard_planners = await decide(three.url, 3)
    finally:
        one.stop()
        three.stop()
    kinds = {p.verb for p in single}
    assert {"patch", "patch_status"} <= kinds, kinds  # spreads, pods and the rebalancer at work
    assert any(p.target.resource == "workloadrebalancers" for p in single)
    assert any(p.target.resource == "workloadspreads" for p in single)
    assert plan_set(sharded) == plan_set(single)

    held = [_objects(p) for p in shard_planners]
    cluster_scoped = {key for key in _objects(whole) if key[1] == ""}
    assert len(cluster_scoped) == 5  # four nodes and the rebalancer
    for index, keys in enumerate(held):
        assert cluster_scoped <= keys
        namespaces = {ns for _, ns, _ in keys if ns}
        assert namespaces, "every shard owns some of the twelve namespaces"
        assert all(partition(escape(ns), 3) == index for ns in namespaces)
    namespaced = set().union(*held) - cluster_scoped
    assert namespaced == _objects(whole) - cluster_scoped
    assert sum(len(keys) for keys in held) == len(_objects(whole)) + 2 * len(cluster_scoped)


def _objects(planner: Planner) -> set[tuple[str, str, str]]:
    """(resource key, namespace, name) of every object the planner holds."""
    out = set()
    for rkey, bucket in planner.projection.state.objects.items():
        for okey in bucket:
            namespace, name = okey.split(".")
            out.add((rkey, unescape(namespace), unescape(name)))
    return out
