"""The setup step creates the streams or brings them up to date, on a server that may hold older
versions of them (so these tests start from a bare server, not one already set up)."""

from __future__ import annotations

import asyncio

import msgspec
import pytest
from nats.aio.client import Client
from nats.js.api import DiscardPolicy, StorageType, StreamConfig

from events import streams
from events.shards import shard_stream
from spreadbus.runtime.bus_layout import LEASE_BUCKET, bus_layout
from spreadbus.runtime.bus_setup import set_up_bus
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.stream_setup import (
    StreamSetupError,
    differences,
    ensure_streams,
    stream_config,
)
from tests.fixtures.bus_setup import default_layout


@pytest.fixture
def nats_server(bare_nats_server: NatsServer) -> NatsServer:
    return bare_nats_server


OLD_KUBE = msgspec.structs.replace(
    streams.KUBE, discard="old", max_age_seconds=7 * 24 * 3600, max_msgs_per_subject=-1,
    allow_msg_ttl=False,
)
"""KUBE as it was defined before it kept the latest message per object."""


async def test_streams_are_created_once_with_their_settings_and_then_left_alone(
    nats_client: Client,
) -> None:
    js = nats_client.jetstream()
    await asyncio.gather(ensure_streams(js), ensure_streams(js))  # two set-up runs at once
    plans = await js.stream_info("PLANS")
    assert plans.config.discard == DiscardPolicy.NEW
    kube = await js.stream_info("KUBE")
    assert kube.config.discard == DiscardPolicy.NEW
    assert kube.config.max_msgs_per_subject == 1
    assert kube.config.allow_msg_ttl
    assert not kube.config.max_age  # no age limit
    assert kube.config.duplicate_window == 120
    for spec in streams.ALL:
        info = await js.stream_info(spec.name)
        assert differences(info.config, stream_config(spec)) == []  # nothing to update next time


async def test_changed_limits_are_updated_in_place(nats_client: Client) -> None:
    js = nats_client.jetstream()
    shorter = msgspec.structs.replace(streams.PLANS, max_age_seconds=3600.0)
    await ensure_streams(js, [shorter])
    await js.publish("plan.c._.patch._.pods.ns.p", b"{}")
    await ensure_streams(js)
    plans = await js.stream_info("PLANS")
    assert plans.config.max_age == streams.PLANS.max_age_seconds
    assert plans.state.messages == 1  # updated in place, nothing lost


async def test_an_old_kube_stream_is_converted_keeping_each_subjects_latest_message(
    nats_client: Client,
) -> None:
    js = nats_client.jetstream()
    await ensure_streams(js, [OLD_KUBE])
    for rv in range(1, 4):
        await js.publish("kube.obs.c._.pods.ns.a", f'{{"rv": {rv}}}'.encode())
    await js.publish("kube.obs.c._.pods.ns.b", b'{"rv": 9}')
    await js.publish("kube.sync.c._.pods", b"{}")
    assert (await js.stream_info("KUBE")).state.messages == 5

    await ensure_streams(js)
    kube = await js.stream_info("KUBE")
    assert differences(kube.config, stream_config(streams.KUBE)) == []
    assert kube.state.messages == 3
    latest = await js.get_last_msg("KUBE", "kube.obs.c._.pods.ns.a")
    assert latest.data == b'{"rv": 3}'
    await js.publish("kube.obs.c._.pods.ns.a", b"{}", headers={"Nats-TTL": "60"})  # TTLs allowed


async def test_a_refused_update_names_the_stream_and_the_setting(nats_client: Client) -> None:
    js = nats_client.jetstream()
    obs_only = msgspec.structs.replace(OLD_KUBE, subjects=("kube.obs.>",))
    await ensure_streams(js, [obs_only])
    await js.add_stream(StreamConfig(name="MARKERS", subjects=["kube.sync.>"],
                                     storage=StorageType.MEMORY))
    with pytest.raises(StreamSetupError) as refused:
        await ensure_streams(js, [streams.KUBE])
    message = str(refused.value)
    assert message.startswith("stream KUBE: the server refused to change ")
    assert "subjects: ['kube.obs.>'] -> ['kube.obs.>', 'kube.sync.>']" in message
    assert "max_msgs_per_subject: -1 -> 1" in message


async def test_a_stream_already_allowing_ttls_is_not_asked_to_stop(nats_client: Client) -> None:
    js = nats_client.jetstream()
    config = stream_config(streams.PLANS)
    config.allow_msg_ttl = True
    config.max_age = 3600.0
    await js.add_stream(config)
    await ensure_streams(js, [streams.PLANS])  # the server could not turn TTLs off
    plans = await js.stream_info("PLANS")
    assert plans.config.allow_msg_ttl
    assert plans.config.max_age == streams.PLANS.max_age_seconds
    assert differences(plans.config, stream_config(streams.PLANS)) == []


async def test_the_setup_creates_every_bucket_once_and_brings_a_changed_one_in_line(
    nats_client: Client,
) -> None:
    js = nats_client.jetstream()
    layout = default_layout()
    first = await set_up_bus(js, layout)
    assert {f"bucket {b.name} created" for b in layout.buckets} <= set(first)
    assert "object store spreadbus-snapshots created" in first
    assert await set_up_bus(js, layout) == []  # nothing to do the second time
    kv = await js.key_value(LEASE_BUCKET)
    await kv.put("planner.c1", b"holder")
    shorter = bus_layout([], history_max_age=layout.streams[-1].max_age_seconds,
                         history_max_bytes=layout.streams[-1].max_bytes, lease_ttl_seconds=3.0)
    assert await set_up_bus(js, shorter) == ["bucket spreadbus-leases updated: ttl: 6.0 -> 3.0"]
    assert (await kv.status()).ttl == 3.0
    assert (await kv.get("planner.c1")).value == b"holder"  # updated in place


async def test_a_shard_stream_is_created_once_and_a_changed_transform_brought_in_line(
    nats_client: Client,
) -> None:
    js = nats_client.jetstream()
    wanted = shard_stream(3)
    assert await ensure_streams(js, [streams.KUBE, wanted]) == [
        "stream KUBE created", "stream KUBE_SHARDS_3 created"]
    assert await ensure_streams(js, [streams.KUBE, wanted]) == []
    older = msgspec.structs.replace(wanted, source_transforms=wanted.source_transforms[:1])
    await js.update_stream(stream_config(older))
    (change,) = await ensure_streams(js, [wanted])
    assert change.startswith("stream KUBE_SHARDS_3 updated: source_transforms:")
    info = await js.stream_info(wanted.name)
    assert differences(info.config, stream_config(wanted)) == []
