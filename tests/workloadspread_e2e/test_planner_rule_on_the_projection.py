"""The WorkloadSpread rule on the planner's projection: indexes, reservations, timed wake-ups.

Pure: objects are folded into a :class:`KubeProjection` as the watcher would publish them, the
rule and :func:`plans_for` run with an injected ``now``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from events import codec, subjects
from events.messages import Observation, Plan
from spreadbus.features.workloadspread.core.model import DELETION_COST_ANNOTATION as DELETION_COST
from spreadbus.features.workloadspread.core.occupancy import Reservation
from spreadbus.features.workloadspread.core.reservation_contract import BUCKET
from spreadbus.features.workloadspread.planning.reservations import (
    RESERVATIONS_RESOURCE,
    ReservationLedgers,
)
from spreadbus.features.workloadspread.planning.rule import WorkloadSpreadRule
from spreadbus.projection.decision_log import DecisionLog
from spreadbus.projection.kube_state import KubeProjection, side_resource_key
from spreadbus.projection.planning import plans_for

T0 = 1_800_000_000.0
MATCHED = "apps.kruise.io/matched-workloadspread"
RESOURCES = {"Pod": ("", "pods"), "Node": ("", "nodes"), "Deployment": ("apps", "deployments"),
             "ReplicaSet": ("apps", "replicasets"), "CloneSet": ("apps.kruise.io", "clonesets"),
             "WorkloadSpread": ("apps.kruise.io", "workloadspreads")}


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class World:
    """A projection fed object by object, with a rule and a decision log."""

    def __init__(self, *, recover_after: float = 300.0) -> None:
        self.view = KubeProjection()
        self.log = DecisionLog()
        self.ledgers = ReservationLedgers()
        self.rule = WorkloadSpreadRule("c1", reservations=self.ledgers.of("c1"),
                                       recover_after_seconds=recover_after)
        self.seq = 0
        self.rv = 0

    def put(self, obj: dict[str, Any], event: str = "MODIFIED") -> dict[str, Any]:
        self.seq += 1
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        group, resource = RESOURCES[obj["kind"]]
        meta = obj["metadata"]
        message = Observation(cluster="c1", group=group, version="v1", resource=resource,
                              event=event, object=obj)  # type: ignore[arg-type]
        subject = subjects.observation("c1", group, resource, meta.get("namespace", ""),
                                       meta["name"])
        self.view.apply(self.seq, subject, codec.encode(message))
        return obj

    def reserve(self, seq: int, ledger: dict[str, Any]) -> None:
        key = "c1.default.ws"
        changed = self.ledgers.apply(seq, f"$KV.{BUCKET}.{key}", json.dumps(ledger).encode())
        assert changed == ("c1", "default.ws")
        self.view.changed.add((side_resource_key("c1", RESERVATIONS_RESOURCE), "default.ws"))

    def decide(self, now: float, *, extra: set[tuple[str, str]] | None = None) -> list[Plan]:
        changed = self.view.take_changed() | self.rule.due(now) | (extra or set())
        desired = self.rule.desired(self.view, changed, now)
        return plans_for(self.rule, self.view, self.log, desired, cluster="c1", now=now)


def deployment(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "uid": "d-uid", "generation": 1},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}}


def replicaset() -> dict[str, Any]:
    template = deployment(0)["spec"]["template"]
    template = {**template, "metadata": {"labels": {"app": "web", "pod-template-hash": "h1"}}}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web-h1", "namespace": "default", "uid": "rs-uid",
                         "labels": {"app": "web", "pod-template-hash": "h1"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                              "name": "web", "uid": "d-uid",
                                              "controller": True}]},
            "spec": {"replicas": 0, "template": template}}


def spread(*, adaptive: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "subsets": [
            {"name": "a", "maxReplicas": 2,
             "requiredNodeSelectorTerm": {"matchExpressions": [
                 {"key": "zone", "operator": "In", "values": ["a"]}]}},
            {"name": "b",
             "requiredNodeSelectorTerm": {"matchExpressions": [
                 {"key": "zone", "operator": "In", "values": ["b"]}]}},
        ],
    }
    if adaptive is not None:
        spec["scheduleStrategy"] = {"type": "Adaptive",
                                    "adaptive": {"rescheduleCriticalSeconds": adaptive}}
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
            "metadata": {"name": "ws", "namespace": "default", "uid": "ws-uid", "generation": 1},
            "spec": spec}


def pod(name: str, subset: str | None, *, created: float = T0, node: str = "",
        unschedulable_since: float | None = None) -> dict[str, Any]:
    annotations = {}
    if subset is not None:
        annotations[MATCHED] = json.dumps({"name": "ws", "subset": subset})
    status: dict[str, Any] = {"phase": "Running" if node else "Pending"}
    if unschedulable_since is not None:
        status["conditions"] = [{"type": "PodScheduled", "status": "False",
                                 "reason": "Unschedulable",
                                 "lastTransitionTime": iso(unschedulable_since)}]
    if node:
        status["conditions"] = [{"type": "Ready", "status": "True",
                                 "lastTransitionTime": iso(created)}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                         "creationTimestamp": iso(created),
                         "labels": {"app": "web", "pod-template-hash": "h1"},
                         "annotations": annotations,
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                              "name": "web-h1", "uid": "rs-uid",
                                              "controller": True}]},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]},
            "status": status}


def node(name: str, zone: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}", "labels": {"zone": zone}}}


def by_verb(plans: list[Plan], verb: str) -> dict[str, Plan]:
    return {p.target.name: p for p in plans if p.verb == verb}


def status_of(plans: list[Plan]) -> dict[str, Any]:
    (plan,) = [p for p in plans if p.verb == "patch_status"]
    status: dict[str, Any] = plan.patch["status"]
    return status


def test_pods_get_deletion_costs_that_remove_the_overflow_subset_first() -> None:
    world = World()
    world.put(deployment(3))
    world.put(replicaset())
    world.put(spread())
    world.put(node("n-a", "a"))
    world.put(node("n-b", "b"))
    for name, subset, where in (("p1", "a", "n-a"), ("p2", "a", "n-a"), ("p3", "b", "n-b")):
        world.put(pod(name, subset, node=where))
    plans = world.decide(T0 + 10)
    costs = {name: p.patch["metadata"]["annotations"][DELETION_COST]
             for name, p in by_verb(plans, "patch").items()}
    assert costs == {"p1": "200", "p2": "200", "p3": "100"}
    status = status_of(plans)
    replicas = {s["name"]: s["replicas"] for s in status["subsetStatuses"]}
    assert replicas == {"a": 2, "b": 1}
    (status_plan,) = [p for p in plans if p.verb == "patch_status"]
    assert status_plan.precondition.resource_version, "status writes keep stale protection"
    assert all(not p.precondition.resource_version for p in plans if p.verb == "patch"), (
        "pod annotation plans name the uid only"
    )


def test_a_pod_event_replans_only_the_workloadspread_that_owns_it() -> None:
    world = World()
    world.put(deployment(1))
    world.put(replicaset())
    world.put(spread())
    other = deployment(1)
    other["metadata"].update(name="other", uid="o-uid")
    world.put(other)
    unrelated = spread()
    unrelated["metadata"].update(name="ws-other", uid="wso-uid")
    unrelated["spec"]["targetRef"]["name"] = "other"
    world.put(unrelated)
    world.put(node("n-a", "a"))
    world.decide(T0)
    world.put(pod("p1", "a", node="n-a"))
    plans = world.decide(T0 + 1)
    assert {p.target.name for p in plans if p.verb == "patch_status"} == {"ws"}


def test_pre_existing_pods_get_the_matched_annotation_through_their_node() -> None:
    world = World()
    world.put(deployment(1))
    world.put(replicaset())
    world.put(node("n-b", "b"))
    world.put(pod("old", None, node="n-b"))
    world.put(spread())
    plans = world.decide(T0 + 5)
    patch = by_verb(plans, "patch")["old"].patch
    matched = json.loads(patch["metadata"]["annotations"][MATCHED])
    assert matched == {"name": "ws", "subset": "b"}


def test_reservations_in_flight_show_as_creating_pods_until_they_expire() -> None:
    world = World()
    world.put(deployment(1))
    world.put(replicaset())
    world.put(spread())
    world.decide(T0)
    at = datetime.fromtimestamp(T0, UTC)
    reservation = Reservation(workloadspread="default/ws", version="h1", subset="a",
                              pod="uid-new", kind="creating", at=at)
    world.reserve(1, {"creating": {"uid-new": msgspec.to_builtins(reservation)}})
    status = status_of(world.decide(T0 + 1))
    versioned = {s["name"]: s for s in status["versionedSubsetStatuses"]["h1"]}
    assert "uid-new" in versioned["a"]["creatingPods"]
    assert versioned["a"]["missingReplicas"] == 1
    wake = world.rule.next_wake()
    assert wake is not None
    assert T0 + 1 < wake <= T0 + 31, "woken for the 30 s expiry"
    assert world.decide(wake - 0.5) == [], "nothing is due before the expiry"
    expired = status_of(world.decide(wake + 0.5))
    versions = expired.get("versionedSubsetStatuses") or {}
    versioned = {s["name"]: s for s in versions.get("h1") or []}
    assert "uid-new" not in (versioned.get("a", {}).get("creatingPods") or {})


def test_a_ledger_pruned_past_the_projection_defers_the_status() -> None:
    world = World()
    world.put(deployment(1))
    world.put(replicaset())
    world.put(spread())
    world.decide(T0)
    world.reserve(1, {"floor": world.seq + 5})
    assert world.decide(T0 + 1) == []
    for _ in range(5):
        world.put(node(f"n{world.seq}", "a"))
    assert [p.verb for p in world.decide(T0 + 2)] == ["patch_status"]


def test_an_adaptive_subset_with_stuck_pods_evicts_them_and_recovers_after_the_window() -> None:
    world = World(recover_after=20.0)
    world.put(deployment(2))
    world.put(replicaset())
    world.put(spread(adaptive=5))
    world.put(pod("stuck", "a", created=T0, unschedulable_since=T0))
    assert by_verb(world.decide(T0 + 1), "evict") == {}
    wake = world.rule.next_wake()
    assert wake is not None
    assert wake <= T0 + 5.5, "woken at the pod's deadline"
    plans = world.decide(wake + 0.1)
    assert by_verb(plans, "evict") == {}, "the status first: webhooks must see the subset closed"
    conditions = {s["name"]: s["conditions"][0] for s in status_of(plans)["subsetStatuses"]}
    assert conditions["a"]["status"] == "False"
    assert conditions["b"]["status"] == "True"
    # The status is observed: now the stuck pod is evicted.
    observed = spread(adaptive=5)
    observed["status"] = status_of(plans)
    world.put(observed)
    assert set(by_verb(world.decide(wake + 0.5), "evict")) == {"stuck"}
    # The eviction lands; later, the window ends with no new event.
    world.put(pod("stuck", "a"), event="DELETED")
    quiet = world.decide(wake + 1)
    assert by_verb(quiet, "evict") == {}
    recover = world.rule.next_wake()
    assert recover is not None
    assert recover <= wake + 0.1 + 21, "woken when the window ends"
    back = status_of(world.decide(recover + 0.5))
    conditions = {s["name"]: s["conditions"][0] for s in back["subsetStatuses"]}
    assert conditions["a"]["status"] == "True"


def test_changes_moments_after_a_plan_are_coalesced_into_one_plan_a_little_later() -> None:
    world = World()
    world.put(deployment(3))
    world.put(replicaset())
    world.put(spread())
    world.put(node("n-b", "b"))
    world.decide(T0)
    world.put(pod("p1", "b", node="n-b"))
    assert world.decide(T0 + 0.05) == [], "planned 50 ms ago: wait"
    world.put(pod("p2", "b", node="n-b"))
    assert world.decide(T0 + 0.1) == []
    wake = world.rule.next_wake()
    assert wake == T0 + 0.25
    plans = world.decide(wake)
    assert set(by_verb(plans, "patch")) == {"p1", "p2"}
    assert subset_field_replicas(status_of(plans)) == {"a": 0, "b": 2}


def subset_field_replicas(status: dict[str, Any]) -> dict[str, int]:
    return {s["name"]: s["replicas"] for s in status["subsetStatuses"]}


def test_a_cloneset_target_is_planned_when_clonesets_are_streamed() -> None:
    world = World()
    world.put({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
               "metadata": {"name": "cs", "namespace": "default", "uid": "cs-uid",
                            "generation": 1},
               "spec": {"replicas": 2}, "status": {"observedGeneration": 1,
                                                  "updateRevision": "cs-rev1"}})
    target = spread()
    target["spec"]["targetRef"] = {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                                   "name": "cs"}
    world.put(target)
    world.put(node("n-a", "a"))
    for name in ("c1", "c2"):
        member = pod(name, "a", node="n-a")
        member["metadata"]["ownerReferences"] = [{
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs",
            "uid": "cs-uid", "controller": True}]
        world.put(member)
    status = status_of(world.decide(T0 + 1))
    assert subset_field_replicas(status) == {"a": 2, "b": 0}


@settings(max_examples=40, deadline=None)
@given(rounds=st.lists(st.tuples(st.booleans(), st.floats(min_value=0.3, max_value=3.0)),
                       min_size=1, max_size=12))
def test_a_stuck_pod_is_evicted_only_once_its_subset_is_observed_unschedulable(
    rounds: list[tuple[bool, float]],
) -> None:
    """Whether or not each status write is observed before the next round, no round evicts a pod
    of a subset the observed status still shows schedulable; once it shows it closed, one does."""
    world = World(recover_after=300.0)
    world.put(deployment(2))
    world.put(replicaset())
    current = world.put(spread(adaptive=5))
    world.put(pod("stuck", "a", created=T0, unschedulable_since=T0))
    now = T0 + 6.0
    evicted_at: float | None = None
    for observe, step in rounds:
        closed = any(s["name"] == "a" and s.get("conditions", [{}])[0].get("status") == "False"
                     for s in (current.get("status") or {}).get("subsetStatuses", []))
        plans = world.decide(now)
        if by_verb(plans, "evict"):
            assert closed, "evicted while the observed status still showed the subset open"
            evicted_at = now if evicted_at is None else evicted_at
        writes = [p for p in plans if p.verb == "patch_status"]
        if observe and writes:
            current = spread(adaptive=5)
            current["status"] = status_of(writes)
            world.put(current)
        now += step
    closed = any(s["name"] == "a" and s["conditions"][0]["status"] == "False"
                 for s in (current.get("status") or {}).get("subsetStatuses", []))
    if closed and evicted_at is None:
        # The round after the closed status was observed evicts.
        assert set(by_verb(world.decide(now), "evict")) == {"stuck"}
