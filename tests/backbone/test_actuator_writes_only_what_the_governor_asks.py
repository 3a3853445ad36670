"""A planner's credential cannot create what no real governor asks for.

On kubesim over HTTP and a real nats-server with the services' credentials, plans published as
the ``planner`` user: a privileged, hostNetwork workload in ``kube-system`` under a
UnitedDeployment that does not exist, or under ``sample-ud``'s real uid named in
``kube-system``, is dropped unsent (the governor is not found there); the same workload in
``default`` under the real ``sample-ud`` (uid, generation and owner reference all real) is
refused, since its template is not the UD's. Nothing of them is created. The subset workload the
UD does ask for, decided on the UD as read, is created.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from prometheus_client import CollectorRegistry

from events.messages import ObjectRef, Plan
from services.actuator.application import Applier
from services.actuator.consumer import PlanConsumer
from spreadbus.engine.feature_set import plan_grants
from spreadbus.engine.plan_grants import PlanAuthority
from spreadbus.features.registry import BUILTIN
from spreadbus.features.uniteddeployment.core.reconcile import reconcile
from spreadbus.runtime.bus_permissions import READER
from spreadbus.runtime.kube_client import KubeClient, NotFound
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.rate_limit import TokenBucket
from spreadbus.runtime.stream_setup import ensure_streams
from tests.backbone.test_actuator_applies_only_granted_plans import DEPLOY, KRUISE, _stored, post
from tests.backbone.test_actuator_outcomes import outcomes, publish
from tests.fixtures.polling import wait_until_async
from tests.fixtures.running import running
from tests.fixtures.secured_bus import connect_as

EXAMPLE = DEPLOY.parent / "examples" / "uniteddeployment" / "statefulset-three-zones.yaml"
UDS = f"/apis/{KRUISE}/namespaces/default/uniteddeployments"


def exists(api: client.ApiClient, path: str) -> bool:
    try:
        KubeClient(api).request("GET", path)
    except NotFound:
        return False
    return True


def privileged(kind: str, namespace: str, owner_name: str, owner_uid: str) -> dict[str, Any]:
    labels = {"app": "sample", "apps.kruise.io/subset-name": "subset-a"}
    return {
        "apiVersion": "apps/v1", "kind": kind,
        "metadata": {"namespace": namespace, "labels": labels, "ownerReferences": [{
            "apiVersion": KRUISE, "kind": "UnitedDeployment", "name": owner_name,
            "uid": owner_uid, "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {
                     "hostNetwork": True, "hostPID": True,
                     "containers": [{"name": "x", "image": "evil:1",
                                     "securityContext": {"privileged": True}}]}}},
    }


def create(plan_id: str, obj: dict[str, Any], name: str, governor: ObjectRef,
           generation: int) -> Plan:
    resource = f"{obj['kind'].lower()}s"
    group = obj["apiVersion"].rpartition("/")[0]
    target = ObjectRef(group=group, version="v1", resource=resource,
                       namespace=obj["metadata"]["namespace"], name=name)
    return Plan(id=plan_id, cluster="c1", verb="create", rule="uniteddeployment",
                target=target, object=obj, governor=governor, governor_generation=generation)


async def test_a_planner_credential_creates_only_what_the_real_ud_asks_for(
    secured_bus: tuple[NatsServer, Path], kube_api_client: client.ApiClient,
) -> None:
    server, credentials = secured_bus
    api = kube_api_client
    crd = yaml.safe_load((DEPLOY / "crds" / "apps.kruise.io_uniteddeployments.yaml").read_text())
    crd["spec"].pop("conversion", None)  # one served version is all this test reads
    await asyncio.to_thread(post, api, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                            crd)
    ud = await asyncio.to_thread(post, api, UDS, yaml.safe_load(EXAMPLE.read_text()))
    uid, generation = ud["metadata"]["uid"], ud["metadata"]["generation"]

    def governor(namespace: str, name: str, governor_uid: str) -> ObjectRef:
        return ObjectRef(group="apps.kruise.io", version="v1alpha1",
                         resource="uniteddeployments", namespace=namespace, name=name,
                         uid=governor_uid)

    real = governor("default", "sample-ud", uid)
    dropped = [
        create("missing-governor", privileged("Deployment", "kube-system", "ghost-ud", "ghost"),
               "evil-missing", governor("kube-system", "ghost-ud", "ghost"), 1),
        create("borrowed-uid-in-kube-system",
               privileged("StatefulSet", "kube-system", "sample-ud", uid), "evil-borrowed",
               governor("kube-system", "sample-ud", uid), generation),
    ]
    refused = [
        create("borrowed-governor", privileged("StatefulSet", "default", "sample-ud", uid),
               "evil-template", real, generation),
    ]
    created_at = datetime.fromisoformat(ud["metadata"]["creationTimestamp"])
    asked = reconcile(ud, workloads=[], pods=[], revisions=[], now=created_at)
    wanted = create("subset-a", asked.subsets["subset-a"].workload, "sample-ud-subset-a-1",
                    real, generation)

    planner = await connect_as(server, credentials, "planner")
    actuator_nc = await connect_as(server, credentials, "actuator")
    reader = await connect_as(server, credentials, READER)
    registry = CollectorRegistry()
    applier = Applier(KubeClient(api), limiter=TokenBucket(100, 100), backoff_seconds=0.05,
                      authority=PlanAuthority(plan_grants(BUILTIN)), registry=registry)
    plans = [*dropped, *refused, wanted]
    try:
        await ensure_streams(planner.jetstream())
        async with running(PlanConsumer(actuator_nc, applier, cluster="c1", workers=1).run,
                           stop_within=20):
            for plan in plans:
                await publish(planner, plan)
            await wait_until_async(lambda: _stored(reader, len(plans)),
                                   what="an outcome of every plan")
        results = {o.plan_id: o for o in await outcomes(reader)}
    finally:
        for nc in (planner, actuator_nc, reader):
            await nc.close()

    for plan in dropped:
        error = results[plan.id].error
        assert results[plan.id].result == "failed", plan.id
        assert error is not None
        assert (error.status, error.reason) == (404, "NotFound"), error
        assert "no longer exists" in error.message
    error = results["borrowed-governor"].error
    assert results["borrowed-governor"].result == "failed"
    assert error is not None
    assert (error.status, error.reason) == (403, "Forbidden")
    assert "spec.template is not what the UnitedDeployment's template makes" in error.message
    assert registry.get_sample_value("spreadbus_actuator_forbidden_plans_total",
                                     {"rule": "uniteddeployment"}) == 1
    assert results["subset-a"].result == "applied", results["subset-a"].error
    for path in ("/apis/apps/v1/namespaces/kube-system/deployments/evil-missing",
                 "/apis/apps/v1/namespaces/kube-system/statefulsets/evil-borrowed",
                 "/apis/apps/v1/namespaces/default/statefulsets/evil-template"):
        assert not await asyncio.to_thread(exists, api, path), path
    assert await asyncio.to_thread(
        exists, api, "/apis/apps/v1/namespaces/default/statefulsets/sample-ud-subset-a-1")

