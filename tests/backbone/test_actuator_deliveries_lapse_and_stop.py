"""The actuator against kubesim and a real nats-server: deliveries that lapse, stops, redeliveries.

A plan is held mid-apply by the actuator's own rate limiter (two tokens, refilled once in a
long while), so it stays "being applied" as long as the test needs.
"""

from __future__ import annotations

import asyncio
from typing import Any

import nats
from kubernetes import client
from nats.aio.client import Client
from prometheus_client import CollectorRegistry

from events.messages import ObjectRef, Plan, Precondition
from services.actuator.application import Applier
from services.actuator.consumer import PlanConsumer
from spreadbus.runtime.kube_client import KubeClient
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.rate_limit import TokenBucket
from spreadbus.runtime.stream_setup import ensure_streams
from tests.backbone.test_actuator_outcomes import (
    _count,
    annotate,
    deployment_body,
    deployment_ref,
    outcomes,
    publish,
)
from tests.fixtures.observed_generation import ANNOTATION
from tests.fixtures.plan_grants import granting
from tests.fixtures.polling import wait_until_async
from tests.fixtures.running import running

AUTHORITY = granting("test", ("apps", "deployments"), ("", "pods"), ("", "configmaps"))


def _stuck_after_one() -> TokenBucket:
    """One plan (a read and a patch) goes through; the next waits for about a day."""
    return TokenBucket(0.00001, 2)


def _sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


async def _create(api: client.ApiClient, name: str) -> Any:
    apps = client.AppsV1Api(api)
    return await asyncio.to_thread(
        apps.create_namespaced_deployment, "default", deployment_body(name)
    )


def _handle_tasks() -> list[asyncio.Task[Any]]:
    return [
        t
        for t in asyncio.all_tasks()
        if "PlanConsumer._handle" in repr(t.get_coro()) and not t.done()
    ]


def _consumer(
    nc: Client, api: client.ApiClient, limiter: TokenBucket, **options: Any
) -> PlanConsumer:
    return PlanConsumer(
        nc, Applier(KubeClient(api), limiter=limiter, authority=AUTHORITY),
        cluster="c1", workers=2, **options
    )


async def _apply_one_and_hold_the_next(nc: Client, api: client.ApiClient) -> None:
    """Plan p-one is applied (spending the stuck limiter's tokens); p-two is held mid-apply."""
    first = await _create(api, "one")
    second = await _create(api, "two")
    await publish(nc, annotate("one", first.metadata.uid, "1", "p-one"))
    await wait_until_async(lambda: _count(nc, 1), what="p-one's outcome")
    await publish(nc, annotate("two", second.metadata.uid, "1", "p-two"))

    async def two_is_stuck() -> bool:
        return len(_handle_tasks()) == 1

    await wait_until_async(two_is_stuck, what="two_is_stuck")


def _zone(plan_id: str, target: ObjectRef, zone: str, precondition: Precondition) -> Plan:
    """A strategic patch setting the app container's ZONE variable."""
    container = {"name": "app", "env": [{"name": "ZONE", "value": zone}]}
    return Plan(
        id=plan_id,
        cluster="c1",
        verb="patch",
        rule="test",
        target=target,
        patch_type="strategic",
        patch={"spec": {"template": {"spec": {"containers": [container]}}}},
        precondition=precondition,
    )


async def test_a_stopping_actuator_cancels_its_running_plans_and_hands_them_back(
    nats_client: Client, kube_api_client: client.ApiClient
) -> None:
    await ensure_streams(nats_client.jetstream())
    registry = CollectorRegistry()
    slow = _consumer(nats_client, kube_api_client, _stuck_after_one(), registry=registry)
    async with running(slow.run):
        await _apply_one_and_hold_the_next(nats_client, kube_api_client)
    assert _handle_tasks() == []  # cancelled and awaited, not left running
    assert _sample(registry, "spreadbus_actuator_abandoned_plans_total", why="stopping") == 1

    # Handed back: another replica applies it at once, well before the ack wait runs out.
    fast = _consumer(nats_client, kube_api_client, TokenBucket(50, 50), ack_wait_seconds=60.0)
    async with running(fast.run):
        await wait_until_async(
            lambda: _count(nats_client, 2), what="_count(nats_client, 2)", timeout=20
        )
    results = {o.plan_id: o.result for o in await outcomes(nats_client)}
    assert results == {"p-one": "applied", "p-two": "applied"}


async def test_an_apply_whose_delivery_lapsed_while_nats_was_away_is_cancelled(
    nats_server: NatsServer, kube_api_client: client.ApiClient
) -> None:
    nc = await nats.connect(nats_server.url, reconnect_time_wait=0.2, max_reconnect_attempts=-1)
    try:
        await ensure_streams(nc.jetstream())
        registry = CollectorRegistry()
        slow = _consumer(
            nc, kube_api_client, _stuck_after_one(), ack_wait_seconds=1.5, registry=registry
        )
        async with running(slow.run):
            await _apply_one_and_hold_the_next(nc, kube_api_client)
            await asyncio.to_thread(nats_server.stop)

            async def lapsed() -> bool:
                return (
                    _sample(
                        registry, "spreadbus_actuator_abandoned_plans_total", why="delivery_lapsed"
                    )
                    == 1
                    and _handle_tasks() == []
                )

            await wait_until_async(lapsed, what="lapsed")
            assert _sample(registry, "spreadbus_actuator_renewal_failures_total") >= 1

        await asyncio.to_thread(nats_server.restart)
        fast = _consumer(nc, kube_api_client, TokenBucket(50, 50), ack_wait_seconds=1.5)
        async with running(fast.run):
            await wait_until_async(lambda: _count(nc, 2), what="_count(nc, 2)", timeout=40)
        results = {o.plan_id: o.result for o in await outcomes(nc)}
        assert results == {"p-one": "applied", "p-two": "applied"}
    finally:
        await nc.close()


