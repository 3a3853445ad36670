"""Pods are steered into subsets, with slots reserved on a real NATS bucket."""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import nats
import pytest
from nats.aio.client import Client

from events.buckets import entry_key as ledger_key
from kubesim import jsonpatch
from spreadbus.features.workloadspread.admission.admission import SpreadAdmission
from spreadbus.features.workloadspread.admission.view import View
from spreadbus.features.workloadspread.core.reservation_contract import Ledger
from spreadbus.runtime.nats_server import NatsServer
from tests.webhook.admission_reviews import patch_of, request
from tests.workloadspread.webhook.cluster_state import (
    MATCHED,
    Feed,
    deployment,
    new_pod,
    replicaset,
    spread,
    stored_pod,
    synced_feed,
    zone_subset,
)
from tests.workloadspread.webhook.spread_admission import spread_admission


@dataclass
class Replica:
    """One webhook replica: its own view, its own NATS connection, the shared bucket."""

    nc: Client
    view: View
    feed: Feed
    admission: SpreadAdmission


async def make_replica(url: str, subsets: list[dict[str, Any]]) -> Replica:
    nc = await nats.connect(url)
    feed = synced_feed()
    feed.put(deployment(replicas=10))
    feed.put(replicaset())
    feed.put(spread(subsets))
    return Replica(nc, feed.view, feed, await spread_admission(feed.view, nc))


@pytest.fixture
async def replicas(nats_server: NatsServer) -> AsyncIterator[list[Replica]]:
    made = [
        await make_replica(nats_server.url, [zone_subset("zone-a", 3), zone_subset("zone-b")])
        for _ in range(3)
    ]
    try:
        yield made
    finally:
        for replica in made:
            await replica.nc.close()


async def create(replica: Replica, pod: dict[str, Any]) -> dict[str, Any]:
    body = request(
        operation="CREATE", resource="pods", name=pod["metadata"].get("name", ""), obj=pod
    )
    return await replica.admission.mutate_pod(body)


def subset_of(pod: dict[str, Any]) -> str | None:
    raw = (pod["metadata"].get("annotations") or {}).get(MATCHED)
    return None if raw is None else str(json.loads(raw)["subset"])


