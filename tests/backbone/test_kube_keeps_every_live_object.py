"""KUBE against a real nats-server: every live object replays from the start, deletions expire.

The stream keeps each subject's latest message with no age limit, so an object observed once
is still there after any amount of traffic about other objects; a ``DELETED`` observation
carries a TTL and leaves the stream when it runs out; and a replay from the start, before or
after the tombstones expired, builds exactly the objects that are alive.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import msgspec
import pytest
from nats.aio.client import Client
from nats.js.errors import APIError, NotFoundError

from events import codec, subjects
from events.messages import Observation
from events.streams import KUBE, StreamSpec, observation_headers
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.runtime.follower import StreamFollower
from spreadbus.runtime.stream_setup import ensure_streams
from tests.backbone.log_builders import deployment, observe, synced
from tests.fixtures.polling import wait_until_async

TTL = 1  # seconds, the server's smallest


async def publish(nc: Client, obj: dict[str, Any], event: str, *, ttl: float = TTL) -> int:
    meta = obj["metadata"]
    subject, data = observe(obj, event)
    headers = observation_headers(meta["uid"], meta["resourceVersion"], event,
                                  tombstone_ttl_seconds=ttl)
    ack = await nc.jetstream().publish(subject, data, headers=headers)
    return ack.seq


async def replay(nc: Client) -> KubeProjection:
    """A consumer from the start of KUBE, as a planner without a snapshot or a new webhook."""
    projection = KubeProjection()
    follower = StreamFollower(nc, stream=KUBE.name, sink=projection.apply)
    task = asyncio.create_task(follower.run())
    try:
        await asyncio.wait_for(follower.wait_caught_up(), 30)
    finally:
        follower.stop()
        await task
    return projection


def live_objects(projection: KubeProjection) -> dict[str, dict[str, Any]]:
    return {key: obj for key, obj in projection.iter_decoded("c1", "apps", "deployments")}


def subject_of(name: str) -> str:
    return subjects.observation("c1", "apps", "deployments", "default", name)


async def messages(nc: Client) -> int:
    return (await nc.jetstream().stream_info(KUBE.name)).state.messages


async def test_an_object_observed_once_outlives_any_traffic_about_other_objects(
    nats_client: Client,
) -> None:
    small = msgspec.structs.replace(KUBE, max_bytes=256 << 10)
    await ensure_streams(nats_client.jetstream(), [small])
    await publish(nats_client, deployment("quiet", 1, 1), "ADDED")
    traffic = 0
    for i in range(2000):
        obj = deployment(f"busy-{i % 50}", i // 50 + 1, 10 + i)
        traffic += len(observe(obj)[1])
        await publish(nats_client, obj, "MODIFIED")
    assert traffic > 2 * small.max_bytes  # a byte window of this size would have lost "quiet"

    objects = live_objects(await replay(nats_client))
    assert objects["default.quiet"] == deployment("quiet", 1, 1)
    assert objects["default.busy-7"]["metadata"]["generation"] == 40  # the latest of each
    assert len(objects) == 51
    assert await messages(nats_client) == 51


async def test_a_deletion_is_kept_for_its_ttl_then_leaves_the_stream(nats_client: Client) -> None:
    js = nats_client.jetstream()
    await ensure_streams(js)
    await publish(nats_client, deployment("gone", 1, 1), "ADDED")
    await publish(nats_client, deployment("gone", 1, 2), "DELETED")

    tombstone = await js.get_last_msg(KUBE.name, subject_of("gone"))
    decoded = codec.decode(tombstone.data or b"")
    assert isinstance(decoded, Observation)
    assert decoded.event == "DELETED"
    assert (tombstone.headers or {}).get("Nats-TTL") == str(TTL)
    assert await messages(nats_client) == 1  # the tombstone replaced the object's observation

    async def tombstone_gone() -> bool:
        try:
            await js.get_last_msg(KUBE.name, subject_of("gone"))
        except NotFoundError:
            return True
        return False

    await wait_until_async(tombstone_gone, what="the tombstone to expire", timeout=15,
                           interval=0.1)
    assert await messages(nats_client) == 0


async def test_a_replay_from_the_start_yields_exactly_the_live_objects(
    nats_client: Client,
) -> None:
    await ensure_streams(nats_client.jetstream())
    rng = random.Random(7)
    alive: dict[str, dict[str, Any]] = {}
    generations: dict[str, int] = {}
    deletions = 0
    for rv in range(1, 301):
        name = f"d{rng.randrange(40)}"
        if name in alive and rng.random() < 0.2:
            await publish(nats_client, alive.pop(name), "DELETED")
            deletions += 1
            continue
        generations[name] = generations.get(name, 0) + 1
        obj = deployment(name, generations[name], rv)
        await publish(nats_client, obj, "MODIFIED" if name in alive else "ADDED")
        alive[name] = obj
    await nats_client.jetstream().publish(*synced())
    expected = {f"default.{name}": obj for name, obj in alive.items()}
    assert deletions > 10
    assert len(expected) > 10

    with_tombstones = await replay(nats_client)
    assert live_objects(with_tombstones) == expected
    assert with_tombstones.synced("c1", "apps", "deployments")

    async def tombstones_expired() -> bool:
        return await messages(nats_client) == len(expected) + 1  # + the sync marker

    await wait_until_async(tombstones_expired, what="every tombstone to expire", timeout=15,
                           interval=0.1)
    after_expiry = await replay(nats_client)
    assert live_objects(after_expiry) == expected
    assert after_expiry.synced("c1", "apps", "deployments")


async def test_a_full_stream_refuses_new_objects_and_still_takes_updates(
    nats_client: Client,
) -> None:
    tiny: StreamSpec = msgspec.structs.replace(KUBE, max_bytes=16 << 10)
    await ensure_streams(nats_client.jetstream(), [tiny])
    stored = 0
    for i in range(1000):
        try:
            await publish(nats_client, deployment(f"d{i}", 1, 1000 + i), "MODIFIED")
        except APIError:
            break
        stored += 1
    else:
        pytest.fail("the stream never filled up")
    assert await messages(nats_client) == stored  # nothing older was dropped to make room

    update = deployment("d0", 2, 2000)  # the same size as what it replaces
    await publish(nats_client, update, "MODIFIED")
    objects = live_objects(await replay(nats_client))
    assert len(objects) == stored
    assert objects["default.d0"] == update
