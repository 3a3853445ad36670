"""The actuator against kubesim over HTTP and a real nats-server: one final outcome per plan."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import msgspec
from kubernetes import client
from nats.aio.client import Client

from events import codec, subjects
from events.messages import ObjectRef, Outcome, Plan, Precondition
from services.actuator.application import Applier
from services.actuator.consumer import PlanConsumer
from spreadbus.runtime.kube_client import KubeClient
from spreadbus.runtime.rate_limit import TokenBucket
from spreadbus.runtime.stream_setup import ensure_streams
from tests.fixtures.observed_generation import ANNOTATION
from tests.fixtures.plan_grants import granting
from tests.fixtures.polling import wait_until_async
from tests.fixtures.running import running

AUTHORITY = granting("test", ("apps", "deployments"), ("", "pods"))


def deployment_body(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
        },
    }


def deployment_ref(name: str, uid: str) -> ObjectRef:
    return ObjectRef(
        group="apps",
        version="v1",
        resource="deployments",
        namespace="default",
        name=name,
        uid=uid,
    )


def annotate(name: str, uid: str, value: str, plan_id: str) -> Plan:
    return Plan(
        id=plan_id,
        cluster="c1",
        verb="patch",
        target=deployment_ref(name, uid),
        patch={"metadata": {"annotations": {ANNOTATION: value}}},
        precondition=Precondition(uid=uid),
        rule="test",
    )


async def publish(nc: Client, plan: Plan) -> None:
    t = plan.target
    subject = subjects.plan("c1", plan.verb, t.group, t.resource, t.namespace, t.name)
    await nc.jetstream().publish(subject, codec.encode(plan), headers={"Nats-Msg-Id": plan.id})


async def outcomes(nc: Client) -> list[Outcome]:
    js = nc.jetstream()
    info = await js.stream_info("OUTCOMES")
    found = []
    for seq in range(info.state.first_seq or 1, info.state.last_seq + 1):
        decoded = codec.decode((await js.get_msg("OUTCOMES", seq)).data or b"")
        assert isinstance(decoded, Outcome)
        found.append(decoded)
    return found


def actuator(
    nc: Client, api: client.ApiClient, replicas: int = 1
) -> contextlib.AbstractAsyncContextManager[asyncio.Event]:
    consumers = [
        PlanConsumer(
            nc,
            Applier(KubeClient(api), limiter=TokenBucket(50, 50), backoff_seconds=0.05,
                    authority=AUTHORITY),
            cluster="c1",
            workers=4,
        )
        for _ in range(replicas)
    ]
    return running(*(c.run for c in consumers), stop_within=20)


async def test_plans_end_in_applied_skipped_or_failed_exactly_once(
    nats_client: Client, kube_api_client: client.ApiClient
) -> None:
    await ensure_streams(nats_client.jetstream())
    apps = client.AppsV1Api(kube_api_client)
    created = await asyncio.to_thread(
        apps.create_namespaced_deployment, "default", deployment_body("web")
    )
    uid = created.metadata.uid
    plans = [
        annotate("web", uid, "1", "p-apply"),
        annotate("web", uid, "1", "p-again"),  # same change, other id: already true
        annotate("missing", "uid-x", "1", "p-missing"),  # the object does not exist
        annotate("web", "another-uid", "2", "p-replaced"),  # the object was replaced
    ]
    async with actuator(nats_client, kube_api_client, replicas=2):
        await publish(nats_client, plans[0])
        await wait_until_async(lambda: _count(nats_client, 1), what="_count(nats_client, 1)")
        for plan in plans[1:]:
            await publish(nats_client, plan)
        await publish(nats_client, plans[0])  # a duplicate publish is deduplicated
        await wait_until_async(lambda: _count(nats_client, 4), what="_count(nats_client, 4)")
    results = {o.plan_id: o for o in await outcomes(nats_client)}
    assert len(results) == 4
    assert results["p-apply"].result == "applied"
    assert results["p-again"].result == "skipped"
    assert results["p-missing"].result == "failed"
    assert results["p-missing"].error is not None
    assert results["p-missing"].error.status == 404
    assert results["p-replaced"].result == "failed"
    current = await asyncio.to_thread(apps.read_namespaced_deployment, "web", "default")
    assert current.metadata.annotations[ANNOTATION] == "1"
    assert results["p-apply"].resource_version == current.metadata.resource_version


async def test_a_patch_the_api_rejects_fails_without_retrying_forever(
    nats_client: Client, kube_api_client: client.ApiClient
) -> None:
    await ensure_streams(nats_client.jetstream())
    apps = client.AppsV1Api(kube_api_client)
    created = await asyncio.to_thread(
        apps.create_namespaced_deployment, "default", deployment_body("bad")
    )
    plan = Plan(
        id="p-invalid",
        cluster="c1",
        verb="patch",
        target=deployment_ref("bad", created.metadata.uid),
        patch={"spec": {"replicas": "many"}},
        rule="test",
    )
    async with actuator(nats_client, kube_api_client):
        await publish(nats_client, plan)
        await wait_until_async(lambda: _count(nats_client, 1), what="_count(nats_client, 1)")
    [outcome] = await outcomes(nats_client)
    assert outcome.result == "failed"
    assert outcome.error is not None
    assert 400 <= outcome.error.status < 500
    assert outcome.attempts == 1


async def _count(nc: Client, expected: int) -> bool:
    info = await nc.jetstream().stream_info("OUTCOMES")
    return bool(info.state.messages >= expected)


async def test_a_plan_decided_on_an_older_version_fails_as_stale(
    nats_client: Client, kube_api_client: client.ApiClient
) -> None:
    await ensure_streams(nats_client.jetstream())
    apps = client.AppsV1Api(kube_api_client)
    created = await asyncio.to_thread(
        apps.create_namespaced_deployment, "default", deployment_body("moving")
    )
    seen_version = created.metadata.resource_version
    await asyncio.to_thread(
        apps.patch_namespaced_deployment, "moving", "default", {"spec": {"replicas": 2}}
    )
    plan = msgspec.structs.replace(
        annotate("moving", created.metadata.uid, "1", "p-stale"),
        precondition=Precondition(uid=created.metadata.uid, resource_version=seen_version),
    )
    async with actuator(nats_client, kube_api_client):
        await publish(nats_client, plan)
        await wait_until_async(lambda: _count(nats_client, 1), what="_count(nats_client, 1)")
    [outcome] = await outcomes(nats_client)
    assert outcome.result == "failed"
    assert outcome.error is not None
    assert outcome.error.status == 409
    current = await asyncio.to_thread(apps.read_namespaced_deployment, "moving", "default")
    assert ANNOTATION not in (current.metadata.annotations or {})


async def test_evictions_go_through_the_eviction_api_and_a_gone_pod_is_skipped(
    nats_client: Client, kube_api_client: client.ApiClient
) -> None:
    await ensure_streams(nats_client.jetstream())
    core = client.CoreV1Api(kube_api_client)
    pod = await asyncio.to_thread(
        core.create_namespaced_pod,
        "default",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "victim", "namespace": "default"},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]},
        },
    )

    def evict(name: str, uid: str, plan_id: str) -> Plan:
        return Plan(
            id=plan_id,
            cluster="c1",
            verb="evict",
            rule="test",
            target=ObjectRef(
                group="", version="v1", resource="pods", namespace="default", name=name, uid=uid
            ),
        )

    async with actuator(nats_client, kube_api_client):
        await publish(nats_client, evict("victim", pod.metadata.uid, "p-evict"))
        await wait_until_async(lambda: _count(nats_client, 1), what="_count(nats_client, 1)")
        await publish(nats_client, evict("never-was", "u", "p-gone"))
        await wait_until_async(lambda: _count(nats_client, 2), what="_count(nats_client, 2)")
    results = {o.plan_id: o.result for o in await outcomes(nats_client)}
    assert results == {"p-evict": "applied", "p-gone": "skipped"}

    async def pod_gone_or_terminating() -> bool:
        try:
            current = await asyncio.to_thread(core.read_namespaced_pod, "victim", "default")
        except client.exceptions.ApiException as exc:
            return exc.status == 404
        return current.metadata.deletion_timestamp is not None

    await wait_until_async(pod_gone_or_terminating, what="pod_gone_or_terminating")


async def test_status_plans_write_only_the_status_subresource(
    nats_client: Client, kube_api_client: client.ApiClient
) -> None:
    await ensure_streams(nats_client.jetstream())
    apps = client.AppsV1Api(kube_api_client)
    created = await asyncio.to_thread(
        apps.create_namespaced_deployment, "default", deployment_body("stat")
    )
    plan = Plan(
        id="p-status",
        cluster="c1",
        verb="patch_status",
        rule="test",
        target=deployment_ref("stat", created.metadata.uid),
        patch={"status": {"observedGeneration": 1}, "spec": {"replicas": 5}},
    )
    async with actuator(nats_client, kube_api_client):
        await publish(nats_client, plan)
        await wait_until_async(lambda: _count(nats_client, 1), what="_count(nats_client, 1)")
    [outcome] = await outcomes(nats_client)
    assert outcome.result == "applied"
    current = await asyncio.to_thread(apps.read_namespaced_deployment, "stat", "default")
    assert current.status.observed_generation == 1
    assert current.spec.replicas == 1  # the status endpoint ignores spec