async def test_a_new_pod_gets_the_first_subsets_constraints_and_annotation(
    replicas: list[Replica],
) -> None:
    pod = new_pod()
    answer = await create(replicas[0], pod)
    assert answer["response"]["allowed"] is True
    patched = jsonpatch.apply(pod, patch_of(answer))
    assert subset_of(patched) == "zone-a"
    required = patched["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert required == [zone_subset("zone-a")["requiredNodeSelectorTerm"]]
    matched = json.loads(patched["metadata"]["annotations"][MATCHED])
    assert matched["uid"], "a pod without a name is keyed by a generated uid"


async def test_three_replicas_admitting_at_once_never_overfill_a_subset(
    replicas: list[Replica],
) -> None:
    pods = [new_pod() for _ in range(60)]
    answers = await asyncio.gather(*(create(replicas[i % 3], pod) for i, pod in enumerate(pods)))
    placed = Counter(
        subset_of(jsonpatch.apply(p, patch_of(a))) for p, a in zip(pods, answers, strict=True)
    )
    assert placed == {"zone-a": 3, "zone-b": 57}
    stores = [r.admission.ledger for r in replicas]
    ledger = await stores[0].current(ledger_key("c1", "default", "ws"))
    assert len(ledger.creating) == 3, "only the limited subset needs reservations"


async def test_observed_pods_and_reservations_are_counted_once(replicas: list[Replica]) -> None:
    first, second = replicas[0], replicas[1]
    pod = new_pod()
    answer = await create(first, pod)
    stored = stored_pod(pod, "web-5f7c-aaaaa", jsonpatch.apply(pod, patch_of(answer)))
    for replica in replicas:
        replica.feed.put(stored)
    # zone-a holds one pod, seen by every view and reserved in the ledger: two more fit.
    later = [await create(second, new_pod()) for _ in range(3)]
    subsets = [subset_of(jsonpatch.apply(new_pod(), patch_of(a))) for a in later]
    assert subsets == ["zone-a", "zone-a", "zone-b"]


async def test_a_deleted_pod_frees_its_slot_before_it_is_gone(replicas: list[Replica]) -> None:
    replica = replicas[0]
    stored = []
    for i in range(3):
        pod = new_pod()
        answer = await create(replica, pod)
        stored.append(stored_pod(pod, f"web-5f7c-{i}", jsonpatch.apply(pod, patch_of(answer))))
    for pod in stored:
        replica.feed.put(pod)
    full = await create(replica, new_pod())
    assert subset_of(jsonpatch.apply(new_pod(), patch_of(full))) == "zone-b"
    deletion = request(
        operation="DELETE", resource="pods", name="web-5f7c-0", old=stored[0], uid="del-1"
    )
    answer = await replica.admission.record_pod_removal(deletion)
    assert answer["response"]["allowed"] is True
    freed = await create(replica, new_pod())
    assert subset_of(jsonpatch.apply(new_pod(), patch_of(freed))) == "zone-a"


async def test_a_dry_run_create_is_answered_without_reserving(replicas: list[Replica]) -> None:
    body = request(operation="CREATE", resource="pods", obj=new_pod(), dry_run=True, uid="dry")
    answer = await replicas[0].admission.mutate_pod(body)
    assert answer["response"] == {"uid": "dry", "allowed": True}
    ledger = await replicas[0].admission.ledger.current(ledger_key("c1", "default", "ws"))
    assert ledger.creating == {}


async def test_a_pod_whose_owner_never_appears_is_refused_like_kruise(
    replicas: list[Replica],
) -> None:
    replica = replicas[0]
    replica.admission.catch_up_timeout = 0.2
    answer = await create(replica, new_pod(rs="web-unknown"))
    assert answer["response"]["allowed"] is False
    assert answer["response"]["status"]["code"] == 500


async def test_a_pod_of_an_owner_observed_moments_later_is_steered(
    replicas: list[Replica],
) -> None:
    replica = replicas[0]

    def observe_owner() -> None:
        replica.feed.put(replicaset("web-9a9a"))
        replica.admission.progress.notify()

    late = asyncio.get_running_loop().call_later(0.05, observe_owner)
    answer = await create(replica, new_pod(rs="web-9a9a"))
    late.cancel()
    assert answer["response"]["allowed"] is True
    assert subset_of(jsonpatch.apply(new_pod(rs="web-9a9a"), patch_of(answer))) == "zone-a"


async def test_a_replica_behind_the_ledger_waits_for_its_view_before_deciding(
    replicas: list[Replica],
) -> None:
    ahead, behind = replicas[0], replicas[1]
    first = new_pod()
    answer = await create(ahead, first)
    stored = stored_pod(first, "web-5f7c-first", jsonpatch.apply(first, patch_of(answer)))
    ahead.feed.put(stored)  # only the first replica has observed the pod so far
    second = await create(ahead, new_pod())  # prunes the observed reservation, raises the floor
    assert subset_of(jsonpatch.apply(new_pod(), patch_of(second))) == "zone-a"
    ledger = await ahead.admission.ledger.current(ledger_key("c1", "default", "ws"))
    assert ledger.floor == ahead.view.seq > behind.view.seq

    def catch_up() -> None:
        behind.feed.put(stored)
        behind.admission.progress.notify()

    asyncio.get_running_loop().call_later(0.05, catch_up)
    third = await create(behind, new_pod())
    # zone-a (limit 3) holds the observed pod and one reservation: one slot is left.
    assert subset_of(jsonpatch.apply(new_pod(), patch_of(third))) == "zone-a"
    fourth = await create(behind, new_pod())
    assert subset_of(jsonpatch.apply(new_pod(), patch_of(fourth))) == "zone-b"


async def test_a_replica_that_cannot_catch_up_gives_up_rather_than_guess(
    replicas: list[Replica],
) -> None:
    ahead, behind = replicas[0], replicas[1]
    first = new_pod()
    answer = await create(ahead, first)
    ahead.feed.put(stored_pod(first, "web-5f7c-first", jsonpatch.apply(first, patch_of(answer))))
    await create(ahead, new_pod())
    behind.admission.catch_up_timeout = 0.1
    with pytest.raises(TimeoutError):
        await create(behind, new_pod())


async def test_an_eviction_frees_no_slot_until_the_pod_is_seen_terminating(
    replicas: list[Replica],
) -> None:
    """A PodDisruptionBudget may refuse the eviction after admission: the pod would keep running
    next to a replacement admitted into its slot, so nothing is freed before it is seen going."""
    replica = replicas[0]
    stored = []
    for i in range(3):
        pod = new_pod()
        answer = await create(replica, pod)
        stored.append(stored_pod(pod, f"web-5f7c-{i}", jsonpatch.apply(pod, patch_of(answer))))
    for pod in stored:
        replica.feed.put(pod)
    eviction = request(
        operation="CREATE",
        resource="pods",
        sub_resource="eviction",
        name="web-5f7c-1",
        obj={
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": "web-5f7c-1", "namespace": "default"},
        },
        uid="evict-1",
    )
    answer = await replica.admission.record_pod_removal(eviction)
    assert answer["response"]["allowed"] is True
    ledger = await replica.admission.ledger.current(ledger_key("c1", "default", "ws"))
    assert ledger.deleting == {}
    # Refused by a budget, say: the pod still runs, so zone-a (limit 3) stays full.
    kept = await create(replica, new_pod())
    assert subset_of(jsonpatch.apply(new_pod(), patch_of(kept))) == "zone-b"
    # Carried out: the pod is seen terminating and its slot is free.
    terminating = json.loads(json.dumps(stored[1]))
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    replica.feed.put(terminating, "MODIFIED")
    freed = await create(replica, new_pod())
    assert subset_of(jsonpatch.apply(new_pod(), patch_of(freed))) == "zone-a"


async def test_a_floor_from_an_earlier_stream_is_lowered_once_the_view_is_drained(
    replicas: list[Replica],
) -> None:
    replica = replicas[0]
    key = ledger_key("c1", "default", "ws")
    stale = Ledger(floor=10_000)  # written when the observation stream was longer
    await replica.admission.ledger.transact(key, lambda ledger: (None, stale))
    replica.admission.catch_up_timeout = 0.05
    replica.admission.stream_drained = lambda: True
    answer = await create(replica, new_pod())
    assert subset_of(jsonpatch.apply(new_pod(), patch_of(answer))) == "zone-a"
    assert (await replica.admission.ledger.current(key)).floor <= replica.view.seq


async def test_five_hundred_pods_through_three_replicas_fill_three_subsets_exactly(
    nats_server: NatsServer,
) -> None:
    subsets = [zone_subset("zone-a", 137), zone_subset("zone-b", "30%"), zone_subset("zone-c")]
    made = [await make_replica(nats_server.url, subsets) for _ in range(3)]
    try:
        for replica in made:  # the workload asks for 500 replicas: 30% is 150
            replica.feed.put(deployment(replicas=500), "MODIFIED")
        pods = [new_pod() for _ in range(500)]
        rng = random.Random(11)
        answers = await asyncio.gather(*(create(made[rng.randrange(3)], pod) for pod in pods))
        placed = Counter(
            subset_of(jsonpatch.apply(p, patch_of(a))) for p, a in zip(pods, answers, strict=True)
        )
        assert placed == {"zone-a": 137, "zone-b": 150, "zone-c": 213}
    finally:
        for replica in made:
            await replica.nc.close()
