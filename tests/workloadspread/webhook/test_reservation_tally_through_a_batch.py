"""The loads a decision carries over to the next one of its batch equal a fresh count.

Group commit runs a batch's decisions back to back on the ledger each one returns; the webhook
carries each decision's count (plus the reservation it added) to the next instead of recounting
the whole ledger. Whatever mix of creates, deletions and observations folded in between, the
carried count must equal a recount of the ledger against the view at that moment, and the full
recount over the pods the view holds.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.workloadspread.admission.reservation_tally import ReservationTally
from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.admission import admit_create_for, admit_delete_for
from spreadbus.features.workloadspread.core.occupancy import loads_from_pods
from spreadbus.features.workloadspread.core.reservation_contract import Ledger
from tests.workloadspread.webhook.cluster_state import (
    MATCHED,
    deployment,
    new_pod,
    replicaset,
    spread,
    synced_feed,
    zone_subset,
)

NOW = datetime(2026, 11, 22, 1, 0, tzinfo=UTC)
SUBSETS = [zone_subset("zone-a", 4), zone_subset("zone-b", 4), zone_subset("zone-c")]

Step = tuple[str, int]
steps = st.lists(
    st.tuples(st.sampled_from(["create", "delete", "observe", "new batch"]), st.integers(0, 40)),
    max_size=60,
)


def stored(pod: dict[str, Any], name: str, subset: str | None, uid: str = "") -> dict[str, Any]:
    pod = json.loads(json.dumps(pod))
    pod["metadata"]["name"] = name
    pod["status"] = {"phase": "Running"}
    if subset is not None:
        matched: dict[str, str] = {"name": "ws", "subset": subset}
        if uid:
            matched["uid"] = uid
        pod["metadata"].setdefault("annotations", {})[MATCHED] = json.dumps(matched)
    return pod


class Run:
    """One webhook's view, decisions made the way a batch makes them, and the pods created."""

    def __init__(self) -> None:
        self.feed = synced_feed()
        self.view = self.feed.view
        self.feed.put(deployment(replicas=20))
        self.feed.put(replicaset())
        self.feed.put(spread(SUBSETS))
        self.tally = ReservationTally(self.view)
        self.spread = self.view.spreads_in("default")[0]
        self.version = pod_state.version(new_pod())
        self.ledger = Ledger()
        self.admitted: list[dict[str, Any]] = []  # created pods, not yet observed
        self.running: list[dict[str, Any]] = []  # observed pods
        self.count = 0

    def check(self) -> None:
        """The carried count equals a recount of the ledger against the view, and the full
        recount of the ledger against the pods the view holds."""
        current, carried = self.tally.tally(self.spread, self.version, self.ledger, NOW)
        recount = self.tally.loads(
            self.spread, self.version, self.tally.prune(self.ledger, "default", NOW)
        )
        assert carried == recount
        pods = list(self.view.objects.get(("", "pods"), {}).values())
        full = loads_from_pods(self.spread, pods, current.reservations())
        assert carried == full.get(self.version, {})
        self.ledger = current

    def create(self) -> None:
        self.check()
        self.count += 1
        pod = new_pod()
        current, loads = self.tally.tally(self.spread, self.version, self.ledger, NOW)
        decision = admit_create_for(
            self.spread, pod, replicas=20, loads=loads, now=NOW, generated_uid=f"uid-{self.count}"
        )
        self.ledger = self.tally.record(
            self.spread, self.version, current, loads, decision.reservation
        )
        uid = decision.reservation.pod if decision.reservation else ""
        self.admitted.append(stored(pod, f"web-5f7c-{self.count}", decision.subset, uid))

    def delete(self, pick: int) -> None:
        self.check()
        if not self.running:
            return
        pod = self.running[pick % len(self.running)]
        current, loads = self.tally.tally(self.spread, self.version, self.ledger, NOW)
        decision = admit_delete_for(self.spread, pod, loads=loads, now=NOW)
        self.ledger = self.tally.record(
            self.spread, self.version, current, loads, decision.reservation
        )
        terminating = json.loads(json.dumps(pod))
        terminating["metadata"]["deletionTimestamp"] = "2026-11-22T01:00:00Z"
        self.feed.put(terminating, "MODIFIED")
        self.running.remove(pod)

    def observe(self, pick: int) -> None:
        if self.admitted:
            pod = self.admitted.pop(pick % len(self.admitted))
            self.feed.put(pod)
            self.running.append(pod)


@settings(max_examples=150, deadline=None)
@given(steps)
def test_the_count_carried_through_a_batch_equals_a_recount(plan: list[Step]) -> None:
    run = Run()
    for action, pick in plan:
        if action == "create":
            run.create()
        elif action == "delete":
            run.delete(pick)
        elif action == "observe":
            run.observe(pick)
        else:
            run.ledger = Ledger(
                creating=dict(run.ledger.creating),
                deleting=dict(run.ledger.deleting),
                floor=run.ledger.floor,
            )
        run.check()
