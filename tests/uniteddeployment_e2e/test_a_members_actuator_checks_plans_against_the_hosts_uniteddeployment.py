"""A member's actuator applies a plan for a subset workload of a UnitedDeployment in the host only
as the host's API server holds that UnitedDeployment.

Two kubesims over HTTPS: the host holds the UnitedDeployments (CRD installed), the member
``member1`` the workloads. The member's :class:`Applier` carries every built-in grant and reads
governors in the host through its own client of the host's API server. The honest plan (the
workload the reconcile renders for subset ``a``, whose ``targetCluster`` is ``member1``) is
applied; forged ones are answered Forbidden and write nothing: a subset the UD keeps in another
cluster, a UD that keeps no subset in any other cluster, a governor in a cluster the actuator does
not read, a member workload claimed without naming the host, more replicas than the UD asks,
deleting a workload the UD still wants, and reservation's label on a pod of a subset the UD keeps
elsewhere (on a pod of its subset here it is applied). Once the UD is gone, its workload there
is an orphan, and its delete is applied.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from events.messages import ObjectRef, Plan, Precondition, Verb
from kubesim import KubeSimThread
from services.actuator.application import Applier, Result
from spreadbus.engine.feature_set import plan_grants
from spreadbus.engine.plan_grants import PlanAuthority
from spreadbus.features.registry import BUILTIN
from spreadbus.features.uniteddeployment.core.reconcile import reconcile
from spreadbus.runtime.kube_client import KubeClient
from spreadbus.runtime.rate_limit import TokenBucket
from tests.uniteddeployment.world import NOW

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
KARMADA = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster"}
UDS = "/apis/apps.kruise.io/v1alpha1/namespaces/default/uniteddeployments"
STS = "/apis/apps/v1/namespaces/default/statefulsets"
PODS = "/api/v1/namespaces/default/pods"


def call(api: client.ApiClient, method: str, path: str, body: Any = None) -> dict[str, Any]:
    raw = KubeClient(api).request(method, path, body=body,
                                  content_type="application/json" if body else None)
    answer: dict[str, Any] = json.loads(raw) if raw else {}
    return answer


def united(name: str, targets: list[str | None]) -> dict[str, Any]:
    labels = {"app": name}
    subsets = []
    for subset, target in zip("abc", targets, strict=False):
        entry: dict[str, Any] = {"name": subset}
        if target is not None:
            entry["targetCluster"] = {"name": target}
        subsets.append(entry)
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 4, "selector": {"matchLabels": labels},
                     "template": {"statefulSetTemplate": {
                         "metadata": {"labels": labels},
                         "spec": {"selector": {"matchLabels": labels}, "serviceName": name,
                                  "template": {"metadata": {"labels": labels},
                                               "spec": {"containers": [
                                                   {"name": "c", "image": "web:1"}]}}}}},
                     "topology": {"clusterRegistry": {"clusterType": KARMADA},
                                  "subsets": subsets}}}


def ref_of(ud: dict[str, Any]) -> ObjectRef:
    meta = ud["metadata"]
    return ObjectRef(group="apps.kruise.io", version="v1alpha1", resource="uniteddeployments",
                     namespace="default", name=meta["name"], uid=meta["uid"])


def rendered(ud: dict[str, Any], subset: str) -> dict[str, Any]:
    """The workload the reconcile wants for ``subset``, as the host's planner renders it."""
    answer = reconcile(ud, workloads=[], pods=[], revisions=[], now=NOW, home="host")
    return copy.deepcopy(answer.subsets[subset].workload)


def plan(plan_id: str, verb: Verb, name: str, governor: dict[str, Any], *,
         obj: dict[str, Any] | None = None, patch: Any = None, uid: str = "",
         resource_version: str = "", governor_cluster: str = "host") -> Plan:
    return Plan(id=plan_id, cluster="member1", verb=verb, rule="uniteddeployment",
                target=ObjectRef(group="apps", version="v1", resource="statefulsets",
                                 namespace="default", name=name, uid=uid),
                object=obj, patch=patch, governor=ref_of(governor),
                governor_generation=governor["metadata"]["generation"],
                governor_cluster=governor_cluster,
                precondition=Precondition(uid=uid, resource_version=resource_version))


def forbidden(result: Result) -> str:
    assert result.result == "failed"
    assert result.error is not None
    assert (result.error.status, result.error.reason) == (403, "Forbidden")
    return result.error.message


