"""A WorkloadSpread created just before its workload governs the workload's first pods.

The observation stream may bring the WorkloadSpread a moment after the first pod's admission
request. A pod admitted unsteered then runs wherever it is scheduled, and the planner matches it
to the subset of that node (as Kruise's controller does) even when the subset is full: one pod
over the limit. The webhook therefore decides only once its view holds the pod's owner (created
after the WorkloadSpread) and every WorkloadSpread it allowed in the namespace.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import nats
import pytest
from nats.aio.client import Client

from kubesim import jsonpatch
from spreadbus.engine import review
from spreadbus.features.workloadspread.admission.admission import SpreadAdmission
from spreadbus.runtime.nats_server import NatsServer
from tests.webhook.admission_reviews import patch_of
from tests.webhook.admission_reviews import request as review_request
from tests.workloadspread.webhook.cluster_state import (
    MATCHED,
    Feed,
    deployment,
    new_pod,
    replicaset,
    spread,
    synced_feed,
    zone_subset,
)
from tests.workloadspread.webhook.spread_admission import spread_admission

SUBSETS = [zone_subset("zone-a", 1), zone_subset("zone-b")]


class Replica:
    def __init__(self, admission: SpreadAdmission, feed: Feed) -> None:
        self.admission = admission
        self.feed = feed

    def fold(self, obj: dict[str, Any]) -> None:
        """What the follower does with one observation: fold it, then wake the waiters."""
        self.feed.put(obj)
        self.admission.progress.notify()


async def make_replica(nc: Client, *, on_bus: bool) -> Replica:
    feed = synced_feed()
    admission = await spread_admission(feed.view, nc, on_bus=on_bus, catch_up_timeout=5.0)
    await admission.hints.listening()
    return Replica(admission, feed)


@pytest.fixture
async def replica(nats_client: Client) -> Replica:
    """One replica that talks to no other."""
    return await make_replica(nats_client, on_bus=False)


@pytest.fixture
async def two_replicas(nats_server: NatsServer) -> AsyncIterator[tuple[Replica, Replica]]:
    """Two replicas, each with its own view and connection, that hear each other."""
    first, second = await nats.connect(nats_server.url), await nats.connect(nats_server.url)
    try:
        yield await make_replica(first, on_bus=True), await make_replica(second, on_bus=True)
    finally:
        await first.close()
        await second.close()


def request(operation: str, resource: str, obj: dict[str, Any]) -> review.AdmissionRequest:
    group, _, plural = resource.rpartition("/")
    return review_request(
        operation=operation,
        resource=plural,
        group=group,
        name=obj["metadata"].get("name", ""),
        obj=obj,
        uid=f"req-{operation}-{plural}",
    )


def subset_after(pod: dict[str, Any], answer: dict[str, Any]) -> str | None:
    assert answer["response"]["allowed"] is True
    patched = jsonpatch.apply(pod, patch_of(answer)) if answer["response"].get("patch") else pod
    raw = (patched["metadata"].get("annotations") or {}).get(MATCHED)
    return None if raw is None else str(json.loads(raw)["subset"])


async def pending(task: asyncio.Task[Any]) -> bool:
    """Let the task run until it blocks; whether it is still waiting."""
    for _ in range(20):
        await asyncio.sleep(0)
    return not task.done()


async def test_a_pod_whose_owner_is_not_in_the_view_yet_waits_and_is_steered(
    replica: Replica,
) -> None:
    pod = new_pod()
    admitting = asyncio.create_task(replica.admission.mutate_pod(request("CREATE", "pods", pod)))
    assert await pending(admitting), "nothing is decided before the pod's owner is seen"
    # The stream's order: the spread, its workload, then the pod's owner.
    replica.fold(spread(SUBSETS))
    replica.fold(deployment(replicas=3))
    assert await pending(admitting)
    replica.fold(replicaset())
    assert subset_after(pod, await admitting) == "zone-a"


async def test_a_workloadspread_this_replica_allowed_governs_pods_before_the_view_holds_it(
    replica: Replica,
) -> None:
    body = spread(SUBSETS)
    allowed = await replica.admission.validate_workloadspread(
        request("CREATE", "apps.kruise.io/workloadspreads", body)
    )
    assert allowed["response"]["allowed"] is True
    # The owner chain is already in the view; the spread is not.
    replica.fold(deployment(replicas=3))
    replica.fold(replicaset())
    pod = new_pod()
    admitting = asyncio.create_task(replica.admission.mutate_pod(request("CREATE", "pods", pod)))
    assert await pending(admitting), "the allowed spread is awaited"
    replica.fold(body)
    assert subset_after(pod, await admitting) == "zone-a"


async def test_a_pod_in_a_namespace_without_spreads_is_admitted_unchanged_once_its_owner_is_seen(
    replica: Replica,
) -> None:
    pod = new_pod()
    admitting = asyncio.create_task(replica.admission.mutate_pod(request("CREATE", "pods", pod)))
    assert await pending(admitting)
    replica.fold(deployment(replicas=3))
    replica.fold(replicaset())
    answer = await admitting
    assert subset_after(pod, answer) is None
    assert "patch" not in answer["response"]


async def test_a_pod_whose_owner_never_shows_is_admitted_unchanged_after_the_catch_up_time(
    replica: Replica,
) -> None:
    replica.admission.catch_up_timeout = 0.1
    pod = new_pod()
    answer = await replica.admission.mutate_pod(request("CREATE", "pods", pod))
    assert subset_after(pod, answer) is None


async def test_a_workloadspread_another_replica_allowed_governs_the_new_workloads_first_pods(
    two_replicas: tuple[Replica, Replica],
) -> None:
    validating, admitting_replica = two_replicas
    body = spread(SUBSETS)
    allowed = await validating.admission.validate_workloadspread(
        request("CREATE", "apps.kruise.io/workloadspreads", body)
    )
    assert allowed["response"]["allowed"] is True
    # The admitting replica's stream brought the new workload's owner before the spread.
    owner = replicaset()
    owner["metadata"]["creationTimestamp"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    admitting_replica.fold(deployment(replicas=3))
    admitting_replica.fold(owner)
    pod = new_pod()
    admitting = asyncio.create_task(
        admitting_replica.admission.mutate_pod(request("CREATE", "pods", pod))
    )
    for _ in range(200):  # the announcement is heard over a NATS round trip
        if admitting.done() or admitting_replica.admission.hints.allowed_unseen:
            break
        await asyncio.sleep(0.01)
    assert not admitting.done(), "the spread allowed elsewhere is awaited"
    admitting_replica.fold(body)
    assert subset_after(pod, await admitting) == "zone-a"
