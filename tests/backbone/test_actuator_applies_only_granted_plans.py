"""Forged plans are answered Forbidden and never sent; granted ones still apply.

Against kubesim over HTTP, with the grants of the built-in features as the actuator loads them:
a plan from a rule no feature runs, or one that writes what its rule may not write, fails with
reason Forbidden without a single API request, and the object is unchanged. A grant that names
an owner is checked on the object read: someone else's object is refused after the read.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from nats.aio.client import Client
from prometheus_client import CollectorRegistry

from events import streams
from events.messages import ObjectRef, Plan, Precondition, Verb
from services.actuator.application import Applier
from services.actuator.consumer import PlanConsumer
from spreadbus.engine.feature_set import plan_grants
from spreadbus.engine.plan_grants import PlanAuthority
from spreadbus.features.registry import BUILTIN
from spreadbus.runtime.bus_permissions import READER
from spreadbus.runtime.kube_client import KubeClient
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.rate_limit import TokenBucket
from spreadbus.runtime.stream_setup import ensure_streams
from tests.backbone.test_actuator_outcomes import outcomes, publish
from tests.backbone.test_actuator_writes_without_reading import CountingClient
from tests.fixtures.plan_grants import granting
from tests.fixtures.polling import wait_until_async
from tests.fixtures.running import running
from tests.fixtures.secured_bus import connect_as

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


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


# -- a credentialed planner's plans, scoped to the object that governs them -------------------

KRUISE = "apps.kruise.io/v1alpha1"
CRDS = ("apps.kruise.io_workloadspreads.yaml", "apps.kruise.io_uniteddeployments.yaml",
        "apps.karmada.io_workloadrebalancers.yaml")
COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
RESERVED = "apps.kruise.io/united-deployment-reserved-pod"
REQUEST = "rebalance.spreadbus.io/request"


def owner(api_version: str, kind: str, made: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": made["metadata"]["name"],
            "uid": made["metadata"]["uid"], "controller": True}


class Cluster:
    """Workloads, their ReplicaSets and pods made by hand (kubesim runs no controller here), so
    every owner chain is exactly what the test says."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api

    def make(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return post(self.api, path, body)

    def deployment(self, namespace: str, name: str) -> dict[str, Any]:
        body = deployment(name)
        body["metadata"]["namespace"] = namespace
        return self.make(f"/apis/apps/v1/namespaces/{namespace}/deployments", body)

    def replicaset(self, namespace: str, name: str, parent: dict[str, Any]) -> dict[str, Any]:
        labels = {"app": name}
        return self.make(f"/apis/apps/v1/namespaces/{namespace}/replicasets", {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "ownerReferences": [owner("apps/v1", "Deployment",
                                                                 parent)]},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "web:1"}]}}}})

    def pod(self, namespace: str, name: str, *owners: dict[str, Any]) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": name}
        if owners:
            metadata["ownerReferences"] = list(owners)
        return self.make(f"/api/v1/namespaces/{namespace}/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"containers": [{"name": "c", "image": "web:1"}]}})

    def united(self, name: str) -> dict[str, Any]:
        labels = {"app": name}
        template = {"metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "c", "image": "web:1"}]}}
        return self.make(f"/apis/{KRUISE}/namespaces/default/uniteddeployments", {
            "apiVersion": KRUISE, "kind": "UnitedDeployment", "metadata": {"name": name},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"statefulSetTemplate": {
                         "metadata": {"labels": labels},
                         "spec": {"selector": {"matchLabels": labels}, "template": template}}},
                     "topology": {"subsets": [{"name": "a"}]}}})

    def spread(self, name: str, target: str) -> dict[str, Any]:
        return self.make(f"/apis/{KRUISE}/namespaces/default/workloadspreads", {
            "apiVersion": KRUISE, "kind": "WorkloadSpread", "metadata": {"name": name},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                   "name": target},
                     "subsets": [{"name": "a", "maxReplicas": 3}]}})


def as_ref(made: dict[str, Any], group: str, version: str, resource: str) -> ObjectRef:
    metadata = made["metadata"]
    return ObjectRef(group=group, version=version, resource=resource,
                     namespace=metadata.get("namespace", ""), name=metadata["name"],
                     uid=metadata["uid"])


def pod_ref(made: dict[str, Any]) -> ObjectRef:
    return as_ref(made, "", "v1", "pods")


def scoped(plan_id: str, rule: str, verb: Verb, target: ObjectRef, governor: ObjectRef | None,
           patch: Any = None, *, generation: int = 1) -> Plan:
    """A plan decided on ``generation`` of its governor (a governor just made is at 1)."""
    return Plan(id=plan_id, cluster="c1", verb=verb, rule=rule, target=target, patch=patch,
                governor=governor, governor_generation=generation,
                precondition=Precondition(uid=target.uid))


