"""One pod change costs the tally the same handful of pods at 200 pods as at 2,000.

Work is counted, not timed: :attr:`SpreadTally.examined` counts every pod the tally reads (one
per observation applied, one per pod a plan looks at), and the full computation is spied on so
a fallback to it cannot hide. Each scenario runs at two sizes and must read the same pods at
both, a small bounded number, while every plan stays equal to the full recount:

- an Adaptive WorkloadSpread whose first subset is ``Schedulable=False`` with pods pending in
  it, some past ``rescheduleCriticalSeconds`` (evicted) and some not yet (a wake-up);
- a scale-in (the Deployment halved) with deletions in flight: deleting reservations for the
  pods the webhook saw go, ``deletingPods`` in the written status, pods terminating;
- pods made before the WorkloadSpread, not annotated for it, matched to subsets by their nodes
  (each plan reads those that fit a subset, as their matches depend on one another, and no
  other pod; those that fit none are read again only when they or their node change);
- a scale-in that leaves a subset far beyond its percentage limit (half its pods get a negative
  deletion cost, in scale-in order) and another with ``minReplicas`` (its last pods protected).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

from spreadbus.features.workloadspread.core import reconcile
from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.model import MATCHED_ANNOTATION as MATCHED
from spreadbus.features.workloadspread.core.model import WorkloadSpread, format_time, from_object
from spreadbus.features.workloadspread.core.occupancy import Reservation
from spreadbus.features.workloadspread.planning.spread_tally import SpreadTally, TallyPlan
from tests.workloadspread.core.builders import (
    deployment,
    node,
    pod,
    replicaset,
    subset,
    workloadspread,
)

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
WHITELIST = Whitelist()
DEPLOY = deployment(replicas=2000)
RS = replicaset(DEPLOY, "aaa")
FULL = reconcile.plan_workloadspread  # the definition, called by the tests themselves
NODES = {"node-a": node("node-a", "a"), "node-b": node("node-b", "b")}


def running(name: str, subset_name: str) -> dict[str, Any]:
    return pod(name, owner=RS, ws="ws", subset_name=subset_name, node="node-1")


def pending(name: str, subset_name: str, since: datetime) -> dict[str, Any]:
    return pod(name, owner=RS, ws="ws", subset_name=subset_name, phase="Pending", ready=False,
               created=format_time(since),
               conditions=[{"type": "PodScheduled", "status": "False",
                            "reason": "Unschedulable"}])


class Spread:
    """A WorkloadSpread, its pods and a tally of them, planned against the full recount."""

    def __init__(self, ws: WorkloadSpread, pods: dict[str, dict[str, Any]],
                 replicas: int) -> None:
        self.ws = ws
        self.pods = pods
        self.deploy = copy.deepcopy(DEPLOY)
        self.deploy["spec"]["replicas"] = replicas
        self.reservations: list[Reservation] = []
        self.now = NOW
        self.tally = SpreadTally(ws)
        self.tally.reset(sorted(pods.items()))

    def change(self, obj: dict[str, Any] | None, name: str) -> None:
        key = f"default/{name}"
        if obj is None:
            self.pods.pop(key)
        else:
            self.pods[key] = obj
        self.tally.apply(key, obj)

    def plan(self) -> TallyPlan:
        got = self.tally.plan(self.ws, workload=self.deploy, latest="aaa",
                              reservations=self.reservations, now=self.now,
                              whitelist=WHITELIST, nodes=lambda _: NODES)
        full = FULL(
            self.ws, workload=self.deploy, pods=[self.pods[k] for k in sorted(self.pods)],
            nodes=NODES, reservations=self.reservations, now=self.now, whitelist=WHITELIST,
            latest="aaa")
        assert got.status == full.status
        assert got.evictions == full.evictions
        assert got.requeue_at == full.requeue_at
        assert got.pod_patches == full.pod_patches
        assert self.tally.differing() == full.deletion_costs
        return got

    def write_status(self, plan: TallyPlan) -> None:
        self.ws = msgspec.structs.replace(self.ws, status=plan.status)


@pytest.fixture
def full_recounts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Pods handed to the full computation by the tally, call by call."""
    calls: list[int] = []
    full = reconcile.plan_workloadspread

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(len(kwargs["pods"]))
        return full(*args, **kwargs)

    monkeypatch.setattr(reconcile, "plan_workloadspread", spy)
    return calls


