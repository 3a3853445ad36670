"""The planner, against a real nats-server, folds the observations of every cluster and publishes
each plan on the subject of the cluster it targets.

One planner (its own cluster ``local``) hears a pod named alike in ``east`` and ``west``; the rule
runs once per cluster (:class:`~spreadbus.projection.cluster_rules.EveryCluster`) and each
cluster's plan lands on ``plan.<cluster>.…``, where that cluster's actuator takes it.
"""

from __future__ import annotations

from collections.abc import Set
from typing import Any

from nats.aio.client import Client

from events import codec, subjects
from events.messages import ObjectRef, Observation, Plan, ResourceRef, SyncMarker
from services.planner.planner import Planner
from spreadbus.projection.cluster_rules import EveryCluster
from spreadbus.projection.kube_state import KubeProjection, object_key, resource_key
from spreadbus.projection.planning import Desired
from spreadbus.runtime.stream_setup import ensure_streams
from tests.fixtures.polling import wait_until_async
from tests.fixtures.running import running

PODS = ResourceRef(group="", version="v1", resource="pods")


class Labeller:
    """Labels the pod ``web-0`` of its cluster with the cluster's name."""

    name: str = "labeller"
    resources: tuple[ResourceRef, ...] = (PODS,)

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster

    def desired(self, view: KubeProjection, changed: Set[tuple[str, str]],
                now: float) -> list[Desired]:
        key = (resource_key(self.cluster, "", "pods"), object_key("default", "web-0"))
        if key not in changed or view.stored(*key) is None:
            return []
        target = ObjectRef(group="", version="v1", resource="pods", namespace="default",
                           name="web-0")
        return [Desired(verb="patch", target=target,
                        patch={"metadata": {"labels": {"seen-in": self.cluster}}})]


def entries(cluster: str) -> list[tuple[str, bytes]]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "web-0", "namespace": "default", "uid": f"uid-{cluster}", "resourceVersion": "7"}}
    observed = Observation(cluster=cluster, group="", version="v1", resource="pods",
                           event="ADDED", object=obj)
    marker = SyncMarker(cluster=cluster, group="", version="v1", resource="pods", complete=True)
    return [(subjects.observation(cluster, "", "pods", "default", "web-0"),
             codec.encode(observed)),
            (subjects.sync(cluster, "", "pods"), codec.encode(marker))]


async def test_each_clusters_plan_is_published_on_that_clusters_subject(
    nats_client: Client,
) -> None:
    js = nats_client.jetstream()
    await ensure_streams(js)
    for cluster in ("local", "east", "west"):
        # The planner's own cluster is listed (empty): its rule decides from the start.
        for subject, data in entries(cluster)[1:] if cluster == "local" else entries(cluster):
            await js.publish(subject, data)
    planner = Planner(nats_client, cluster="local",
                      rules=[EveryCluster(Labeller, home="local")])
    await planner.restore()
    planner.set_leader(True)
    found: dict[str, tuple[str, Plan]] = {}

    async def both() -> bool:
        info = await js.stream_info("PLANS")
        for seq in range(1, info.state.last_seq + 1):
            message = await js.get_msg("PLANS", seq)
            plan = codec.decode(message.data or b"")
            assert isinstance(plan, Plan)
            found[plan.cluster] = (str(message.subject), plan)
        return set(found) >= {"east", "west"}

    async with running(planner.run):
        await wait_until_async(both, what="a plan for each cluster", interval=0.1)
    assert set(found) == {"east", "west"}
    for cluster, (subject, plan) in found.items():
        assert subject == subjects.plan(cluster, "patch", "", "pods", "default", "web-0")
        assert plan.patch == {"metadata": {"labels": {"seen-in": cluster}}}
        assert plan.precondition.uid == f"uid-{cluster}"
