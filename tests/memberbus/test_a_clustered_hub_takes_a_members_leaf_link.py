"""A three-node hub (every node in the domain ``hub`` with a leaf port of its own) takes a
member's leaf link: the member's observations reach the hub's three-replica KUBE and the hub's
plans for it reach the member's PLANS, on real servers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest

from events import streams
from spreadbus.runtime import member_bus
from spreadbus.runtime.nats_cluster import NatsCluster
from spreadbus.runtime.nats_server import ServerConfig
from spreadbus.runtime.stream_setup import ensure_streams
from tests.memberbus.bus_reading import messages, subjects_held, wait_for

ADMIN = {"user": "admin", "password": "admin-password"}
LEAF_PASSWORD = "member1-leaf-password"


@pytest.fixture
def clustered_hub(tmp_path: Path) -> Iterator[NatsCluster]:
    users = [ADMIN, *member_bus.leaf_authorization_users({"member1": LEAF_PASSWORD})]
    base = ServerConfig(blocks=("authorization: " + json.dumps({"users": users}) + "\n",))
    cluster = NatsCluster(store_root=tmp_path / "hub", config_dir=tmp_path / "conf", base=base,
                          leaf_listen=True).start()
    try:
        yield cluster
    finally:
        cluster.stop()


async def test_a_member_links_to_a_clustered_hub(clustered_hub: NatsCluster,
                                                 tmp_path: Path) -> None:
    assert len(set(clustered_hub.leaf_urls)) == 3
    member = member_bus.start_member_server(tmp_path / "member1", tmp_path / "conf", "member1",
                                            clustered_hub.leaf_urls[1], LEAF_PASSWORD)
    hub = await nats.connect(servers=clustered_hub.urls, user=ADMIN["user"],
                             password=ADMIN["password"])
    local = await nats.connect(member.url)
    try:
        await ensure_streams(local.jetstream(), member_bus.member_streams("member1"))
        await ensure_streams(hub.jetstream(), member_bus.hub_streams(["member1"]), replicas=3)
        observed = "kube.obs.member1.core.pods.default.web-0"
        await local.jetstream().publish(observed, b"{}")
        await hub.jetstream().publish("plan.member1.delete.core.pods.default.web-0", b"plan",
                                      headers={"Nats-Msg-Id": "p1"})

        async def crossed() -> bool:
            return (observed in await subjects_held(hub.jetstream(), streams.KUBE.name)
                    and bool(await subjects_held(local.jetstream(), streams.PLANS.name)))

        await wait_for("the observation at the hub and the plan at member1", crossed)
        assert (await hub.jetstream().stream_info(streams.KUBE.name)).config.num_replicas == 3
        assert await messages(local.jetstream(), streams.PLANS.name) == [
            ("plan.member1.delete.core.pods.default.web-0", b"plan")]
    finally:
        await local.close()
        await hub.close()
        member.stop()
