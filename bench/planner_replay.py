"""Planner replay rate against the raw JetStream consumer rate of the same stream.

The stream holds N Deployment observations (200k by default, 1M with ``--full`` or
``--observations``), one per Deployment. ``KUBE`` keeps only each object's latest observation,
so what a planner replays from the start is one message per live object: N observations to
replay are N live objects, the shape a large cluster gives (the projection grows to N objects).
Measured in the same run, best of two each, raw and planner runs alternating so that load from
other processes on a shared machine falls on both sides alike:

- raw: an ephemeral AckNone consumer drained by pull requests on one inbox whose callback only
  counts; the fastest way this client can take messages off the server;
- planner: a standby :class:`~services.planner.planner.Planner` restoring from nothing until its
  KUBE follower is caught up (decode, fold into the projection, positions, metrics);
- start-up: a planner restoring from a snapshot plus a tail of updates to 5 % of the objects
  (which replace their earlier observations), against a full replay of the same stream.

Goal: planner/raw >= 0.6; snapshot start-up at most half of a full replay.
"""

from __future__ import annotations

import argparse
import asyncio
import time

import nats
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from bench._bus import full_size, nats_server, observation, sync_marker
from services.planner.planner import Planner
from spreadbus.projection.observed_generation import ObservedGeneration
from spreadbus.runtime.snapshot_store import SnapshotStore
from spreadbus.runtime.stream_setup import ensure_streams

REPLAY_GOAL = 0.6
STARTUP_LIMIT = 0.5
BATCH = 8192


async def publish(nc: Client, start: int, count: int, objects: int) -> None:
    js = nc.jetstream()
    for i in range(start, start + count):
        subject, data, msg_id = observation(i, objects)
        await js.publish_async(subject, data, headers={"Nats-Msg-Id": msg_id})
        if i % 4000 == 3999:
            await js.publish_async_completed()
    subject, data = sync_marker()
    await js.publish_async(subject, data)
    await js.publish_async_completed()


async def raw_rate(nc: Client, total: int) -> float:
    js = nc.jetstream()
    info = await js.add_consumer("KUBE", config=ConsumerConfig(
        ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.ALL, mem_storage=True,
        num_replicas=1, inactive_threshold=30.0))
    inbox = nc.new_inbox()
    done = asyncio.Event()
    next_request = asyncio.Event()
    state = {"count": 0, "in_request": 0}

    async def on_msg(msg: Msg) -> None:
        if not msg.reply:
            next_request.set()  # status: request expired
            return
        state["count"] += 1
        state["in_request"] += 1
        if state["count"] >= total:
            done.set()
        elif state["in_request"] >= BATCH:
            state["in_request"] = 0
            next_request.set()

    sub = await nc.subscribe(inbox, cb=on_msg, pending_msgs_limit=4 * BATCH,
                             pending_bytes_limit=1 << 30)
    request = f'{{"batch": {BATCH}, "expires": 5000000000}}'.encode()
    started = time.perf_counter()
    await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.KUBE.{info.name}", request, reply=inbox)
    while not done.is_set():
        waiter = asyncio.ensure_future(next_request.wait())
        finisher = asyncio.ensure_future(done.wait())
        await asyncio.wait({waiter, finisher}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        finisher.cancel()
        if next_request.is_set() and not done.is_set():
            next_request.clear()
            await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.KUBE.{info.name}", request,
                             reply=inbox)
    elapsed = time.perf_counter() - started
    await sub.unsubscribe()
    await js.delete_consumer("KUBE", info.name)
    return total / elapsed


async def planner_startup(
    nc: Client, snapshots: SnapshotStore | None, parts: dict[str, float] | None = None
) -> tuple[float, Planner]:
    """Seconds from nothing to caught up; ``parts`` gets the restore and replay shares."""
    planner = Planner(nc, cluster="bench", rules=[ObservedGeneration("bench")],
                      snapshots=snapshots)
    stopping = asyncio.Event()
    started = time.perf_counter()
    await planner.restore()
    restored = time.perf_counter()
    task = asyncio.create_task(planner.run(stopping))
    kube = planner.followers()[0]
    await kube.wait_caught_up()
    elapsed = time.perf_counter() - started
    if parts is not None:
        parts["restore"] = restored - started
        parts["replay"] = elapsed - parts["restore"]
    stopping.set()
    await task
    return elapsed, planner


async def main(observations: int) -> None:
    objects = observations
    with nats_server() as server:
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        await ensure_streams(js)
        started = time.perf_counter()
        await publish(nc, 0, observations, objects)
        total = (await js.stream_info("KUBE")).state.messages
        assert total == observations + 1, total  # one per object, and the sync marker
        print(f"published {observations} observations in {time.perf_counter() - started:.1f} s")

        raws: list[float] = []
        replay_times: list[float] = []
        for _ in range(2):
            raws.append(await raw_rate(nc, total))
            seconds, snapshot_planner = await planner_startup(nc, None)
            replay_times.append(seconds)
            replayed = snapshot_planner.projection.state.objects.get("bench.apps.deployments", {})
            assert len(replayed) == objects, len(replayed)
        raw = max(raws)
        planner_rate = total / min(replay_times)
        print(f"raw consumer: {raw:,.0f} msg/s (runs: {', '.join(f'{r:,.0f}' for r in raws)})")
        print(f"planner replay: {planner_rate:,.0f} msg/s ({objects} objects; runs: "
              f"{', '.join(f'{total / t:,.0f}' for t in replay_times)})")
        print(f"ratio planner/raw: {planner_rate / raw:.3f} (goal >= {REPLAY_GOAL})")

        store = SnapshotStore(js)
        snapshot_planner.snapshots = store
        await snapshot_planner.save_snapshot()
        tail = max(1, observations // 20)
        await publish(nc, observations, tail, objects)  # generation 2 of the first objects
        assert (await js.stream_info("KUBE")).state.messages == total
        del snapshot_planner  # one projection of N objects in memory at a time
        full_seconds, _ = await planner_startup(nc, None)
        parts: dict[str, float] = {}
        snap_seconds, resumed = await planner_startup(nc, store, parts)
        assert resumed.restored_from == "snapshot"
        print(f"start-up: snapshot + {tail} tail {snap_seconds:.2f} s (load and decode "
              f"{parts['restore']:.2f} s, tail {parts['replay']:.2f} s), full replay "
              f"{full_seconds:.2f} s")
        print(f"ratio snapshot start-up/full replay: {snap_seconds / full_seconds:.3f} "
              f"(limit <= {STARTUP_LIMIT})")
        await nc.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--observations", type=int,
                        default=1_000_000 if full_size() else 200_000)
    asyncio.run(main(parser.parse_args().observations))
