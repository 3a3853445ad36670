"""The scope check's reads are kept briefly: a burst of plans reads its governor and each
ReplicaSet once, and nothing kept ever refuses a plan that fresh reads would allow.

Pure asyncio against a fake ``get`` that counts reads per path, with an injected clock.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from events.messages import ObjectRef, Plan
from services.actuator.scope_cache import (
    GOVERNOR_SECONDS,
    LINK_SECONDS,
    ScopeCache,
    ScopeLimits,
)
from services.actuator.scope_check import OutOfScope, Stale, Uncached, judge
from spreadbus.engine.feature_set import plan_grants
from spreadbus.features.registry import BUILTIN
from spreadbus.runtime.kube_client import NotFound, resource_path

NS = "shop"
WS_PATH = resource_path("apps.kruise.io", "v1alpha1", "workloadspreads", NS, "ws")
COST = next(g for g in plan_grants(BUILTIN)
            if (g.rule, g.verb, g.resource) == ("workloadspread", "patch", "pods"))


def rs_path(name: str) -> str:
    return resource_path("apps", "v1", "replicasets", NS, name)


def owned(kind: str, name: str, owner: tuple[str, str, str], uid: str = "") -> dict[str, Any]:
    api_version, owner_kind, owner_name = owner
    return {"apiVersion": "v1" if kind == "Pod" else "apps/v1", "kind": kind,
            "metadata": {"name": name, "namespace": NS, "uid": uid or f"uid-{name}",
                         "ownerReferences": [{"apiVersion": api_version, "kind": owner_kind,
                                              "name": owner_name, "uid": f"uid-{owner_name}",
                                              "controller": True}]},
            "spec": {"template": {"metadata": {"labels": {"app": owner_name}}}}}


def spread(target: str, uid: str = "uid-ws") -> dict[str, Any]:
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
            "metadata": {"name": "ws", "namespace": NS, "uid": uid},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                   "name": target}}}


def pod_of(rs: str, index: int) -> dict[str, Any]:
    return owned("Pod", f"{rs}-{index}", ("apps/v1", "ReplicaSet", rs))


def cost_plan(pod: dict[str, Any], governor_uid: str = "uid-ws") -> Plan:
    name = pod["metadata"]["name"]
    return Plan(id=f"cost-{name}", cluster="c1", verb="patch", rule="workloadspread",
                patch_type="merge",
                patch={"metadata": {"annotations": {"controller.kubernetes.io/pod-deletion-cost":
                                                    "100"}}},
                target=ObjectRef(group="", version="v1", resource="pods", namespace=NS,
                                 name=name, uid=pod["metadata"]["uid"]),
                governor=ObjectRef(group="apps.kruise.io", version="v1alpha1",
                                   resource="workloadspreads", namespace=NS, name="ws",
                                   uid=governor_uid))


class Cluster:
    """Objects by path; every read is counted, and yields so concurrent checks overlap."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {WS_PATH: spread("web")}
        for rs in ("web-a", "web-b", "web-c", "api-a"):
            deployment = rs.split("-")[0]
            self.objects[rs_path(rs)] = owned("ReplicaSet", rs,
                                              ("apps/v1", "Deployment", deployment))
        self.reads: dict[str, int] = {}

    async def get(self, path: str) -> dict[str, Any]:
        self.reads[path] = self.reads.get(path, 0) + 1
        await asyncio.sleep(0)
        if path not in self.objects:
            raise NotFound(404, "NotFound", f"{path} not found")
        return copy.deepcopy(self.objects[path])

    @property
    def total(self) -> int:
        return sum(self.reads.values())


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def cached(cluster: Cluster, clock: Clock, **limits: Any) -> ScopeCache:
    return ScopeCache(cluster.get, clock=clock, limits=ScopeLimits(**limits))


