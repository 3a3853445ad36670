"""Each admission is announced on the bus with its evidence: the reason, every subset as the
decision counted it, the workload, the replica and the ledger revision; a pod that fits
nowhere is announced too, without a subset."""

from __future__ import annotations

from nats.aio.client import Client
from nats.aio.msg import Msg

from events.codec import decode
from events.messages import Admission
from tests.fixtures.polling import wait_until_async
from tests.webhook.admission_reviews import request
from tests.workloadspread.webhook.cluster_state import (
    deployment,
    new_pod,
    replicaset,
    spread,
    synced_feed,
    zone_subset,
)
from tests.workloadspread.webhook.spread_admission import spread_admission


async def test_admissions_carry_why_their_subset(nats_client: Client) -> None:
    feed = synced_feed()
    feed.put(deployment(replicas=3))
    feed.put(replicaset("web-5f7c"))
    feed.put(spread([zone_subset("zone-a", 1), zone_subset("zone-b", 1)]))
    answering = await spread_admission(feed.view, nats_client, replica="webhook-7")
    heard: list[Admission] = []

    async def note(msg: Msg) -> None:
        event = decode(msg.data)
        assert isinstance(event, Admission)
        heard.append(event)

    sub = await nats_client.subscribe("admission.>", cb=note)
    for _ in range(3):
        answer = await answering.policy.mutate_pod(
            request(operation="CREATE", resource="pods", obj=new_pod()))
        assert answer.allowed
    await wait_until_async(lambda: len(heard) == 3, what="three announcements", timeout=5)
    await sub.unsubscribe()
    first, second, third = heard
    assert (first.subset, first.reason) == ("zone-a", "zone-a has room (0/1)")
    assert (second.subset, second.reason) == (
        "zone-b", "zone-a is full (1/1); zone-b has room (0/1)")
    assert (third.subset, third.reason) == (
        "", "no subset has room: zone-a is full (1/1); zone-b is full (1/1)")
    assert [(s.name, s.occupancy, s.limit, s.schedulable) for s in second.subsets] == [
        ("zone-a", 1, 1, True), ("zone-b", 0, 1, True)]
    assert {e.replica for e in heard} == {"webhook-7"}
    assert first.target == "Deployment/web"
    assert first.replicas == 3
    assert 0 < first.ledger_revision < second.ledger_revision
    assert second.pod_name, "the reservation key the pod's annotation carries"