async def test_member_plans_follow_the_hosts_uniteddeployment(
        kubesim_factory: Callable[..., KubeSimThread]) -> None:
    host_sim, member_sim = kubesim_factory(), kubesim_factory()
    host = client.ApiClient(host_sim.kube_configuration())
    member = client.ApiClient(member_sim.kube_configuration())
    try:
        crd = yaml.safe_load((DEPLOY / "crds" / "apps.kruise.io_uniteddeployments.yaml")
                             .read_text())
        crd["spec"].pop("conversion", None)
        await asyncio.to_thread(call, host, "POST",
                                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        ud = await asyncio.to_thread(call, host, "POST", UDS,
                                     united("ud", ["member1", "member2"]))
        local = await asyncio.to_thread(call, host, "POST", UDS, united("local", [None, None]))
        grants = PlanAuthority(plan_grants(BUILTIN))
        applier = Applier(KubeClient(member), limiter=TokenBucket(100, 100), authority=grants,
                          host=KubeClient(host), host_cluster="host")

        a = rendered(ud, "a")
        honest = await applier.apply(plan("create-a", "create", "ud-a-1", ud, obj=a))
        assert honest.result == "applied", honest
        made = await asyncio.to_thread(call, member, "GET", f"{STS}/ud-a-1")
        assert made["metadata"]["annotations"][
            "multicluster.spreadbus.io/united-deployment"] == json.dumps(
            {"cluster": "host", "name": "ud", "namespace": "default",
             "uid": ud["metadata"]["uid"]}, separators=(",", ":"), sort_keys=True)
        again = await applier.apply(plan("create-a-again", "create", "ud-a-1", ud, obj=a))
        assert again.result == "skipped"

        b = rendered(ud, "b")  # subset b lives in member2
        why = forbidden(await applier.apply(plan("create-b", "create", "ud-b-1", ud, obj=b)))
        assert "has no subset 'b' whose targetCluster is 'member1'" in why
        claimed = rendered(ud, "a")
        claimed["metadata"]["annotations"]["multicluster.spreadbus.io/united-deployment"] = \
            json.dumps({"cluster": "host", "name": "local", "namespace": "default",
                        "uid": local["metadata"]["uid"]})
        claimed["metadata"]["labels"]["multicluster.spreadbus.io/united-deployment-uid"] = \
            local["metadata"]["uid"]
        why = forbidden(await applier.apply(
            plan("create-local", "create", "local-a-1", local, obj=claimed)))
        assert "has no subset 'a' whose targetCluster is 'member1'" in why
        why = forbidden(await applier.apply(plan("create-elsewhere", "create", "ud-a-2", ud,
                                                 obj=a, governor_cluster="other")))
        assert "cluster 'other'" in why
        why = forbidden(await applier.apply(plan("create-own", "create", "ud-a-3", ud, obj=a,
                                                 governor_cluster="")))
        assert "controlled by a UnitedDeployment" in why
        no_host = Applier(KubeClient(member), limiter=TokenBucket(100, 100), authority=grants)
        forbidden(await no_host.apply(plan("create-no-host", "create", "ud-a-4", ud, obj=a)))

        meta = made["metadata"]
        why = forbidden(await applier.apply(plan(
            "scale-a", "patch", "ud-a-1", ud, patch={"spec": {"replicas": 50}},
            uid=meta["uid"], resource_version=meta["resourceVersion"])))
        assert "spec.replicas: 50 is more than the UnitedDeployment asks" in why
        why = forbidden(await applier.apply(plan("delete-a", "delete", "ud-a-1", ud,
                                                 uid=meta["uid"])))
        assert "still has subset 'a' in cluster 'member1'" in why
        listed = await asyncio.to_thread(call, member, "GET", STS)
        assert [i["metadata"]["name"] for i in listed["items"]] == ["ud-a-1"]
        assert listed["items"][0]["spec"]["replicas"] == a["spec"]["replicas"]

        # Reservation's label on a pod of the UD's subset here; not on one of another subset.
        reserve = {"metadata": {"labels": {"apps.kruise.io/united-deployment-reserved-pod":
                                           "true"}}}
        pods = {}
        for subset in ("a", "b"):
            pods[subset] = await asyncio.to_thread(call, member, "POST", PODS, {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"ud-{subset}-1-0", "labels": {
                    "app": "ud", "apps.kruise.io/subset-name": subset}},
                "spec": {"containers": [{"name": "c", "image": "web:1"}]}})

        def label(subset: str) -> Plan:
            return Plan(id=f"label-{subset}", cluster="member1", verb="patch",
                        rule="uniteddeployment", patch=reserve,
                        target=ObjectRef(group="", version="v1", resource="pods",
                                         namespace="default", name=f"ud-{subset}-1-0",
                                         uid=pods[subset]["metadata"]["uid"]),
                        governor=ref_of(ud), governor_generation=ud["metadata"]["generation"],
                        governor_cluster="host",
                        precondition=Precondition(uid=pods[subset]["metadata"]["uid"]))

        assert (await applier.apply(label("a"))).result == "applied"
        why = forbidden(await applier.apply(label("b")))
        assert "has no subset 'b' whose targetCluster is 'member1'" in why
        b_pod = await asyncio.to_thread(call, member, "GET", f"{PODS}/ud-b-1-0")
        assert "apps.kruise.io/united-deployment-reserved-pod" not in b_pod["metadata"]["labels"]

        await asyncio.to_thread(call, host, "DELETE", f"{UDS}/ud")
        orphan = await applier.apply(plan("delete-orphan", "delete", "ud-a-1", ud,
                                          uid=meta["uid"]))
        assert orphan.result == "applied", orphan
        listed = await asyncio.to_thread(call, member, "GET", STS)
        assert listed["items"] == []
    finally:
        host.close()
        member.close()
