"""A reservation outlives its 30 s while the view lags: its pod may exist, not yet seen.

A creating reservation counts until the view shows its pod or 30 s pass (Kruise's
``creatingPods``). A webhook replica whose view falls more than 30 s behind (a watcher and bus
slowed by load) cannot tell a pod never made from one made but not yet folded. Expired by the
wall clock, the reservation would free its slot and a second pod would be admitted into it. It
is judged by the time the view was last known current instead, and once the view is current
again the 30 s rule holds as before. A deletion still frees its pod's slot for 15 s of the wall
clock only: the lagging view shows the pod, which runs on if its deletion failed. The clock and
the follower's drained state are the test's.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import nats
import pytest
from nats.aio.client import Client

from kubesim import jsonpatch
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

START = 1_800_000_000.0


@dataclass
class Replica:
    """One webhook replica whose clock and follower the test drives."""

    nc: Client
    feed: Feed
    admission: Any
    """The webhook's policy answering whole reviews (:func:`spread_admission`)."""
    time: list[float] = field(default_factory=lambda: [START])
    drained: list[bool] = field(default_factory=lambda: [True])


@pytest.fixture
async def replica(nats_server: NatsServer) -> AsyncIterator[Replica]:
    nc = await nats.connect(nats_server.url)
    feed = synced_feed()
    feed.put(deployment(replicas=10))
    feed.put(replicaset())
    feed.put(spread([zone_subset("zone-a", 1), zone_subset("zone-b")]))
    time, drained = [START], [True]
    admission = await spread_admission(
        feed.view, nc, on_bus=False, clock=lambda: time[0], stream_drained=lambda: drained[0]
    )
    try:
        yield Replica(nc, feed, admission, time, drained)
    finally:
        await nc.close()


async def admit(replica: Replica, pod: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The subset the replica steers ``pod`` into, and the pod as patched."""
    answer = await replica.admission.mutate_pod(
        request(operation="CREATE", resource="pods", name="", obj=pod)
    )
    assert answer["response"]["allowed"] is True
    patched = jsonpatch.apply(pod, patch_of(answer))
    raw = (patched["metadata"].get("annotations") or {}).get(MATCHED)
    return (None if raw is None else str(json.loads(raw)["subset"])), patched


async def test_a_reservation_does_not_expire_while_the_view_lags_behind_its_pod(
    replica: Replica,
) -> None:
    first, _ = await admit(replica, new_pod())
    assert first == "zone-a"
    # The first pod is created, but the view falls behind before folding it; 31 s pass.
    replica.drained[0] = False
    replica.time[0] = START + 31
    second, _ = await admit(replica, new_pod())
    assert second == "zone-b", "the unseen pod's slot was given to another pod"


async def test_once_the_view_is_current_a_pod_never_made_frees_its_slot_after_30_s(
    replica: Replica,
) -> None:
    first, _ = await admit(replica, new_pod())
    assert first == "zone-a"
    replica.drained[0] = False
    replica.time[0] = START + 31
    assert (await admit(replica, new_pod()))[0] == "zone-b"
    # The view catches up and holds no such pod: it was never made, as Kruise would expire it.
    replica.drained[0] = True
    replica.time[0] = START + 32
    assert (await admit(replica, new_pod()))[0] == "zone-a"


async def test_once_the_view_is_current_and_shows_the_pod_the_subset_stays_full(
    replica: Replica,
) -> None:
    pod = new_pod()
    first, patched = await admit(replica, pod)
    assert first == "zone-a"
    replica.drained[0] = False
    replica.time[0] = START + 31
    assert (await admit(replica, new_pod()))[0] == "zone-b"
    replica.feed.put(stored_pod(pod, "web-5f7c-aaaaa", patched))
    replica.drained[0] = True
    replica.time[0] = START + 40
    assert (await admit(replica, new_pod()))[0] == "zone-b"


async def test_a_deletion_frees_its_slot_for_15_s_of_the_wall_clock_however_the_view_lags(
    replica: Replica,
) -> None:
    pod = new_pod()
    _, patched = await admit(replica, pod)
    stored = stored_pod(pod, "web-5f7c-aaaaa", patched)
    replica.feed.put(stored)
    assert (await admit(replica, new_pod()))[0] == "zone-b"
    await replica.admission.record_pod_removal(request(
        operation="DELETE", resource="pods", name="web-5f7c-aaaaa", old=stored, uid="del-1"))
    # The view falls behind; the deletion failed and the pod runs on, as the view shows.
    replica.drained[0] = False
    replica.time[0] = START + 16
    assert (await admit(replica, new_pod()))[0] == "zone-b"
