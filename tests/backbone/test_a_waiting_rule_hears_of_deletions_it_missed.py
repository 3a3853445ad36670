"""A rule that waits for its resources' sync (the watcher relisting them) is offered, once it can
decide again, the objects that were deleted meanwhile, not only those still there.

Rules that keep state between rounds (the UnitedDeployment rule counts each UD's pods as they
change) would otherwise keep a deleted object forever: the relist that publishes the deletions
of objects gone while the watcher was down is exactly when their resource is not synced, while
rules reading other resources keep the planner deciding, and taking the changed keys, meanwhile.
"""

from __future__ import annotations

from collections.abc import Set
from typing import Final

from nats.aio.client import Client

from events import codec, subjects
from events.messages import ResourceRef, SyncMarker
from services.planner.planner import Planner
from spreadbus.projection.kube_state import KubeProjection, object_key, resource_key
from spreadbus.projection.planning import Desired
from spreadbus.runtime.stream_setup import ensure_streams
from tests.backbone.log_builders import deployment, observe, synced
from tests.fixtures.polling import wait_until_async
from tests.fixtures.running import running

DEPLOYMENTS: Final = ResourceRef(group="apps", version="v1", resource="deployments")
STATEFULSETS: Final = ResourceRef(group="apps", version="v1", resource="statefulsets")
Key = tuple[str, str]


class Recorder:
    """Decides nothing; keeps every set of keys it was offered."""

    def __init__(self, name: str, resource: ResourceRef) -> None:
        self.name = name
        self.resources = (resource,)
        self.offers: list[Set[Key]] = []

    def desired(self, view: KubeProjection, changed: Set[Key], now: float) -> list[Desired]:
        self.offers.append(set(changed))
        return []


def statefulsets_synced() -> tuple[str, bytes]:
    marker = SyncMarker(cluster="c1", group="apps", version="v1", resource="statefulsets",
                        complete=True)
    return subjects.sync("c1", "apps", "statefulsets"), codec.encode(marker)


async def publish(nc: Client, entries: list[tuple[str, bytes]]) -> None:
    js = nc.jetstream()
    for subject, data in entries:
        await js.publish(subject, data)


async def test_deletions_while_a_rule_waits_for_its_sync_are_offered_when_it_decides_again(
    nats_client: Client,
) -> None:
    await ensure_streams(nats_client.jetstream())
    await publish(nats_client, [observe(deployment("d1", 1, 1), "ADDED"),
                                observe(deployment("d2", 1, 2), "ADDED"),
                                synced(), statefulsets_synced()])
    counting = Recorder("counting", DEPLOYMENTS)
    other = Recorder("other", STATEFULSETS)
    planner = Planner(nats_client, cluster="c1", rules=[counting, other])  # type: ignore[list-item]
    await planner.restore()
    planner.set_leader(True)
    d1: Key = (resource_key("c1", "apps", "deployments"), object_key("default", "d1"))
    async with running(planner.run):
        await wait_until_async(lambda: any(d1 in o for o in counting.offers),
                               what="d1 offered to the counting rule")
        await publish(nats_client, [synced(complete=False)])
        await wait_until_async(lambda: not planner.rule_ready(counting),
                               what="the counting rule waiting for its sync")
        offers_before = len(other.offers)
        await publish(nats_client, [observe(deployment("d1", 1, 3), "DELETED")])
        # The other rule still decides: the round that took d1's deletion has passed.
        await wait_until_async(lambda: len(other.offers) > offers_before,
                               what="a round while the counting rule waits")
        assert not planner.projection.exists("c1", "apps", "deployments", "default", "d1")
        assert d1 in other.offers[-1], "that round took the deletion"
        waited = len(counting.offers)
        await publish(nats_client, [synced()])
        await wait_until_async(lambda: len(counting.offers) > waited,
                               what="the counting rule deciding again")
    assert d1 in counting.offers[-1], (
        "the deletion made while the rule waited was never offered to it")