async def test_a_credentialed_planner_reaches_only_what_each_plans_governor_governs(
    secured_bus: tuple[NatsServer, Path], kube_api_client: client.ApiClient,
) -> None:
    server, credentials = secured_bus
    api = kube_api_client
    for name in CRDS:
        crd = yaml.safe_load((DEPLOY / "crds" / name).read_text())
        crd["spec"].pop("conversion", None)  # one served version is all this test reads
        await asyncio.to_thread(post, api, "/apis/apiextensions.k8s.io/v1/"
                                "customresourcedefinitions", crd)
    await asyncio.to_thread(post, api, "/api/v1/namespaces", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    made = Cluster(api)

    def build() -> dict[str, dict[str, Any]]:
        web = made.deployment("default", "web")
        web_rs = made.replicaset("default", "web-1", web)
        api_rs = made.replicaset("default", "api-1", made.deployment("default", "api"))
        elsewhere_rs = made.replicaset("other", "web-1", made.deployment("other", "web"))
        rs_owner = owner("apps/v1", "ReplicaSet", web_rs)
        ud = made.united("ud")
        subset = made.make("/apis/apps/v1/namespaces/default/statefulsets", {
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "ud-a", "ownerReferences": [
                owner(KRUISE, "UnitedDeployment", ud)]},
            "spec": {"replicas": 1, "serviceName": "ud",
                     "selector": {"matchLabels": {"app": "ud"}},
                     "template": {"metadata": {"labels": {"app": "ud"}},
                                  "spec": {"containers": [{"name": "c", "image": "web:1"}]}}}})
        foreign = made.make("/apis/apps/v1/namespaces/default/statefulsets", {
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "someone-a", "ownerReferences": [owner(
                KRUISE, "UnitedDeployment", made.united("someone"))]},
            "spec": {"replicas": 1, "serviceName": "ud",
                     "selector": {"matchLabels": {"app": "ud"}},
                     "template": {"metadata": {"labels": {"app": "ud"}},
                                  "spec": {"containers": [{"name": "c", "image": "web:1"}]}}}})
        return {
            "foreign-subset": foreign,
            "ws": made.spread("ws", "web"),
            "ws-api": made.spread("ws-api", "api"),
            "ud": ud,
            "wr": made.make("/apis/apps.karmada.io/v1alpha1/workloadrebalancers", {
                "apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
                "metadata": {"name": "wr"},
                "spec": {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                        "namespace": "default", "name": "web"}]}}),
            "web-a": made.pod("default", "web-1-a", rs_owner),
            "web-b": made.pod("default", "web-1-b", rs_owner),
            "api-a": made.pod("default", "api-1-a", owner("apps/v1", "ReplicaSet", api_rs)),
            "loner": made.pod("default", "loner"),
            "elsewhere": made.pod("other", "web-1-a", owner("apps/v1", "ReplicaSet",
                                                              elsewhere_rs)),
            "ud-a-0": made.pod("default", "ud-a-0", owner("apps/v1", "StatefulSet", subset)),
        }

    objects = await asyncio.to_thread(build)
    ws = as_ref(objects["ws"], "apps.kruise.io", "v1alpha1", "workloadspreads")
    ws_api = as_ref(objects["ws-api"], "apps.kruise.io", "v1alpha1", "workloadspreads")
    ud = as_ref(objects["ud"], "apps.kruise.io", "v1alpha1", "uniteddeployments")
    wr = as_ref(objects["wr"], "apps.karmada.io", "v1alpha1", "workloadrebalancers")
    cost = {"metadata": {"annotations": {COST_ANNOTATION: "7"}}}
    reserve = {"metadata": {"labels": {RESERVED: "true"}}}
    request = {"metadata": {"annotations": {REQUEST: "r1"}}}
    refused = [
        scoped("evict-other-namespace", "workloadspread", "evict",
               pod_ref(objects["elsewhere"]), ws),
        scoped("evict-another-spreads-pod", "workloadspread", "evict",
               pod_ref(objects["api-a"]), ws),
        scoped("evict-ungoverned-pod", "workloadspread", "evict", pod_ref(objects["loner"]), ws),
        scoped("evict-without-governor", "workloadspread", "evict",
               pod_ref(objects["web-b"]), None),
        scoped("cost-on-another-spreads-pod", "workloadspread", "patch",
               pod_ref(objects["api-a"]), ws, cost),
        scoped("label-on-a-foreign-pod", "uniteddeployment", "patch",
               pod_ref(objects["web-a"]), ud, reserve),
        scoped("request-on-an-unnamed-spread", "workloadrebalancer", "patch", ws_api, wr,
               request),
        scoped("delete-another-uds-subset", "uniteddeployment", "delete",
               as_ref(objects["foreign-subset"], "apps", "v1", "statefulsets"), ud),
    ]
    granted = [
        scoped("cost-on-its-pod", "workloadspread", "patch", pod_ref(objects["web-a"]), ws, cost),
        scoped("evict-its-pod", "workloadspread", "evict", pod_ref(objects["web-b"]), ws),
        scoped("label-on-its-pod", "uniteddeployment", "patch", pod_ref(objects["ud-a-0"]), ud,
               reserve),
        scoped("request-on-a-named-spread", "workloadrebalancer", "patch", ws, wr, request),
    ]
    planner = await connect_as(server, credentials, "planner")
    actuator_nc = await connect_as(server, credentials, "actuator")
    reader = await connect_as(server, credentials, READER)
    kube = CountingClient(api)
    registry = CollectorRegistry()
    applier = Applier(kube, limiter=TokenBucket(100, 100), backoff_seconds=0.05,
                      authority=PlanAuthority(plan_grants(BUILTIN)), registry=registry,
                      clock=lambda: 0.0)  # nothing kept expires: the reads counted are exact
    consumer = PlanConsumer(actuator_nc, applier, cluster="c1", workers=1)
    try:
        await ensure_streams(planner.jetstream())
        async with running(consumer.run, stop_within=20):
            for plan in refused:
                await publish(planner, plan)
            await wait_until_async(lambda: _stored(reader, len(refused)),
                                   what="an outcome of every refused plan")
            assert set(kube.methods) <= {"GET"}, f"refused plans wrote: {kube.methods}"
            # What the checks read: nothing for another namespace or no governor. Each
            # governor the first time, then kept: the WorkloadSpread, the UnitedDeployment, the
            # rebalancer (3). A refusal reached on kept objects reads them again fresh: another
            # spread's pod, the pod and its ReplicaSet, then the spread and the ReplicaSet (4),
            # the second time the pod, the spread and the ReplicaSet (3); an ownerless pod and
            # the spread (2); the rebalancer's unnamed spread and the rebalancer (2). The pod,
            # its ReplicaSet and Deployment for the UnitedDeployment (3); the StatefulSet
            # another UnitedDeployment controls (1).
            assert len(kube.methods) == 18, "\n".join(kube.paths)
            for plan in granted:
                await publish(planner, plan)
            await wait_until_async(lambda: _stored(reader, len(refused) + len(granted)),
                                   what="an outcome of every plan")
        results = {o.plan_id: o for o in await outcomes(reader)}
    finally:
        for nc in (planner, actuator_nc, reader):
            await nc.close()
    for plan in refused:
        outcome = results[plan.id]
        assert outcome.result == "failed", plan.id
        assert outcome.error is not None
        assert (outcome.error.status, outcome.error.reason) == (403, "Forbidden"), outcome
    assert results["evict-other-namespace"].error is not None
    assert "the target is in 'other'" in results["evict-other-namespace"].error.message
    assert results["label-on-a-foreign-pod"].error is not None
    assert "not governed by the UnitedDeployment default/ud" in (
        results["label-on-a-foreign-pod"].error.message)
    assert {p.id: results[p.id].result for p in granted} == dict.fromkeys(
        (p.id for p in granted), "applied")
    forbidden = {rule: registry.get_sample_value("spreadbus_actuator_forbidden_plans_total",
                                                 {"rule": rule})
                 for rule in ("workloadspread", "uniteddeployment", "workloadrebalancer")}
    assert forbidden == {"workloadspread": 5, "uniteddeployment": 2, "workloadrebalancer": 1}
    assert results["delete-another-uds-subset"].error is not None
    assert results["delete-another-uds-subset"].error.message == (
        "someone-a is not controlled by a UnitedDeployment 'ud'")

    def metadata(path: str) -> dict[str, Any]:
        found: dict[str, Any] = get(api, path)["metadata"]
        return found

    pods = "/api/v1/namespaces/default/pods"
    spreads = f"/apis/{KRUISE}/namespaces/default/workloadspreads"
    assert COST_ANNOTATION not in (await asyncio.to_thread(
        metadata, f"{pods}/api-1-a")).get("annotations", {})
    assert (await asyncio.to_thread(metadata, f"{pods}/web-1-a"))["annotations"][
        COST_ANNOTATION] == "7"
    assert RESERVED not in (await asyncio.to_thread(metadata, f"{pods}/web-1-a")).get(
        "labels", {})
    assert (await asyncio.to_thread(metadata, f"{pods}/ud-a-0"))["labels"][RESERVED] == "true"
    assert REQUEST not in (await asyncio.to_thread(
        metadata, f"{spreads}/ws-api")).get("annotations", {})
    assert (await asyncio.to_thread(metadata, f"{spreads}/ws"))["annotations"][REQUEST] == "r1"
    for still in (f"{pods}/loner", "/api/v1/namespaces/other/pods/web-1-a",
                  "/apis/apps/v1/namespaces/default/statefulsets/someone-a"):
        assert not (await asyncio.to_thread(metadata, still)).get("deletionTimestamp"), still


async def _stored(nc: Client, count: int) -> bool:
    info = await nc.jetstream().stream_info(streams.OUTCOMES.name)
    return info.state.messages >= count
