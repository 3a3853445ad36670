"""The budget rule on the planner's projection: status from pods, workloads and the webhook's
records, pods linked, records of gone pods still listed until they expire.

Pure: objects are folded into a :class:`KubeProjection` as the watcher publishes them, the budget
bucket's stream into :class:`BudgetRecords`, and the rule runs with an injected ``now``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from events import codec, subjects
from events.buckets import entry_key
from events.messages import Observation, Plan
from spreadbus.engine.plan_grants import Granted, PlanAuthority
from spreadbus.features.podunavailablebudget.core.budget_ledger import (
    BUCKET,
    ENTRIES,
    BudgetEntry,
)
from spreadbus.features.podunavailablebudget.feature import FEATURE
from spreadbus.features.podunavailablebudget.planning.budget_records import (
    BUDGETS_RESOURCE,
    BudgetRecords,
)
from spreadbus.features.podunavailablebudget.planning.rule import BudgetRule
from spreadbus.projection.decision_log import DecisionLog
from spreadbus.projection.kube_state import KubeProjection, side_resource_key
from spreadbus.projection.planning import plans_for
from tests.podunavailablebudget.budgets import NS, budget, pod

T0 = 1_800_000_000.0
GROUPS = {"Pod": ("", "pods"), "PodUnavailableBudget": ("policy.kruise.io",
                                                       "podunavailablebudgets")}


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class World:
    def __init__(self) -> None:
        self.view = KubeProjection()
        self.log = DecisionLog()
        self.records = BudgetRecords()
        self.rule = BudgetRule("c1", records=self.records.of("c1"), min_interval_seconds=0)
        self.seq = 0

    def put(self, obj: dict[str, Any], event: str = "MODIFIED") -> None:
        self.seq += 1
        group, resource = GROUPS[obj["kind"]]
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.seq)
        message = Observation(cluster="c1", group=group, version="v1", resource=resource,
                              event=event, object=obj)  # type: ignore[arg-type]
        self.view.apply(self.seq, subjects.observation("c1", group, resource, NS, meta["name"]),
                        codec.encode(message))

    def spend(self, entry: BudgetEntry) -> None:
        self.seq += 1
        key = entry_key("c1", NS, "pub")
        changed = self.records.apply(self.seq, f"$KV.{BUCKET}.{key}", ENTRIES.encode(entry))
        assert changed == ("c1", f"{NS}.pub")
        self.view.changed.add((side_resource_key("c1", BUDGETS_RESOURCE), f"{NS}.pub"))

    def decide(self, now: float) -> list[Plan]:
        changed = self.view.take_changed() | self.rule.due(now)
        return plans_for(self.rule, self.view, self.log,
                         self.rule.desired(self.view, changed, now), cluster="c1", now=now)


def status_of(plans: list[Plan]) -> dict[str, Any]:
    (plan,) = [p for p in plans if p.verb == "patch_status"]
    assert plan.precondition is not None
    assert plan.precondition.resource_version, "status is written only on the version it read"
    status: dict[str, Any] = plan.patch["status"]
    return status


def test_status_counts_ready_pods_and_links_the_unlinked() -> None:
    world = World()
    world.put(budget(total=4, max_unavailable=1))
    for i in range(4):
        world.put(pod(f"p{i}", related="pub" if i else None))
    plans = world.decide(T0)
    status = status_of(plans)
    assert (status["unavailableAllowed"], status["currentAvailable"], status["desiredAvailable"],
            status["totalReplicas"]) == (1, 4, 3, 4)
    links = [p for p in plans if p.verb == "patch"]
    assert [(p.target.name, p.patch) for p in links] == [
        ("p0", {"metadata": {"annotations": {"kruise.io/related-pub": "pub"}}})]
    authority = PlanAuthority(FEATURE.plan_grants)
    assert all(isinstance(authority.authorize(p), Granted) for p in plans), (
        "the actuator applies every plan the rule makes")


def test_the_webhooks_records_are_written_and_gone_pods_stay_listed_until_they_expire() -> None:
    world = World()
    world.put(budget(total=4, max_unavailable=1))
    for i in range(4):
        world.put(pod(f"p{i}"))
    world.decide(T0)
    # The webhook let p0 (still there) and p1 (already gone) go.
    world.put(pod("p1"), event="DELETED")
    world.spend(BudgetEntry(version=1, disrupted={"p0": iso(T0), "p1": iso(T0)}))
    status = status_of(world.decide(T0 + 1))
    assert status["disruptedPods"] == {"p0": iso(T0), "p1": iso(T0)}
    assert (status["currentAvailable"], status["unavailableAllowed"]) == (2, 0)
    # After the records expire (20 s) nothing is listed: p0 counts as available again.
    assert world.rule.next_wake() is not None
    status = status_of(world.decide(T0 + 21))
    assert status.get("disruptedPods") is None, "the dropped map is nulled in the merge patch"
    assert (status["currentAvailable"], status["unavailableAllowed"]) == (3, 0)
