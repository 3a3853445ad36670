"""A planner shard's leader killed (SIGKILL) while its Deployments scale: the shard's standby takes
the shard's lease and goes on, and the plans on the bus hold every generation's decision at
most once and the last generation's for every Deployment of the shard, none for another shard's.

The planners are real processes (``spreadbus planner --shards 3 --shard 1``) with the test
feature that stamps every Deployment with its generation; the observations are published as the
watcher publishes them, the server sorts them into ``KUBE_SHARDS_3``.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import nats
from nats.aio.client import Client

from events import codec
from events.messages import Plan
from events.shards import Shards
from spreadbus.cli.bus_setup import BusSetupSettings, layout_of
from spreadbus.runtime.bus_setup import set_up_bus
from spreadbus.runtime.nats_server import NatsServer
from tests.backbone.log_builders import deployment, observe, synced
from tests.backbone.service_processes import ServiceProcess, logs_on_failure
from tests.fixtures.generation_feature import PLUGIN
from tests.fixtures.observed_generation import written_value
from tests.fixtures.polling import wait_until_async

SHARD = Shards(3, 1)
NAMES = ("web", "api")
GENERATIONS = 12
KILL_AFTER = 5


def namespaces() -> tuple[list[str], list[str]]:
    """Six namespaces of shard 1 and three of the others."""
    mine: list[str] = []
    others: list[str] = []
    k = 0
    while len(mine) < 6 or len(others) < 3:
        namespace = f"team-{k}"
        (mine if SHARD.owns(namespace) else others).append(namespace)
        k += 1
    return mine, others[:3]


async def plans_on_bus(nc: Client) -> list[Plan]:
    js = nc.jetstream()
    info = await js.stream_info("PLANS")
    out = []
    for seq in range(1, info.state.last_seq + 1):
        decoded = codec.decode((await js.get_msg("PLANS", seq)).data or b"")
        assert isinstance(decoded, Plan)
        out.append(decoded)
    return out


def stamped(plans: list[Plan]) -> Counter[tuple[str, str, str | None]]:
    return Counter((p.target.namespace, p.target.name, written_value(p.patch)) for p in plans)


def planner(url: str, replica: str, log_dir: Path) -> ServiceProcess:
    return ServiceProcess("planner", [
        "--nats-url", url, "--cluster", "c1", "--feature-plugins", PLUGIN,
        "--shards", str(SHARD.count), "--shard", str(SHARD.index), "--planner-id", replica,
        "--lease-ttl-seconds", "2", "--snapshot-every", "40", "--round-spacing-seconds", "0.005",
    ], log_dir / replica)


def leads(process: ServiceProcess) -> bool:
    return "spreadbus_planner_leader 1.0" in process.metrics()


async def test_the_standby_of_a_killed_shard_leader_loses_and_doubles_no_plan(
    bare_nats_server: NatsServer, tmp_path: Path
) -> None:
    mine, others = namespaces()
    nc = await nats.connect(bare_nats_server.url)
    settings = BusSetupSettings(shards=SHARD.count, lease_ttl_seconds=2.0)
    await set_up_bus(nc.jetstream(), layout_of(settings))
    js = nc.jetstream()
    rv = 0

    async def scale_to(generation: int) -> None:
        nonlocal rv
        for namespace in (*mine, *others):
            for name in NAMES:
                rv += 1
                subject, data = observe(deployment(name, generation, rv, namespace=namespace))
                await js.publish(subject, data)

    for replica in ("first", "second"):
        (tmp_path / replica).mkdir()
    replicas = [planner(bare_nats_server.url, name, tmp_path).start()
                for name in ("first", "second")]
    try:
        with logs_on_failure(*replicas):
            await scale_to(1)
            await js.publish(*synced())
            for replica in replicas:
                await asyncio.to_thread(replica.wait_ready)
            leader = await wait_until_async(
                lambda: next((r for r in replicas if leads(r)), None), what="a replica leads")
            standby = next(r for r in replicas if r is not leader)
            assert not leads(standby)
            for generation in range(2, GENERATIONS + 1):
                if generation == KILL_AFTER:
                    await wait_until_async(
                        lambda: _has(nc, mine, KILL_AFTER - 1),
                        what="the leader decided for a generation mid-scale")
                    await scale_to(generation)
                    leader.kill()  # while it decides for this generation
                else:
                    await scale_to(generation)
            await wait_until_async(lambda: leads(standby), what="the standby took over",
                                   timeout=30)
            await wait_until_async(lambda: _has(nc, mine, GENERATIONS),
                                   what="every Deployment of the shard planned at its last "
                                        "generation", timeout=60)
            plans = await plans_on_bus(nc)
    finally:
        for process in replicas:
            process.kill()
        await nc.close()
    counts = stamped(plans)
    assert all(count == 1 for count in counts.values()), [k for k, c in counts.items() if c > 1]
    assert len({p.id for p in plans}) == len(plans)
    assert {namespace for namespace, _, _ in counts} == set(mine)
    decided_by_first = {key for key in counts if key[2] is not None
                        and int(key[2]) < KILL_AFTER}
    assert decided_by_first, "the killed leader decided before it was killed"


async def _has(nc: Client, namespaces: list[str], generation: int) -> bool:
    counts = stamped(await plans_on_bus(nc))
    return all((namespace, name, str(generation)) in counts
               for namespace in namespaces for name in NAMES)
