"""Forged plans are answered Forbidden and never sent; granted ones still apply.

Against kubesim over HTTP, with the grants of the built-in features as the actuator loads them:
a plan from a rule no feature runs, or one that writes what its rule may not write, fails with
reason Forbidden without a single API request, and the object is unchanged. A grant that names
an owner is checked on the object read: someone else's object is refused after the read.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from kubernetes import client
from prometheus_client import CollectorRegistry

from events.messages import ObjectRef, Plan, Precondition, Verb
from services.actuator.application import Applier
from spreadbus.engine.plan_grants import PlanAuthority
from spreadbus.features.registry import BUILTIN, plan_grants
from spreadbus.runtime.kube_client import KubeClient
from spreadbus.runtime.rate_limit import TokenBucket
from tests.backbone.test_actuator_writes_without_reading import CountingClient
from tests.fixtures.plan_grants import granting


def post(api: client.ApiClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(KubeClient(api).request(
        "POST", path, body=body, content_type="application/json"))
    return answer


def get(api: client.ApiClient, path: str) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(KubeClient(api).request("GET", path))
    return answer


def forged(rule: str, verb: Verb, group: str, version: str, resource: str, namespace: str,
           name: str, patch: Any = None) -> Plan:
    return Plan(id=f"forged-{rule}-{verb}-{resource}-{name}", cluster="c1", verb=verb,
                rule=rule, patch=patch,
                target=ObjectRef(group=group, version=version, resource=resource,
                                 namespace=namespace, name=name))


def deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "web:1"}]}}}}


async def test_the_forged_plans_of_an_anonymous_publisher_are_refused_unsent(
    kube_api_client: client.ApiClient,
) -> None:
    api = kube_api_client
    await asyncio.to_thread(post, api, "/apis/apps/v1/namespaces/default/deployments",
                            deployment("web"))
    await asyncio.to_thread(post, api, "/api/v1/nodes",
                            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    await asyncio.to_thread(post, api, "/api/v1/namespaces/kube-system/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "coredns"},
        "data": {"Corefile": "."}})
    kube = CountingClient(api)
    registry = CollectorRegistry()
    applier = Applier(kube, limiter=TokenBucket(100, 100),
                      authority=PlanAuthority(plan_grants(BUILTIN)), registry=registry)
    attacks = [
        forged("workloadspread", "patch", "apps", "v1", "deployments", "default", "web",
               {"spec": {"replicas": 0}}),
        forged("workloadspread", "patch", "", "v1", "pods", "default", "web-1",
               {"spec": {"containers": [{"name": "c", "image": "evil:1"}]}}),
        forged("workloadspread", "patch", "", "v1", "nodes", "", "n1",
               {"spec": {"unschedulable": True}}),
        forged("anyone", "evict", "", "v1", "pods", "default", "web-1"),
        forged("workloadspread", "patch", "", "v1", "configmaps", "kube-system", "coredns",
               {"data": {"Corefile": "evil"}}),
    ]
    for plan in attacks:
        result = await applier.apply(plan)
        assert result.result == "failed", plan
        assert result.error is not None
        assert (result.error.status, result.error.reason) == (403, "Forbidden")
        assert plan.rule in result.error.message
    assert kube.methods == [], "nothing was sent"
    assert registry.get_sample_value("spreadbus_actuator_forbidden_plans_total",
                                     {"rule": "workloadspread"}) == 4
    assert registry.get_sample_value("spreadbus_actuator_forbidden_plans_total",
                                     {"rule": "anyone"}) == 1
    web = await asyncio.to_thread(get, api, "/apis/apps/v1/namespaces/default/deployments/web")
    assert web["spec"]["replicas"] == 2
    node = await asyncio.to_thread(get, api, "/api/v1/nodes/n1")
    assert not node.get("spec", {}).get("unschedulable")
    coredns = await asyncio.to_thread(get, api,
                                      "/api/v1/namespaces/kube-system/configmaps/coredns")
    assert coredns["data"] == {"Corefile": "."}


async def test_an_owner_grant_touches_only_the_objects_its_owner_controls(
    kube_api_client: client.ApiClient,
) -> None:
    api = kube_api_client
    path = "/api/v1/namespaces/default/configmaps"
    source = await asyncio.to_thread(post, api, path, {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "source"}})
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "source",
             "uid": source["metadata"]["uid"], "controller": True}
    owned = await asyncio.to_thread(post, api, path, {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "owned", "ownerReferences": [owner]}})
    stranger = await asyncio.to_thread(post, api, path, {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "stranger"}})
    kube = CountingClient(api)
    applier = Applier(kube, limiter=TokenBucket(100, 100),
                      authority=granting("copies", ("", "configmaps"), owner=("", "ConfigMap")))

    def plan(verb: Verb, meta: dict[str, Any], patch: Any = None) -> Plan:
        return Plan(id=f"{verb}-{meta['name']}", cluster="c1", verb=verb, rule="copies",
                    patch=patch, precondition=Precondition(uid=meta["uid"]),
                    target=ObjectRef(group="", version="v1", resource="configmaps",
                                     namespace="default", name=meta["name"]))

    label = {"metadata": {"labels": {"copied": "yes"}}}
    assert (await applier.apply(plan("patch", owned["metadata"], label))).result == "applied"
    refused = await applier.apply(plan("patch", stranger["metadata"], label))
    assert refused.error is not None
    assert refused.error.reason == "Forbidden"
    assert refused.error.message == "stranger is not controlled by a ConfigMap"
    deleted = await applier.apply(plan("delete", stranger["metadata"]))
    assert deleted.error is not None
    assert deleted.error.reason == "Forbidden"
    assert kube.methods == ["GET", "PATCH", "GET", "GET"], "read before each check"
    still = await asyncio.to_thread(get, api, f"{path}/stranger")
    assert "labels" not in still["metadata"]
    assert (await applier.apply(plan("delete", owned["metadata"]))).result == "applied"
