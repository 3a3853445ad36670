"""The watcher's publisher keeps at most ``max_in_flight`` observations awaiting their ack."""

from __future__ import annotations

from nats.aio.client import Client
from prometheus_client import CollectorRegistry

from events.messages import ResourceRef
from events.streams import KUBE
from services.watcher.publisher import ObservationPublisher
from services.watcher.resource_watch import Change
from spreadbus.runtime.stream_setup import ensure_streams

CONFIG_MAPS = ResourceRef(group="", version="v1", resource="configmaps")


async def test_publishing_waits_for_acks_beyond_max_in_flight(nats_client: Client) -> None:
    js = nats_client.jetstream()
    await ensure_streams(js)
    registry = CollectorRegistry()
    publisher = ObservationPublisher(nats_client, cluster="east", max_in_flight=4,
                                     registry=registry)
    peak = 0.0
    for i in range(200):
        raw = f'{{"metadata":{{"name":"cm-{i}","namespace":"default","uid":"u{i}"}}}}'.encode()
        await publisher.observation(
            CONFIG_MAPS, Change("ADDED", "default", f"cm-{i}", f"u{i}", "1", raw, False), 0.0)
        in_flight = registry.get_sample_value("spreadbus_watcher_in_flight") or 0.0
        peak = max(peak, in_flight)
        assert in_flight <= 4
    await publisher.flush()
    assert peak == 4  # publishes did pile up to the bound, which is what held them
    info = await js.stream_info(KUBE.name)
    assert info.state.messages == 200  # waiting lost nothing
    assert registry.get_sample_value("spreadbus_watcher_publish_failures_total") == 0
    assert registry.get_sample_value("spreadbus_watcher_observations_total",
                                     {"resource": "configmaps", "event": "ADDED"}) == 200
