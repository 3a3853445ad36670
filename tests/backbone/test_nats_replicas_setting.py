"""The replica count of what the setup step creates on the bus: a setting, never applied to what
exists."""

from __future__ import annotations

import msgspec
from nats.aio.client import Client

from events.streams import ALL, KUBE
from spreadbus.cli.bus_setup import BusSetupSettings
from spreadbus.runtime.settings import load_settings
from spreadbus.runtime.stream_setup import ensure_streams, stream_config


def test_replicas_come_from_the_environment_and_default_to_one() -> None:
    assert load_settings(BusSetupSettings, env={}) == BusSetupSettings()
    loaded = load_settings(BusSetupSettings, env={"SPREADBUS_NATS_REPLICAS": "3"})
    assert isinstance(loaded, BusSetupSettings)
    assert loaded.nats_replicas == 3
    assert stream_config(KUBE, replicas=loaded.nats_replicas).num_replicas == 3


async def test_updating_an_existing_stream_keeps_its_replica_count(nats_client: Client) -> None:
    js = nats_client.jetstream()
    await ensure_streams(js)  # one replica, as a single server allows
    older = msgspec.structs.replace(KUBE, max_age_seconds=3600.0)
    await ensure_streams(js, [older])
    # A set-up run configured for three replicas meets the existing streams: their limits are
    # brought up to date, their replica count is left alone.
    await ensure_streams(js, ALL, replicas=3)
    info = await js.stream_info(KUBE.name)
    assert info.config.num_replicas == 1
    assert info.config.max_age == KUBE.max_age_seconds
