"""Streams are created or brought up to date at start-up, whichever service starts first."""

from __future__ import annotations

import asyncio

import msgspec
from nats.aio.client import Client
from nats.js.api import DiscardPolicy

from events import streams
from spreadbus.runtime.stream_setup import ensure_streams, stream_config


async def test_streams_are_created_once_and_updated_in_place(nats_client: Client) -> None:
    js = nats_client.jetstream()
    await asyncio.gather(ensure_streams(js), ensure_streams(js))  # two services at once
    plans = await js.stream_info("PLANS")
    assert plans.config.discard == DiscardPolicy.NEW
    kube = await js.stream_info("KUBE")
    assert kube.config.discard == DiscardPolicy.OLD
    assert kube.config.duplicate_window == 120

    shorter = msgspec.structs.replace(streams.KUBE, max_age_seconds=3600.0)
    await js.update_stream(stream_config(shorter))
    await js.publish("kube.obs.c._.pods.ns.p", b"{}")
    await ensure_streams(js)
    kube = await js.stream_info("KUBE")
    assert kube.config.max_age == streams.KUBE.max_age_seconds
    assert kube.state.messages == 1  # updated in place, nothing lost