async def test_a_redelivered_strategic_or_status_plan_already_applied_is_skipped(
    kube_api_client: client.ApiClient,
) -> None:
    created = await _create(kube_api_client, "web")
    target = deployment_ref("web", created.metadata.uid)
    strategic = _zone(
        "p-strategic",
        target,
        "a",
        Precondition(uid=created.metadata.uid, resource_version=created.metadata.resource_version),
    )
    applier = Applier(KubeClient(kube_api_client), limiter=TokenBucket(50, 50), authority=AUTHORITY)
    assert (await applier.apply(strategic)).result == "applied"
    again = await applier.apply(strategic)  # what a redelivery does
    assert again.result == "skipped", again.error

    apps = client.AppsV1Api(kube_api_client)
    current = await asyncio.to_thread(apps.read_namespaced_deployment, "web", "default")
    status = Plan(
        id="p-status",
        cluster="c1",
        verb="patch_status",
        rule="test",
        target=target,
        patch={"status": {"observedGeneration": 7}, "spec": {"replicas": 5}},
        precondition=Precondition(
            uid=created.metadata.uid, resource_version=current.metadata.resource_version
        ),
    )
    assert (await applier.apply(status)).result == "applied"
    again = await applier.apply(status)
    assert again.result == "skipped", again.error
    # A strategic patch that would still change something is not taken as done.
    other = _zone("p-other", target, "b", Precondition(uid=created.metadata.uid))
    assert (await applier.apply(other)).result == "applied"


async def test_a_plan_delivered_more_than_max_deliveries_times_fails_as_given_up(
    nats_client: Client, kube_api_client: client.ApiClient
) -> None:
    await ensure_streams(nats_client.jetstream())
    created = await _create(kube_api_client, "web")
    consumer = PlanConsumer(
        nats_client,
        Applier(KubeClient(kube_api_client), limiter=TokenBucket(50, 50), authority=AUTHORITY),
        cluster="c1",
        workers=1,
        max_deliveries=1,
    )
    # A replica that took the plan and died: the same durable consumer, the plan handed back.
    js = nats_client.jetstream()
    await publish(nats_client, annotate("web", created.metadata.uid, "1", "p-doomed"))
    sub = await js.pull_subscribe("plan.c1.>", durable=consumer.durable, stream="PLANS")
    [first] = await sub.fetch(1, timeout=5)
    await first.nak()
    async with running(consumer.run):
        await wait_until_async(lambda: _count(nats_client, 1), what="_count(nats_client, 1)")
    [outcome] = await outcomes(nats_client)
    assert outcome.result == "failed"
    assert outcome.error is not None
    assert outcome.error.reason == "GaveUp"
    apps = client.AppsV1Api(kube_api_client)
    current = await asyncio.to_thread(apps.read_namespaced_deployment, "web", "default")
    assert ANNOTATION not in (current.metadata.annotations or {})  # never applied


async def test_a_retryable_api_error_is_retried_with_growing_backoff_then_fails_with_it(
    kube_api_client: client.ApiClient,
) -> None:
    created = await _create(kube_api_client, "web")
    # Every update of a Deployment now needs a webhook nobody serves: the API answers 500.
    webhooks = client.AdmissionregistrationV1Api(kube_api_client)
    await asyncio.to_thread(
        webhooks.create_mutating_webhook_configuration,
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "unreachable"},
            "webhooks": [
                {
                    "name": "unreachable.spreadbus.io",
                    "clientConfig": {"url": "https://127.0.0.1:1/mutate"},
                    "rules": [
                        {
                            "apiGroups": ["apps"],
                            "apiVersions": ["v1"],
                            "operations": ["UPDATE"],
                            "resources": ["deployments"],
                        }
                    ],
                    "failurePolicy": "Fail",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "timeoutSeconds": 1,
                }
            ],
        },
    )
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)
        await asyncio.sleep(0)

    applier = Applier(
        KubeClient(kube_api_client),
        limiter=TokenBucket(50, 50),
        max_attempts=4,
        backoff_seconds=0.1,
        sleep=sleep, authority=AUTHORITY)
    result = await applier.apply(annotate("web", created.metadata.uid, "1", "p-retry"))
    assert result.result == "failed"
    assert result.attempts == 4
    assert result.error is not None
    assert result.error.status == 500
    # One wait between attempts, none after the last; each jittered up to the doubling.
    assert len(delays) == 3
    assert delays[0] == 0.1
    assert 0.1 <= delays[1] <= 0.2
    assert 0.1 <= delays[2] <= 0.4
