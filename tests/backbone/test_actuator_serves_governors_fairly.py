"""One governor's backlog does not hold back another's plan (kubesim, a real nats-server).

The backlog is published before the actuator starts, the other governor's plan last; its outcome
is measured by its place among the outcomes, not by time.
"""

from __future__ import annotations

import asyncio

import msgspec
from kubernetes import client
from nats.aio.client import Client
from prometheus_client import CollectorRegistry

from events.messages import Plan
from services.actuator.application import Applier
from services.actuator.consumer import PlanConsumer
from spreadbus.runtime.kube_client import KubeClient
from spreadbus.runtime.rate_limit import TokenBucket
from spreadbus.runtime.stream_setup import ensure_streams
from tests.backbone.test_actuator_outcomes import (
    AUTHORITY,
    _count,
    annotate,
    deployment_body,
    deployment_ref,
    outcomes,
    publish,
)
from tests.fixtures.polling import wait_until_async
from tests.fixtures.running import running

BACKLOG = 60
WORKERS = 2


def governed(name: str, uid: str, value: str, plan_id: str) -> Plan:
    """An annotation on the Deployment, decided for it as its own governor."""
    return msgspec.structs.replace(annotate(name, uid, value, plan_id),
                                   governor=deployment_ref(name, uid))


async def test_a_plan_behind_another_governors_backlog_is_among_the_first_applied(
    nats_client: Client, kube_api_client: client.ApiClient
) -> None:
    await ensure_streams(nats_client.jetstream())
    apps = client.AppsV1Api(kube_api_client)
    busy, other = [
        await asyncio.to_thread(apps.create_namespaced_deployment, "default",
                                deployment_body(name))
        for name in ("busy", "other")
    ]
    for i in range(BACKLOG):
        await publish(nats_client, governed("busy", busy.metadata.uid, str(i), f"p-busy-{i}"))
    await publish(nats_client, governed("other", other.metadata.uid, "1", "p-other"))

    consumer = PlanConsumer(
        nats_client,
        Applier(KubeClient(kube_api_client), limiter=TokenBucket(200, 200), authority=AUTHORITY),
        cluster="c1", workers=WORKERS)
    async with running(consumer.run, stop_within=20):
        await wait_until_async(lambda: _count(nats_client, BACKLOG + 1),
                               what="every plan's outcome", timeout=60)
    order = [o.plan_id for o in await outcomes(nats_client)]
    assert len(order) == BACKLOG + 1
    assert order.index("p-other") < 2 * WORKERS, order  # in stream order it would be last
    failed = [(o.plan_id, o.result, o.error) for o in await outcomes(nats_client)
              if o.result != "applied"]
    assert not failed


async def test_plans_waiting_to_start_are_kept_alive_past_the_ack_wait(
    nats_client: Client, kube_api_client: client.ApiClient
) -> None:
    await ensure_streams(nats_client.jetstream())
    apps = client.AppsV1Api(kube_api_client)
    web = await asyncio.to_thread(apps.create_namespaced_deployment, "default",
                                  deployment_body("web"))
    plans = 20
    for i in range(plans):
        await publish(nats_client, governed("web", web.metadata.uid, str(i), f"p-{i}"))
    registry = CollectorRegistry()
    # Eight API requests a second: the last plans wait well over the ack wait to start.
    consumer = PlanConsumer(
        nats_client,
        Applier(KubeClient(kube_api_client), limiter=TokenBucket(8, 1), authority=AUTHORITY),
        cluster="c1", workers=1, ack_wait_seconds=1.5, registry=registry)
    async with running(consumer.run, stop_within=20):
        await wait_until_async(lambda: _count(nats_client, plans), what="every plan's outcome",
                               timeout=60)
        info = await nats_client.jetstream().consumer_info("PLANS", consumer.durable)
    assert info.num_redelivered == 0
    assert registry.get_sample_value("spreadbus_actuator_abandoned_plans_total",
                                     {"why": "delivery_lapsed"}) is None
    assert sorted(o.plan_id for o in await outcomes(nats_client)) == sorted(
        f"p-{i}" for i in range(plans))
