"""The planner engine on a real nats-server: timed wake-ups without events, and the webhook's
reservation bucket folded into the WorkloadSpread status. Time is injected."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Set
from datetime import UTC, datetime
from typing import Any

from nats.aio.client import Client

from events import codec, subjects
from events.messages import ObjectRef, Observation, Plan, ResourceRef, SyncMarker
from services.planner.planner import Planner
from spreadbus.engine.feature import PlannerContext
from spreadbus.features.workloadspread.core.reservation_contract import BUCKET
from spreadbus.features.workloadspread.planner import planner_side
from spreadbus.features.workloadspread.settings import WorkloadSpreadSettings
from spreadbus.projection.kube_state import KubeProjection, resource_key
from spreadbus.projection.planning import Desired
from spreadbus.runtime.stream_setup import ensure_streams
from tests.fixtures.manual_clock import ManualClock
from tests.fixtures.running import running

T0 = 1_800_000_000.0
DEPLOYMENTS = ResourceRef(group="apps", version="v1", resource="deployments")


class WantsAnnotationLater:
    """A timed rule: the Deployment ``d`` gets an annotation once ``at`` has come."""

    name = "later"
    resources: tuple[ResourceRef, ...] = (DEPLOYMENTS,)

    def __init__(self, at: float) -> None:
        self.at = at
        self.rkey = resource_key("c1", "apps", "deployments")
        self.pending = True
        self.asked: list[float] = []
        """The planner's ``now`` at each decision round that asked what is due."""

    def due(self, now: float) -> set[tuple[str, str]]:
        self.asked.append(now)
        if self.pending and now >= self.at:
            self.pending = False
            return {(self.rkey, "default.d")}
        return set()

    def next_wake(self) -> float | None:
        return self.at if self.pending else None

    def desired(self, view: KubeProjection, changed: Set[tuple[str, str]],
                now: float) -> list[Desired]:
        if now < self.at or (self.rkey, "default.d") not in changed:
            return []
        target = ObjectRef(group="apps", version="v1", resource="deployments",
                           namespace="default", name="d", uid="uid-d")
        return [Desired(verb="patch", target=target,
                        patch={"metadata": {"annotations": {"late": "yes"}}})]


def observation(resource: ResourceRef, obj: dict[str, Any]) -> tuple[str, bytes]:
    meta = obj["metadata"]
    message = Observation(cluster="c1", group=resource.group, version=resource.version,
                          resource=resource.resource, event="ADDED", object=obj)
    return (subjects.observation("c1", resource.group, resource.resource,
                                 meta.get("namespace", ""), meta["name"]), codec.encode(message))


def synced(resource: ResourceRef) -> tuple[str, bytes]:
    marker = SyncMarker(cluster="c1", group=resource.group, version=resource.version,
                        resource=resource.resource, complete=True)
    return subjects.sync("c1", resource.group, resource.resource), codec.encode(marker)


async def publish(nc: Client, entries: list[tuple[str, bytes]]) -> None:
    js = nc.jetstream()
    for subject, data in entries:
        await js.publish_async(subject, data)
    await js.publish_async_completed()


async def plans_on_bus(nc: Client) -> list[Plan]:
    js = nc.jetstream()
    info = await js.stream_info("PLANS")
    out: list[Plan] = []
    for seq in range(1, info.state.last_seq + 1):
        decoded = codec.decode((await js.get_msg("PLANS", seq)).data or b"")
        assert isinstance(decoded, Plan)
        out.append(decoded)
    return out


async def eventually(check: Callable[[], Any], timeout: float = 20.0) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError("condition not met before the deadline")
        await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def leading(planner: Planner) -> AsyncIterator[None]:
    """The planner restored and running as the leader inside the block."""
    await planner.restore()
    planner.set_leader(True)
    async with running(planner.run):
        yield


async def test_a_timed_rule_is_woken_at_its_time_without_any_new_event(
    nats_client: Client,
) -> None:
    await ensure_streams(nats_client.jetstream())
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "d", "namespace": "default", "uid": "uid-d",
                               "resourceVersion": "1", "generation": 1}}
    await publish(nats_client, [observation(DEPLOYMENTS, deployment), synced(DEPLOYMENTS)])
    clock = ManualClock(T0)
    rule = WantsAnnotationLater(T0 + 300)
    planner = Planner(nats_client, cluster="c1", rules=[rule], clock=clock)
    async with leading(planner):
        await eventually(lambda: planner.caught_up)
        assert planner.seconds_to_next_wake() == 300, "the wake-up is scheduled at the rule's time"
        clock.now = T0 + 299.5  # just before it; no event arrives
        # The planner runs a round on its own at that time, finds nothing due, and keeps its
        # wake-up half a second ahead; a planner that only acts on events never asks.
        await eventually(lambda: T0 + 299.5 in rule.asked)
        assert rule.pending, "not due before its time"
        assert planner.seconds_to_next_wake() == 0.5
        assert await plans_on_bus(nats_client) == []
        clock.now = T0 + 301  # time passes; still no event
        plans = await eventually(lambda: plans_on_bus(nats_client))
    assert [p.patch for p in plans] == [{"metadata": {"annotations": {"late": "yes"}}}]
    assert not rule.pending