def adaptive(size: int) -> Spread:
    """``size`` running pods over two subsets, five pending in the closed first subset: three
    stuck for a minute, two for 5 s (deadline at 30 s)."""
    status = {"subsetStatuses": [{"name": "a", "conditions": [{
        "type": "Schedulable", "status": "False", "reason": "PodUnschedulable",
        "lastTransitionTime": format_time(NOW - timedelta(seconds=40))}]}]}
    ws = from_object(workloadspread(
        subset("a", size), subset("b"),
        strategy={"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30}},
        status=status))
    pods = {f"default/r{i:05d}": running(f"r{i:05d}", "a" if i % 2 else "b")
            for i in range(size)}
    for i in range(5):
        since = NOW - timedelta(seconds=60 if i < 3 else 5)
        pods[f"default/u{i}"] = pending(f"u{i}", "a", since)
    return Spread(ws, pods, size)


def adaptive_round(spread: Spread) -> list[TallyPlan]:
    """A running pod becomes ready-less, a pending one gets scheduled, time passes past the
    pending deadlines: one plan after each."""
    plans = [spread.plan()]
    changed = running("r00001", "a")
    changed["status"]["conditions"] = []
    spread.change(changed, "r00001")
    plans.append(spread.plan())
    spread.change(running("u0", "a"), "u0")
    plans.append(spread.plan())
    spread.now += timedelta(seconds=30)
    plans.append(spread.plan())
    return plans


def scale_in(size: int) -> Spread:
    """``size`` pods scaled to half: the webhook recorded the deletion of the first 50 of
    subset b, 30 of which already terminate; the status written carries the entries."""
    ws = from_object(workloadspread(subset("a", 100), subset("b", size)))
    pods = {f"default/r{i:05d}": running(f"r{i:05d}", "a" if i < 100 else "b")
            for i in range(size)}
    spread = Spread(ws, pods, size // 2)
    gone = [f"r{i:05d}" for i in range(100, 150)]
    spread.reservations = [
        Reservation(ws.key, "aaa", "b", name, "deleting", NOW - timedelta(seconds=i % 10))
        for i, name in enumerate(gone)
    ]
    spread.write_status(spread.plan())
    for name in gone[:30]:
        terminating = running(name, "b")
        terminating["metadata"]["deletionTimestamp"] = format_time(NOW)
        spread.change(terminating, name)
    return spread


def scale_in_round(spread: Spread) -> list[TallyPlan]:
    """One more pod being deleted starts terminating, one is gone, one of subset a restarts,
    and time passes beyond some entries' 15 s: one plan after each."""
    plans = [spread.plan()]
    terminating = running("r00140", "b")
    terminating["metadata"]["deletionTimestamp"] = format_time(NOW)
    spread.change(terminating, "r00140")
    plans.append(spread.plan())
    spread.change(None, "r00101")
    plans.append(spread.plan())
    restarted = running("r00007", "a")
    restarted["status"]["phase"] = "Pending"
    spread.change(restarted, "r00007")
    plans.append(spread.plan())
    spread.now += timedelta(seconds=8)
    plans.append(spread.plan())
    return plans


def existing(size: int) -> Spread:
    """``size`` annotated pods, and six made before the WorkloadSpread: five on a node of zone
    a, which fits subset a (room left: four) and subset b (any node), one on a node of zone b;
    and a tenth of ``size`` on a node that is gone, which fit no subset."""
    anywhere = subset("b")
    del anywhere["requiredNodeSelectorTerm"]
    ws = from_object(workloadspread(subset("a", size // 2 + 4), anywhere))
    pods = {f"default/r{i:05d}": running(f"r{i:05d}", "a" if i % 2 else "b")
            for i in range(size)}
    for i in range(6):
        pods[f"default/e{i}"] = pod(f"e{i}", owner=RS, node="node-a" if i < 5 else "node-b")
    for i in range(size // 10):
        pods[f"default/z{i:04d}"] = pod(f"z{i:04d}", owner=RS, node="node-gone")
    return Spread(ws, pods, size)


def existing_round(spread: Spread) -> list[TallyPlan]:
    """An annotated pod of zone a goes (quota for a fifth unannotated pod there), the first
    unannotated pod's annotation is written, one more unannotated pod appears."""
    plans = [spread.plan()]
    spread.change(None, "r00001")
    plans.append(spread.plan())
    spread.change(running("e0", "a"), "e0")
    plans.append(spread.plan())
    spread.change(pod("e9", owner=RS, node="node-b"), "e9")
    plans.append(spread.plan())
    return plans


def over_limit(size: int) -> Spread:
    """``size`` pods, half in subset a (50 %), half in b (minReplicas 10), scaled to half: a is
    allowed a quarter and holds half."""
    ws = from_object(workloadspread(subset("a", "50%"), subset("b", minReplicas=10)))
    pods = {f"default/r{i:05d}": running(f"r{i:05d}", "a" if i % 2 else "b")
            for i in range(size)}
    return Spread(ws, pods, size // 2)


def over_limit_round(spread: Spread) -> list[TallyPlan]:
    """A pod of a within its limit loses readiness (it moves to the front of the scale-in
    order), the last pod of a goes, the last (protected) pod of b goes: one plan after each."""
    size = len(spread.pods)
    plans = [spread.plan()]
    name = f"r{size - 3:05d}"
    unready = running(name, "a")
    unready["status"]["conditions"] = []
    spread.change(unready, name)
    plans.append(spread.plan())
    spread.change(None, f"r{size - 1:05d}")
    plans.append(spread.plan())
    spread.change(None, f"r{size - 2:05d}")
    plans.append(spread.plan())
    return plans


def work(build: Callable[[int], Spread], rounds: Callable[[Spread], list[TallyPlan]],
         size: int) -> tuple[int, list[TallyPlan]]:
    spread = build(size)
    spread.plan()  # the first plan after a build looks at every bucket once
    before = spread.tally.examined
    plans = rounds(spread)
    return spread.tally.examined - before, plans


def work_at_both_sizes(
    build: Callable[[int], Spread], rounds: Callable[[Spread], list[TallyPlan]],
    full_recounts: list[int],
) -> tuple[int, list[TallyPlan], list[TallyPlan]]:
    """The rounds' work at 200 and 2,000 pods (the same, never a full recount), with the plans
    at each size."""
    small, small_plans = work(build, rounds, 200)
    large, large_plans = work(build, rounds, 2000)
    assert full_recounts == []
    assert small == large
    return large, small_plans, large_plans


def test_an_adaptive_round_reads_the_pending_pods_and_the_changed_ones_only(
    full_recounts: list[int],
) -> None:
    large, small_plans, large_plans = work_at_both_sizes(adaptive, adaptive_round, full_recounts)
    # 2 pods changed; per plan a handful of reads per bucket plus the stuck pods evicted.
    assert large <= 2 + 4 * (2 * 2 + 5)
    # What the rounds decide is Adaptive at work: stuck pods evicted, the next deadline ahead.
    first, *_, last = large_plans
    assert [e.pod for e in first.evictions] == ["default/u0", "default/u1", "default/u2"]
    assert first.requeue_at == NOW + timedelta(seconds=25)
    assert [e.pod for e in last.evictions] == ["default/u1", "default/u2", "default/u3",
                                               "default/u4"]
    assert [e.pod for e in small_plans[-1].evictions] == [e.pod for e in last.evictions]


def test_a_round_during_a_scale_in_reads_the_pods_being_deleted_not_the_workload(
    full_recounts: list[int],
) -> None:
    large, small_plans, large_plans = work_at_both_sizes(scale_in, scale_in_round, full_recounts)
    # 3 pods changed; per plan, one read per pod a deletion in flight names (50 reservations,
    # the written status' entries name the same pods), whatever the number of pods.
    assert large <= 3 + 5 * 50
    first = large_plans[0].status
    b = next(s for s in first.versioned_subset_statuses["aaa"] if s.name == "b")
    assert len(b.deleting_pods) == 20  # the 30 terminating pods' entries are done
    assert b.replicas == 2000 - 100 - 30
    last = next(s for s in large_plans[-1].status.versioned_subset_statuses["aaa"]
                if s.name == "b")
    assert len(last.deleting_pods) < len(b.deleting_pods)  # some expired, one terminates
    assert [len(p.status.versioned_subset_statuses["aaa"][1].deleting_pods)
            for p in small_plans] == [len(p.status.versioned_subset_statuses["aaa"][1]
                                          .deleting_pods) for p in large_plans]


def test_a_round_with_pods_made_before_the_spread_reads_those_pods_not_the_workload(
    full_recounts: list[int],
) -> None:
    large, small_plans, large_plans = work_at_both_sizes(existing, existing_round, full_recounts)
    # 3 pods changed; per plan, the (at most 7) pods not annotated yet.
    assert large <= 3 + 4 * 7
    # Subset a had room for four: the fifth goes to b, until a pod of subset a goes.
    first, second, third, fourth = large_plans

    def matched(plan: TallyPlan) -> dict[str, str]:
        return {key: json.loads(p["metadata"]["annotations"][MATCHED])["subset"]
                for key, p in plan.pod_patches.items()}

    assert matched(first) == {"default/e0": "a", "default/e1": "a", "default/e2": "a",
                              "default/e3": "a", "default/e4": "b", "default/e5": "b"}
    assert matched(second)["default/e4"] == "a"
    assert "default/e0" not in matched(third)
    assert matched(fourth)["default/e9"] == "b"
    assert [sorted(p.pod_patches) for p in small_plans] == [
        sorted(p.pod_patches) for p in large_plans]


def test_a_round_beyond_a_limit_reads_the_pods_that_cross_a_cut_not_the_bucket(
    full_recounts: list[int],
) -> None:
    large, small_plans, large_plans = work_at_both_sizes(over_limit, over_limit_round,
                                                         full_recounts)
    # 3 pods changed; each moves a cut by one place (a pod read on either side of it).
    assert large <= 3 * 3
    # The unready pod is the first to go now, which pushes the last of a's 500 pods beyond the
    # limit (in key order) within it; a's limit then allows one more, and b protects one more.
    first, unready, a_gone, b_gone = large_plans
    assert first.updates == {}
    assert unready.updates == {"default/r01997": "-100", "default/r00999": "200"}
    assert a_gone.updates == {"default/r00997": "200"}
    assert b_gone.updates == {"default/r01978": "300"}
    assert [len(p.updates) for p in small_plans] == [len(p.updates) for p in large_plans]
