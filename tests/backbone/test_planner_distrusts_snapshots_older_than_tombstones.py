"""A snapshot is tailed only while every deletion after it is still in KUBE.

A ``DELETED`` observation leaves the stream when its TTL runs out. A planner restoring a
snapshot taken before a deletion whose tombstone already expired would keep the deleted object
forever; so a snapshot older than (a share of) the tombstone TTL, judged by the planner's clock
against the time the snapshot records, is dropped for a full replay, which is complete.
"""

from __future__ import annotations

from collections.abc import Callable

from nats.aio.client import Client
from nats.js.errors import NotFoundError

from events import subjects
from events.streams import KUBE, observation_headers
from services.planner.planner import SNAPSHOT_TRUSTED_SHARE, Planner
from spreadbus.projection import snapshot
from spreadbus.runtime.snapshot_store import SnapshotStore
from spreadbus.runtime.stream_setup import ensure_streams
from tests.backbone.log_builders import deployment, observe, synced
from tests.fixtures.manual_clock import ManualClock
from tests.fixtures.observed_generation import ObservedGeneration
from tests.fixtures.polling import wait_until_async
from tests.fixtures.running import running

TAKEN_AT = 1_000_000.0


def make_planner(nc: Client, clock: Callable[[], float], ttl: float) -> Planner:
    return Planner(nc, cluster="c1", rules=[ObservedGeneration("c1")],
                   snapshots=SnapshotStore(nc), clock=clock,
                   tombstone_ttl_seconds=ttl)


async def caught_up(planner: Planner) -> None:
    async with running(planner.run):
        await wait_until_async(lambda: planner.caught_up, what="the planner to catch up")


async def snapshot_with_web_and_api(nc: Client, ttl: float) -> Planner:
    """Two live Deployments, a snapshot of them taken at ``TAKEN_AT``, then ``web`` deleted."""
    js = nc.jetstream()
    await ensure_streams(js)
    for name in ("web", "api"):
        await js.publish(*observe(deployment(name, 1, 1), "ADDED"))
    await js.publish(*synced())
    first = make_planner(nc, ManualClock(TAKEN_AT), ttl)
    assert await first.restore() == "replay"
    await caught_up(first)
    await first.save_snapshot()
    gone = deployment("web", 1, 2)
    await js.publish(*observe(gone, "DELETED"),
                     headers=observation_headers("uid-default-web", "2", "DELETED",
                                                 tombstone_ttl_seconds=ttl))
    return first


def web_exists(planner: Planner) -> bool:
    return planner.projection.exists("c1", "apps", "deployments", "default", "web")


async def test_a_snapshot_older_than_the_tombstones_is_replaced_by_a_full_replay(
    nats_client: Client,
) -> None:
    ttl = 1.0
    first = await snapshot_with_web_and_api(nats_client, ttl)
    js = nats_client.jetstream()
    web = subjects.observation("c1", "apps", "deployments", "default", "web")

    async def tombstone_expired() -> bool:
        try:
            await js.get_last_msg(KUBE.name, web)
        except NotFoundError:
            return True
        return False

    await wait_until_async(tombstone_expired, what="web's tombstone to expire", timeout=15,
                           interval=0.1)
    saved = snapshot.load(await SnapshotStore(nats_client).load(first.snapshot_name) or b"")
    assert saved is not None
    assert saved.taken_at == TAKEN_AT
    assert "default.web" in saved.kube.objects["c1.apps.deployments"]  # what tailing would keep

    trusting = make_planner(nats_client, ManualClock(TAKEN_AT + ttl), ttl=3600.0)
    assert await trusting.restore() == "snapshot"  # a TTL it wrongly believes long
    await caught_up(trusting)
    assert web_exists(trusting)  # the deletion is lost: this is what the age rule prevents

    restarted = make_planner(nats_client, ManualClock(TAKEN_AT + ttl), ttl)
    assert await restarted.restore() == "replay"
    await caught_up(restarted)
    assert not web_exists(restarted)
    assert restarted.projection.exists("c1", "apps", "deployments", "default", "api")


async def test_a_snapshot_younger_than_the_tombstones_is_tailed_and_sees_the_deletion(
    nats_client: Client,
) -> None:
    ttl = 3600.0
    await snapshot_with_web_and_api(nats_client, ttl)
    almost = TAKEN_AT + SNAPSHOT_TRUSTED_SHARE * ttl - 1.0
    restarted = make_planner(nats_client, ManualClock(almost), ttl)
    assert await restarted.restore() == "snapshot"
    assert web_exists(restarted)  # from the snapshot, until the tail is applied
    await caught_up(restarted)
    assert not web_exists(restarted)
    assert restarted.projection.exists("c1", "apps", "deployments", "default", "api")

    too_old = make_planner(nats_client, ManualClock(TAKEN_AT + SNAPSHOT_TRUSTED_SHARE * ttl), ttl)
    assert await too_old.restore() == "replay"
