"""A publish the stream refuses is reported lost, with the server's reason, and nothing else is."""

from __future__ import annotations

import logging

import pytest
from nats.aio.client import Client
from prometheus_client import CollectorRegistry

from events.messages import ResourceRef
from events.streams import KUBE
from services.watcher.publisher import ObservationPublisher
from services.watcher.resource_watch import Change
from spreadbus.runtime.stream_setup import ensure_streams

CONFIG_MAPS = ResourceRef(group="", version="v1", resource="configmaps")


def change(name: str, size: int) -> Change:
    raw = f'{{"metadata":{{"name":"{name}"}},"data":{{"x":"{"a" * size}"}}}}'.encode()
    return Change("ADDED", "default", name, f"uid-{name}", "1", raw, False)


async def test_a_refused_publish_is_lost_with_the_reason_and_the_others_are_stored(
    nats_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    js = nats_client.jetstream()
    await ensure_streams(js)
    config = (await js.stream_info(KUBE.name)).config
    config.max_msg_size = 4096
    await js.update_stream(config)
    lost: list[tuple[str, str]] = []
    registry = CollectorRegistry()
    publisher = ObservationPublisher(nats_client, cluster="east", registry=registry,
                                     on_lost=lambda ref, key: lost.append(key))
    with caplog.at_level(logging.WARNING, logger="services.watcher.publisher"):
        await publisher.observation(CONFIG_MAPS, change("small-1", 10), 0.0)
        await publisher.observation(CONFIG_MAPS, change("large", 8192), 0.0)
        await publisher.observation(CONFIG_MAPS, change("small-2", 10), 0.0)
        await publisher.flush()
    assert lost == [("default", "large")]
    assert registry.get_sample_value("spreadbus_watcher_publish_failures_total") == 1
    (record,) = [r for r in caplog.records if r.getMessage() == "observation not acknowledged"]
    assert "maximum" in record.__dict__["error"]  # the server's "message size exceeds maximum"
    assert (await js.stream_info(KUBE.name)).state.messages == 2
