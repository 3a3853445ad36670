"""A plan whose names climb out of its own path is refused unsent; the objects above are untouched.

On a real nats-server with the services' credentials and kubesim over HTTP: the planner user
publishes plans of built-in rules whose target and governor are the same object (the "itself"
grants, which read nothing else) under names that, placed raw into a URL, walk up to another
namespace's Secret, pod and Deployment (urllib3 collapses the ``..`` before sending). Each names
the victim's uid, as a thief who read it from the bus would. Every one fails Forbidden, naming
``target.name``, without a single API request; the victims are as they were.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kubernetes import client
from prometheus_client import CollectorRegistry

from events.messages import ObjectRef, Plan, Precondition, Verb
from services.actuator.application import Applier
from services.actuator.consumer import PlanConsumer
from spreadbus.engine.feature_set import plan_grants
from spreadbus.engine.plan_grants import PlanAuthority
from spreadbus.features.registry import BUILTIN
from spreadbus.runtime.bus_permissions import READER
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.rate_limit import TokenBucket
from spreadbus.runtime.stream_setup import ensure_streams
from tests.backbone.test_actuator_applies_only_granted_plans import _stored, get, post
from tests.backbone.test_actuator_outcomes import outcomes, publish
from tests.backbone.test_actuator_writes_without_reading import CountingClient
from tests.fixtures.polling import wait_until_async
from tests.fixtures.running import running
from tests.fixtures.secured_bus import connect_as

UP_FROM_REBALANCERS = "../../../.."
"""From /apis/apps.karmada.io/v1alpha1/workloadrebalancers/ to the root."""
UP_FROM_SPREADS = "../../../../../.."
"""From /apis/apps.kruise.io/v1alpha1/namespaces/default/workloadspreads/ to the root."""
POD = "/api/v1/namespaces/victim/pods/q"
"""The pod a status plan would set to Failed (another one is deleted)."""


def pod(api: client.ApiClient, name: str) -> dict[str, Any]:
    return post(api, "/api/v1/namespaces/victim/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "web:1"}]}})


def victims(api: client.ApiClient) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The objects delete plans aim at, by path, and the pod a status plan aims at."""
    post(api, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                     "metadata": {"name": "victim"}})
    labels = {"app": "d"}
    return {
        "/api/v1/namespaces/victim/secrets/db-pass": post(
            api, "/api/v1/namespaces/victim/secrets", {
                "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db-pass"},
                "data": {"password": "aHVudGVyMg=="}}),
        "/api/v1/namespaces/victim/pods/p": pod(api, "p"),
        "/apis/apps/v1/namespaces/victim/deployments/d": post(
            api, "/apis/apps/v1/namespaces/victim/deployments", {
                "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                         "template": {"metadata": {"labels": labels},
                                      "spec": {"containers": [{"name": "c",
                                                               "image": "web:1"}]}}}}),
    }, pod(api, "q")


def itself(plan_id: str, rule: str, verb: Verb, target: ObjectRef, patch: Any = None) -> Plan:
    """A plan whose governor is its target, as the "itself" grants want."""
    return Plan(id=plan_id, cluster="c1", verb=verb, rule=rule, target=target, governor=target,
                patch=patch, precondition=Precondition(uid=target.uid))


async def test_names_that_climb_out_of_their_path_are_refused_unsent(
    secured_bus: tuple[NatsServer, Path], kube_api_client: client.ApiClient,
) -> None:
    server, credentials = secured_bus
    api = kube_api_client
    made, status_victim = await asyncio.to_thread(victims, api)
    uid = {path: obj["metadata"]["uid"] for path, obj in made.items()}
    plans = [
        itself(f"delete-{i}", "workloadrebalancer", "delete", ObjectRef(
            group="apps.karmada.io", version="v1alpha1", resource="workloadrebalancers",
            name=UP_FROM_REBALANCERS + path, uid=uid[path]))
        for i, path in enumerate(made)
    ]
    plans.append(itself("fail-the-pod", "workloadspread", "patch_status", ObjectRef(
        group="apps.kruise.io", version="v1alpha1", resource="workloadspreads",
        namespace="default", name=UP_FROM_SPREADS + POD,
        uid=status_victim["metadata"]["uid"]),
        {"status": {"phase": "Failed"}}))
    planner = await connect_as(server, credentials, "planner")
    actuator_nc = await connect_as(server, credentials, "actuator")
    reader = await connect_as(server, credentials, READER)
    kube = CountingClient(api)
    registry = CollectorRegistry()
    applier = Applier(kube, limiter=TokenBucket(100, 100), backoff_seconds=0.05,
                      authority=PlanAuthority(plan_grants(BUILTIN)), registry=registry)
    consumer = PlanConsumer(actuator_nc, applier, cluster="c1", workers=1)
    try:
        await ensure_streams(planner.jetstream())
        async with running(consumer.run, stop_within=20):
            for plan in plans:
                await publish(planner, plan)
            await wait_until_async(lambda: _stored(reader, len(plans)),
                                   what="an outcome of every plan")
        results = {o.plan_id: o for o in await outcomes(reader)}
    finally:
        for nc in (planner, actuator_nc, reader):
            await nc.close()
    assert kube.methods == [], "no request left the actuator"
    for plan in plans:
        outcome = results[plan.id]
        assert outcome.result == "failed", plan.id
        assert outcome.error is not None
        assert (outcome.error.status, outcome.error.reason) == (403, "Forbidden"), outcome
        assert outcome.error.message.startswith("target.name: Invalid value: '../"), outcome
    assert registry.get_sample_value("spreadbus_actuator_forbidden_plans_total",
                                     {"rule": "workloadrebalancer"}) == 3
    for path, before in made.items():
        now = await asyncio.to_thread(get, api, path)
        assert now["metadata"]["uid"] == before["metadata"]["uid"], path
        assert not now["metadata"].get("deletionTimestamp"), path
    now = await asyncio.to_thread(get, api, POD)
    assert now.get("status", {}).get("phase") != "Failed"
    assert now["metadata"]["resourceVersion"] == status_victim["metadata"]["resourceVersion"]