async def test_reservations_in_the_webhook_bucket_reach_the_workloadspread_status(
    nats_client: Client,
) -> None:
    js = nats_client.jetstream()
    await ensure_streams(js)
    kv = await js.key_value(BUCKET)  # the setup step created it
    spreads = ResourceRef(group="apps.kruise.io", version="v1alpha1", resource="workloadspreads")
    pods = ResourceRef(group="", version="v1", resource="pods")
    nodes = ResourceRef(group="", version="v1", resource="nodes")
    apps = [ResourceRef(group="apps", version="v1", resource=r)
            for r in ("deployments", "replicasets", "statefulsets")]
    spread = {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
              "metadata": {"name": "ws", "namespace": "default", "uid": "ws-uid",
                           "generation": 1, "resourceVersion": "3"},
              "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                     "name": "web"},
                       "subsets": [{"name": "a", "maxReplicas": 3}, {"name": "b"}]}}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "web", "namespace": "default", "uid": "d-uid",
                               "generation": 1, "resourceVersion": "1"},
                  "spec": {"replicas": 1}}
    await publish(nats_client, [observation(spreads, spread), observation(apps[0], deployment),
                                *(synced(r) for r in (spreads, pods, nodes, *apps))])
    at = datetime.fromtimestamp(T0, UTC).isoformat()
    reservation = {"workloadspread": "default/ws", "version": "", "subset": "a",
                   "pod": "web-1", "kind": "creating", "at": at}
    await kv.put("c1.default.ws", json.dumps({"creating": {"web-1": reservation}}).encode())
    clock = ManualClock(T0 + 1)
    side = await planner_side(PlannerContext(cluster="c1", settings=WorkloadSpreadSettings()))
    planner = Planner(nats_client, cluster="c1", rules=side.rules, streams=side.streams,
                      clock=clock)

    async def status_plans() -> list[Plan]:
        return [p for p in await plans_on_bus(nats_client) if p.verb == "patch_status"]

    async with leading(planner):
        (status_plan,) = await eventually(status_plans)
    versioned = status_plan.patch["status"]["versionedSubsetStatuses"]
    (subsets,) = versioned.values()
    a = {s["name"]: s for s in subsets}["a"]
    assert list(a["creatingPods"]) == ["web-1"]
    assert a["missingReplicas"] == 2


class AnnotatesPods:
    """A rule reading pods, which the log below lists only later."""

    name = "pods"
    resources: tuple[ResourceRef, ...] = (ResourceRef(group="", version="v1", resource="pods"),)

    def desired(self, view: KubeProjection, changed: Set[tuple[str, str]],
                now: float) -> list[Desired]:
        rkey = resource_key("c1", "", "pods")
        return [
            Desired(verb="patch",
                    target=ObjectRef(group="", version="v1", resource="pods",
                                     namespace="default", name=okey.split(".", 1)[1],
                                     uid=f"uid-{okey}"),
                    patch={"metadata": {"annotations": {"seen": "yes"}}})
            for key, okey in sorted(changed) if key == rkey
        ]


async def test_a_rule_whose_resource_is_not_synced_waits_without_holding_back_the_others(
    nats_client: Client,
) -> None:
    await ensure_streams(nats_client.jetstream())
    pods = ResourceRef(group="", version="v1", resource="pods")
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "d", "namespace": "default", "uid": "uid-d",
                               "resourceVersion": "1", "generation": 1}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "default", "uid": "uid-p",
                        "resourceVersion": "2"}}
    await publish(nats_client, [observation(DEPLOYMENTS, deployment), synced(DEPLOYMENTS),
                                observation(pods, pod)])
    clock = ManualClock(T0)
    planner = Planner(nats_client, cluster="c1",
                      rules=[WantsAnnotationLater(T0), AnnotatesPods()], clock=clock)
    async with leading(planner):
        first = await eventually(lambda: plans_on_bus(nats_client))
        assert [p.target.name for p in first] == ["d"], "the deployment rule did not wait"
        await publish(nats_client, [synced(pods)])  # no new pod event, only the sync marker
        plans = await eventually(
            lambda: _names_when(plans_on_bus(nats_client), {"d", "p"}))
    assert sorted(p.target.name for p in plans) == ["d", "p"]


async def _names_when(plans: Any, names: set[str]) -> list[Plan] | None:
    found: list[Plan] = await plans
    return found if {p.target.name for p in found} == names else None