async def check_all(cache: ScopeCache, pods: list[dict[str, Any]], workers: int = 8) -> list[Any]:
    """As the actuator does: ``workers`` plans in flight at once."""
    gate = asyncio.Semaphore(workers)

    async def one(pod: dict[str, Any]) -> Any:
        async with gate:
            return await cache.judge(cost_plan(pod), COST, pod)

    return await asyncio.gather(*(one(pod) for pod in pods))


BURST = [pod_of(rs, i) for rs in ("web-a", "web-b", "web-c") for i in range(50)]


async def test_150_pod_plans_under_one_workloadspread_read_it_and_each_replicaset_once() -> None:
    cluster = Cluster()
    verdicts = await check_all(cached(cluster, Clock()), BURST)
    assert verdicts == [None] * 150
    assert cluster.reads == {WS_PATH: 1, rs_path("web-a"): 1, rs_path("web-b"): 1,
                             rs_path("web-c"): 1}

    uncached = Cluster()
    for pod in BURST:
        assert await judge(cost_plan(pod), COST, pod, Uncached(uncached.get)) is None
    assert uncached.total == 300, "without keeping: a governor and a ReplicaSet per plan"
    off = Cluster()
    keeping_off = cached(off, Clock(), governor_seconds=0, link_seconds=0)
    assert await check_all(keeping_off, BURST) == [None] * 150
    assert off.total == 300, "both times 0: every read is sent"


async def test_the_governor_expires_after_seconds_and_a_link_after_its_own_bound() -> None:
    cluster, clock = Cluster(), Clock()
    cache = cached(cluster, clock)
    pod = pod_of("web-a", 0)
    await check_all(cache, [pod])
    clock.now += GOVERNOR_SECONDS - 0.01
    await check_all(cache, [pod])
    assert cluster.reads == {WS_PATH: 1, rs_path("web-a"): 1}
    clock.now += 0.02
    await check_all(cache, [pod])
    assert cluster.reads == {WS_PATH: 2, rs_path("web-a"): 1}, "the governor is read again"
    clock.now += LINK_SECONDS
    await check_all(cache, [pod])
    assert cluster.reads == {WS_PATH: 3, rs_path("web-a"): 2}, "the ReplicaSet is read again"


async def test_a_link_named_with_another_uid_is_read_again() -> None:
    cluster = Cluster()
    cache = cached(cluster, Clock())
    await check_all(cache, [pod_of("web-a", 0)])
    replaced = owned("ReplicaSet", "web-a", ("apps/v1", "Deployment", "web"), uid="uid-web-a2")
    cluster.objects[rs_path("web-a")] = replaced
    pod = pod_of("web-a", 1)
    pod["metadata"]["ownerReferences"][0]["uid"] = "uid-web-a2"
    assert await check_all(cache, [pod]) == [None]
    assert cluster.reads[rs_path("web-a")] == 2
    assert cluster.reads[WS_PATH] == 1, "read again at once, not after a Stale verdict"
    assert await check_all(cache, [pod]) == [None]
    assert cluster.reads[rs_path("web-a")] == 2, "the new ReplicaSet is kept in turn"


async def test_a_link_replaced_since_the_owner_reference_was_written_is_still_stale() -> None:
    cluster = Cluster()
    cache = cached(cluster, Clock())
    await check_all(cache, [pod_of("web-a", 0)])
    cluster.objects[rs_path("web-a")]["metadata"]["uid"] = "uid-web-a2"
    orphan = pod_of("web-a", 1)
    orphan["metadata"]["ownerReferences"][0]["uid"] = "uid-web-a-gone"
    [verdict] = await check_all(cache, [orphan])
    assert isinstance(verdict, Stale)
    assert "'uid-web-a2'" in verdict.message


