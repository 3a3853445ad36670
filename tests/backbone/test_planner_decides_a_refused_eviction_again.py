"""The planner, against a real nats-server, decides an eviction a budget refused again on its own.

Nothing changes on the cluster after the refusal: the planner wakes when the refused plan's
backoff is over (it sleeps no longer than until then) and publishes the eviction again under a
new id. A restarted planner, replaying the log, finds the same plan there and sends nothing more.
"""

from __future__ import annotations

from collections.abc import Set
from typing import Any

from nats.aio.client import Client

from events import codec, subjects
from events.messages import (
    ApiError,
    ObjectRef,
    Observation,
    Outcome,
    Plan,
    ResourceRef,
    SyncMarker,
)
from services.planner.planner import Planner
from spreadbus.projection import snapshot
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.projection.planning import Desired
from spreadbus.projection.refusal_backoff import backoff_seconds
from spreadbus.runtime.stream_setup import ensure_streams
from tests.fixtures.polling import wait_until_async
from tests.fixtures.running import running

PODS = ResourceRef(group="", version="v1", resource="pods")
REFUSAL = ApiError(status=429, reason="TooManyRequests",
                   message="Cannot evict pod as it would violate the pod's disruption budget.")


class Evicter:
    name = "evicter"
    resources = (PODS,)

    def desired(self, view: KubeProjection, changed: Set[tuple[str, str]],
                now: float) -> list[Desired]:
        if view.get("c1", "", "pods", "default", "web-0") is None:
            return []
        target = ObjectRef(group="", version="v1", resource="pods", namespace="default",
                           name="web-0")
        return [Desired(verb="evict", target=target, reason="rebalance")]


def pod_entries() -> list[tuple[str, bytes]]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "web-0", "namespace": "default", "uid": "uid-web-0", "resourceVersion": "7"}}
    observed = Observation(cluster="c1", group="", version="v1", resource="pods",
                           event="ADDED", object=obj)
    marker = SyncMarker(cluster="c1", group="", version="v1", resource="pods", complete=True)
    return [(subjects.observation("c1", "", "pods", "default", "web-0"), codec.encode(observed)),
            (subjects.sync("c1", "", "pods"), codec.encode(marker))]


async def evictions_on_bus(nc: Client) -> list[Plan]:
    js = nc.jetstream()
    info = await js.stream_info("PLANS")
    out: list[Plan] = []
    for seq in range(1, info.state.last_seq + 1):
        plan = codec.decode((await js.get_msg("PLANS", seq)).data or b"")
        assert isinstance(plan, Plan)
        if plan.verb == "evict":
            out.append(plan)
    return out


async def test_a_refused_eviction_is_published_again_after_its_backoff_without_any_change(
    nats_client: Client,
) -> None:
    js = nats_client.jetstream()
    await ensure_streams(js)
    for subject, data in pod_entries():
        await js.publish(subject, data)
    planner = Planner(nats_client, cluster="c1", rules=[Evicter()])  # type: ignore[list-item]
    await planner.restore()
    planner.set_leader(True)
    found: list[Plan] = []

    async def evictions(count: int) -> bool:
        found[:] = await evictions_on_bus(nats_client)
        return len(found) >= count

    async with running(planner.run):
        await wait_until_async(lambda: evictions(1), what="the first eviction", interval=0.1)
        [first] = found
        t = first.target
        refused = Outcome(plan_id=first.id, cluster="c1", verb="evict", target=t,
                          result="failed", error=REFUSAL, ts=first.ts)
        await js.publish(subjects.outcome("c1", "evict", t.group, t.resource, t.namespace,
                                          t.name), codec.encode(refused))
        await wait_until_async(lambda: evictions(2), what="the eviction decided again",
                               timeout=30, interval=0.1)
        second = found[1]
        await wait_until_async(lambda: second.id in planner.decisions.in_flight(),
                               what="the retry folded back")
    assert second.id != first.id
    assert second.ts >= first.ts + backoff_seconds(first.id, 1), "it waited its backoff"
    assert second.precondition.uid == "uid-web-0"
    # A new planner replays the log into the same state, and finds nothing more to send.
    again = Planner(nats_client, cluster="c1", rules=[Evicter()])  # type: ignore[list-item]
    await again.restore()
    async with running(again.run):
        await wait_until_async(lambda: again.caught_up, what="the replay")
    assert snapshot.dump(again.projection.state, again.decisions.state, taken_at=0.0) == \
        snapshot.dump(planner.projection.state, planner.decisions.state, taken_at=0.0)
    again.set_leader(True)
    assert await again.step() == 0
    assert [p.id for p in await evictions_on_bus(nats_client)] == [first.id, second.id]
