"""Against kubesim over HTTP: a burst of WorkloadSpread deletion-cost plans on a Deployment's
pods costs a read of each pod, one of the WorkloadSpread and one of each ReplicaSet, then the
writes; and a plan decided on a newer WorkloadSpread than the one kept is applied once it is
read fresh.
"""

from __future__ import annotations

import asyncio
from typing import Any

import yaml
from kubernetes import client
from prometheus_client import CollectorRegistry

from events.messages import Plan
from services.actuator.application import Applier, Result
from spreadbus.engine.feature_set import plan_grants
from spreadbus.engine.plan_grants import PlanAuthority
from spreadbus.features.registry import BUILTIN
from spreadbus.runtime.rate_limit import TokenBucket
from tests.backbone.test_actuator_applies_only_granted_plans import (
    COST_ANNOTATION,
    DEPLOY,
    KRUISE,
    Cluster,
    as_ref,
    owner,
    pod_ref,
    post,
    scoped,
)
from tests.backbone.test_actuator_writes_without_reading import CountingClient

PODS_PER_REPLICASET = 50
REPLICASETS = ("web-a", "web-b", "web-c")


async def install_spread_crd(api: client.ApiClient) -> None:
    crd = yaml.safe_load((DEPLOY / "crds" / "apps.kruise.io_workloadspreads.yaml").read_text())
    crd["spec"].pop("conversion", None)  # one served version is all this test reads
    await asyncio.to_thread(post, api, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                            crd)


def cost(plan_id: str, pod: dict[str, Any], ws: dict[str, Any], generation: int = 1) -> Plan:
    return scoped(plan_id, "workloadspread", "patch", pod_ref(pod),
                  as_ref(ws, "apps.kruise.io", "v1alpha1", "workloadspreads"),
                  {"metadata": {"annotations": {COST_ANNOTATION: "100"}}}, generation=generation)


async def apply_all(applier: Applier, plans: list[Plan], workers: int = 8) -> list[Result]:
    gate = asyncio.Semaphore(workers)

    async def one(plan: Plan) -> Result:
        async with gate:
            return await applier.apply(plan)

    return await asyncio.gather(*(one(p) for p in plans))


def requests(registry: CollectorRegistry, method: str) -> float:
    value = registry.get_sample_value("spreadbus_actuator_api_requests_total",
                                      {"method": method})
    return value or 0.0


async def test_150_cost_plans_read_the_workloadspread_once_and_each_replicaset_once(
    kube_api_client: client.ApiClient,
) -> None:
    api = kube_api_client
    await install_spread_crd(api)
    made = Cluster(api)

    def build() -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
        web = made.deployment("default", "web")
        pods = []
        for name in REPLICASETS:
            rs = owner("apps/v1", "ReplicaSet", made.replicaset("default", name, web))
            pods += [made.pod("default", f"{name}-{i}", rs) for i in range(PODS_PER_REPLICASET)]
        api_rs = made.replicaset("default", "api-a", made.deployment("default", "api"))
        stray = made.pod("default", "api-a-0", owner("apps/v1", "ReplicaSet", api_rs))
        return made.spread("ws", "web"), pods, stray

    ws, pods, stray = await asyncio.to_thread(build)
    kube = CountingClient(api)
    registry = CollectorRegistry()
    now = [0.0]
    applier = Applier(kube, limiter=TokenBucket(1000, 1000), backoff_seconds=0.05,
                      authority=PlanAuthority(plan_grants(BUILTIN)), registry=registry,
                      clock=lambda: now[0])

    results = await apply_all(applier, [cost(f"cost-{i}", p, ws) for i, p in enumerate(pods)])
    assert [r.result for r in results] == ["applied"] * len(pods)
    reads = len(pods) + 1 + len(REPLICASETS)
    assert kube.methods.count("GET") == reads, "each pod, the WorkloadSpread, each ReplicaSet"
    assert kube.methods.count("PATCH") == len(pods)
    assert requests(registry, "GET") == reads
    assert requests(registry, "PATCH") == len(pods)

    await asyncio.to_thread(lambda: kube.request(
        "PATCH", f"/apis/{KRUISE}/namespaces/default/workloadspreads/ws",
        body={"spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                     "name": "api"}}},
        content_type="application/merge-patch+json"))
    kube.methods.clear()
    [result] = await apply_all(applier, [cost("cost-stray", stray, ws, generation=2)])
    assert result.result == "applied", result.error
    assert kube.methods == ["GET", "GET", "GET", "PATCH"], (
        "the WorkloadSpread fresh (the kept one is older than the plan's generation), the pod "
        "and its ReplicaSet, then the write")