async def test_a_changed_target_ref_never_refuses_a_legitimate_plan() -> None:
    cluster = Cluster()
    cache = cached(cluster, Clock())
    await check_all(cache, [pod_of("web-a", 0)])
    cluster.objects[WS_PATH] = spread("api")
    assert await check_all(cache, [pod_of("api-a", 0)]) == [None]
    assert cluster.reads[WS_PATH] == 2, "refused on the kept governor, allowed on a fresh one"
    assert await check_all(cache, [pod_of("api-a", 1)]) == [None]
    assert cluster.reads[WS_PATH] == 2, "the fresh read replaced the kept one"


async def test_a_foreign_pod_is_refused_after_a_fresh_read() -> None:
    cluster = Cluster()
    cache = cached(cluster, Clock())
    await check_all(cache, [pod_of("web-a", 0)])
    [verdict] = await check_all(cache, [pod_of("api-a", 0)])
    assert isinstance(verdict, OutOfScope)
    assert "Deployment 'api'" in verdict.message
    assert cluster.reads == {WS_PATH: 2, rs_path("web-a"): 1, rs_path("api-a"): 2}


async def test_a_foreign_pod_is_let_through_only_while_the_old_target_ref_is_kept() -> None:
    cluster, clock = Cluster(), Clock()
    cache = cached(cluster, clock)
    await check_all(cache, [pod_of("web-a", 0)])
    cluster.objects[WS_PATH] = spread("api")
    assert await check_all(cache, [pod_of("web-a", 1)]) == [None], "within the window"
    clock.now += GOVERNOR_SECONDS
    [verdict] = await check_all(cache, [pod_of("web-a", 2)])
    assert isinstance(verdict, OutOfScope)


async def test_a_governor_created_again_is_not_stale_once_read_fresh() -> None:
    cluster = Cluster()
    cache = cached(cluster, Clock())
    await check_all(cache, [pod_of("web-a", 0)])
    cluster.objects[WS_PATH] = spread("web", uid="uid-ws2")
    pod = pod_of("web-a", 1)
    assert await cache.judge(cost_plan(pod, governor_uid="uid-ws2"), COST, pod) is None
    assert cluster.reads[WS_PATH] == 2


async def test_links_kept_are_bounded_least_recently_used_first_out() -> None:
    cluster = Cluster()
    cache = cached(cluster, Clock(), max_links=2)
    for rs in ("web-a", "web-b", "web-a", "web-c", "web-a", "web-b"):
        await check_all(cache, [pod_of(rs, 0)])
    assert len(cache.links) == 2
    assert cluster.reads[rs_path("web-a")] == 1
    assert cluster.reads[rs_path("web-b")] == 2, "pushed out by web-c"


async def test_a_kept_link_holds_only_what_the_chain_check_reads() -> None:
    cluster = Cluster()
    cache = cached(cluster, Clock())
    await check_all(cache, [pod_of("web-a", 0)])
    obj, reused = await cache.links.read(rs_path("web-a"), lambda _: True)
    assert reused
    assert "spec" not in obj
    assert obj["metadata"]["ownerReferences"][0]["name"] == "web"


async def test_a_failed_read_is_not_kept_and_reaches_every_check_that_shared_it() -> None:
    cluster = Cluster()
    del cluster.objects[WS_PATH]
    cache = cached(cluster, Clock())
    pods = [pod_of("web-a", i) for i in range(4)]
    results = await asyncio.gather(*(cache.judge(cost_plan(p), COST, p) for p in pods),
                                   return_exceptions=True)
    assert all(isinstance(r, NotFound) for r in results)
    assert cluster.reads[WS_PATH] == 1, "one read shared by the four"
    cluster.objects[WS_PATH] = spread("web")
    assert await check_all(cache, pods[:1]) == [None]
    assert cluster.reads[WS_PATH] == 2


@pytest.mark.parametrize("workers", [1, 8, 150])
async def test_the_burst_costs_the_same_reads_however_many_plans_are_in_flight(
    workers: int,
) -> None:
    cluster = Cluster()
    assert await check_all(cached(cluster, Clock()), BURST, workers) == [None] * 150
    assert cluster.total == 4
