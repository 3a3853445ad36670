"""Two clusters in one projection: the same objects from ``east`` and ``west`` stay apart.

Pure: both clusters' observations are folded into one :class:`KubeProjection`, the planner
sides of WorkloadSpread, UnitedDeployment and PodUnavailableBudget run over it (each rule once
per cluster, :class:`~spreadbus.projection.cluster_rules.EveryCluster`) and :func:`plans_for`
turns their answers into plans. ``east`` holds three pods of the workload, ``west`` one, plus a
pod whose controller is a ReplicaSet only ``east`` has: every count follows its own cluster, no
owner adopts a pod of the other cluster, and every plan names the cluster of its target. The
features' bucket streams (WorkloadSpread's reservations, PodUnavailableBudget's spending) are
folded as the planner folds them: a record of ``west`` reaches ``west``'s rule alone.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import pytest

from events import codec, subjects
from events.buckets import entry_key
from events.messages import Observation, Plan, SyncMarker
from spreadbus.engine.feature import PlannerContext, PlannerSide, SideStream
from spreadbus.features.podunavailablebudget.core import budget_ledger
from spreadbus.features.podunavailablebudget.planner import planner_side as budget_side
from spreadbus.features.podunavailablebudget.settings import PodUnavailableBudgetSettings
from spreadbus.features.uniteddeployment.planner import planner_side as united_side
from spreadbus.features.uniteddeployment.settings import UnitedDeploymentSettings
from spreadbus.features.workloadspread.core import reservation_contract
from spreadbus.features.workloadspread.core.occupancy import Reservation
from spreadbus.features.workloadspread.planner import planner_side as spread_side
from spreadbus.features.workloadspread.settings import WorkloadSpreadSettings
from spreadbus.projection.decision_log import DecisionLog
from spreadbus.projection.kube_state import (
    KubeProjection,
    object_key,
    resource_key,
    side_resource_key,
)
from spreadbus.projection.planning import Rule, Timed, plans_for

T0 = 1_800_000_000.0
NS = "shop"
MATCHED = "apps.kruise.io/matched-workloadspread"
RESOURCES = {"Pod": ("", "v1", "pods"), "Deployment": ("apps", "v1", "deployments"),
             "ReplicaSet": ("apps", "v1", "replicasets"),
             "WorkloadSpread": ("apps.kruise.io", "v1alpha1", "workloadspreads"),
             "UnitedDeployment": ("apps.kruise.io", "v1alpha1", "uniteddeployments"),
             "PodUnavailableBudget": ("policy.kruise.io", "v1alpha1", "podunavailablebudgets")}
PODS_IN = {"east": 3, "west": 1}


def _owner(kind: str, name: str) -> list[dict[str, Any]]:
    return [{"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": f"uid-{name}",
             "controller": True}]


def deployment() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": NS, "uid": "uid-web", "generation": 1},
            "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}}


def replicaset(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}",
                         "labels": {"app": "web"}, "ownerReferences": _owner("Deployment", "web")},
            "spec": {"replicas": 0, "template": deployment()["spec"]["template"]}}


def pod(name: str, replicaset: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}",
                         "creationTimestamp": "2027-01-15T08:00:00Z",
                         "labels": {"app": "web"},
                         "annotations": {MATCHED: json.dumps({"name": "ws", "subset": "a"}),
                                         "kruise.io/related-pub": "pub"},
                         "ownerReferences": _owner("ReplicaSet", replicaset)},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": "Running",
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def spread() -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
            "metadata": {"name": "ws", "namespace": NS, "uid": "uid-ws", "generation": 1},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "subsets": [{"name": "a", "maxReplicas": 4, "requiredNodeSelectorTerm": term},
                                 {"name": "b"}]}}


def budget() -> dict[str, Any]:
    return {"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
            "metadata": {"name": "pub", "namespace": NS, "uid": "uid-pub", "generation": 1,
                         "annotations": {"pub.kruise.io/protect-total-replicas": "4"}},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}}


def united() -> dict[str, Any]:
    labels = {"app": "sample"}
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
            "metadata": {"name": "ud", "namespace": NS, "uid": "uid-ud", "generation": 1},
            "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                     "template": {"statefulSetTemplate": {
                         "metadata": {"labels": labels},
                         "spec": {"selector": {"matchLabels": labels},
                                  "template": {"metadata": {"labels": labels},
                                               "spec": {"containers": [
                                                   {"name": "c", "image": "x"}]}}}}},
                     "topology": {"subsets": [{"name": "one", "replicas": 1}, {"name": "two"}]}}}


def objects_of(cluster: str) -> list[dict[str, Any]]:
    """The same objects in both clusters; east also has a second ReplicaSet, and west a pod
    whose controller is that ReplicaSet (which west does not have)."""
    out = [deployment(), replicaset("web-h1"), spread(), budget(), united()]
    out += [pod(f"web-{i}", "web-h1") for i in range(PODS_IN[cluster])]
    if cluster == "east":
        out.append(replicaset("east-only"))
    else:
        out.append(pod("stray", "east-only"))
    return out


class World:
    def __init__(self, home: str, sides: Iterable[PlannerSide]) -> None:
        self.home = home
        self.view = KubeProjection()
        self.log = DecisionLog()
        sides = list(sides)
        self.rules: list[Rule] = [rule for side in sides for rule in side.rules]
        self.streams: dict[str, SideStream] = {s.stream: s for side in sides
                                               for s in side.streams}
        self.seq = 0

    def observe(self, cluster: str, obj: dict[str, Any]) -> None:
        self.seq += 1
        group, version, resource = RESOURCES[obj["kind"]]
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.seq)
        message = Observation(cluster=cluster, group=group, version=version, resource=resource,
                              event="ADDED", object=obj)
        subject = subjects.observation(cluster, group, resource, meta["namespace"], meta["name"])
        self.view.apply(self.seq, subject, codec.encode(message))

    def bucket_entry(self, stream: str, bucket: str, key: str, data: bytes) -> None:
        """One entry of a feature's bucket, folded as the planner folds its side streams."""
        side = self.streams[stream]
        self.seq += 1
        found = side.fold(self.seq, f"$KV.{bucket}.{key}", data)
        assert found is not None
        cluster, okey = found
        self.view.changed.add((side_resource_key(cluster, side.resource), okey))

    def listed(self, cluster: str) -> None:
        """Every resource the rules read is listed in ``cluster``."""
        for ref in {ref for rule in self.rules for ref in rule.resources}:
            self.seq += 1
            marker = SyncMarker(cluster=cluster, group=ref.group, version=ref.version,
                                resource=ref.resource, complete=True)
            self.view.apply(self.seq, subjects.sync(cluster, ref.group, ref.resource),
                            codec.encode(marker))

    def decide(self, now: float) -> dict[str, list[Plan]]:
        changed = self.view.take_changed()
        for rule in self.rules:
            if isinstance(rule, Timed):
                changed |= rule.due(now)
        if not changed:
            return {rule.name: [] for rule in self.rules}  # as the planner: no key, no round
        return {rule.name: plans_for(rule, self.view, self.log,
                                     rule.desired(self.view, changed, now),
                                     cluster=self.home, now=now)
                for rule in self.rules}


def sides(home: str) -> list[PlannerSide]:
    async def build() -> list[PlannerSide]:
        return [
            await spread_side(PlannerContext(cluster=home, settings=WorkloadSpreadSettings())),
            await united_side(PlannerContext(cluster=home, settings=UnitedDeploymentSettings())),
            await budget_side(PlannerContext(cluster=home,
                                             settings=PodUnavailableBudgetSettings())),
        ]

    return asyncio.run(build())


def status(plans: list[Plan], cluster: str) -> dict[str, Any]:
    (plan,) = [p for p in plans if p.verb == "patch_status" and p.cluster == cluster]
    found: dict[str, Any] = plan.patch["status"]
    return found


@pytest.fixture(params=["local", "east"], ids=["home-elsewhere", "home-east"])
def plans(request: pytest.FixtureRequest) -> tuple[World, dict[str, list[Plan]]]:
    """One round over both clusters, from a planner whose own cluster holds nothing, or east."""
    world = World(request.param, sides(request.param))
    for cluster in ("east", "west"):
        for obj in objects_of(cluster):
            world.observe(cluster, obj)
        world.listed(cluster)
    return world, world.decide(T0)


def test_same_named_objects_of_two_clusters_stay_apart(
    plans: tuple[World, dict[str, list[Plan]]],
) -> None:
    world, _ = plans
    east = world.view.get("east", "", "pods", NS, "web-2")
    assert east is not None
    assert east["metadata"]["name"] == "web-2"
    assert world.view.get("west", "", "pods", NS, "web-2") is None, "west has one pod of web"
    for kind in ("Deployment", "WorkloadSpread", "UnitedDeployment", "PodUnavailableBudget"):
        group, _, resource = RESOURCES[kind]
        assert resource_key("east", group, resource) != resource_key("west", group, resource)
        assert len(world.view.objects("east", group, resource)) == 1
        assert len(world.view.objects("west", group, resource)) == 1


def test_every_plan_names_the_cluster_of_its_target(
    plans: tuple[World, dict[str, list[Plan]]],
) -> None:
    world, by_rule = plans
    for rule in ("workloadspread", "uniteddeployment", "podunavailablebudget"):
        assert {p.cluster for p in by_rule[rule]} == {"east", "west"}, rule
    for plan in (p for found in by_rule.values() for p in found):
        target = plan.target
        observed = world.view.stored(resource_key(plan.cluster, target.group, target.resource),
                                     object_key(target.namespace, target.name))
        if plan.verb == "create":
            assert observed is None
            assert plan.governor is not None
            assert world.view.exists(plan.cluster, plan.governor.group, plan.governor.resource,
                                     plan.governor.namespace, plan.governor.name)
        else:
            assert observed is not None, f"{plan.cluster}: {target.resource}/{target.name}"
            assert plan.causes == [observed.seq], "decided on its own cluster's observation"
    ids = [p.id for found in by_rule.values() for p in found]
    assert len(ids) == len(set(ids)), "the same decision in two clusters is two plans"


def test_each_cluster_counts_only_its_own_pods(
    plans: tuple[World, dict[str, list[Plan]]],
) -> None:
    _, by_rule = plans
    for cluster, pods in PODS_IN.items():
        spread_status = status(by_rule["workloadspread"], cluster)
        (subset_a,) = [s for s in spread_status["subsetStatuses"] if s["name"] == "a"]
        assert subset_a["missingReplicas"] == 4 - pods, cluster
        # The budget selects by label in its own cluster: west's stray pod is west's.
        budget_status = status(by_rule["podunavailablebudget"], cluster)
        assert budget_status["currentAvailable"] == (pods if cluster == "east" else pods + 1)
    creates = sorted((p.cluster, p.target.name) for p in by_rule["uniteddeployment"]
                     if p.verb == "create" and p.target.resource == "statefulsets")
    assert [c for c, _ in creates] == ["east", "east", "west", "west"]
    assert [n for c, n in creates if c == "east"] == [n for c, n in creates if c == "west"]


def test_an_owner_in_east_never_adopts_a_pod_in_west(
    plans: tuple[World, dict[str, list[Plan]]],
) -> None:
    world, by_rule = plans
    east_rs = world.view.get("east", "apps", "replicasets", NS, "east-only")
    assert east_rs is not None
    assert world.view.get("east", "", "pods", NS, "stray") is None
    graph = world.view.owners
    assert graph.pods(("east", "apps", "ReplicaSet", NS, "east-only")) == set()
    assert graph.pods(("west", "apps", "ReplicaSet", NS, "east-only")) == {
        (resource_key("west", "", "pods"), object_key(NS, "stray"))}
    assert len(graph.pods(("east", "apps", "ReplicaSet", NS, "web-h1"))) == PODS_IN["east"]
    assert len(graph.pods(("west", "apps", "ReplicaSet", NS, "web-h1"))) == PODS_IN["west"]
    for plan in (p for found in by_rule.values() for p in found):
        if plan.target.name == "stray":
            assert plan.cluster == "west", plan


def test_a_change_in_one_cluster_is_decided_for_that_cluster_alone(
    plans: tuple[World, dict[str, list[Plan]]],
) -> None:
    world, _ = plans
    world.observe("west", pod("web-1", "web-h1"))
    later = world.decide(T0 + 60)
    assert {p.cluster for found in later.values() for p in found} == {"west"}
    (subset_a,) = [s for s in status(later["workloadspread"], "west")["subsetStatuses"]
                   if s["name"] == "a"]
    assert subset_a["missingReplicas"] == 4 - PODS_IN["west"] - 1
    assert status(later["podunavailablebudget"], "west")["currentAvailable"] == 3


def test_a_cluster_listed_after_its_objects_is_decided_once_listed() -> None:
    world = World("local", sides("local"))
    for obj in objects_of("west"):
        world.observe("west", obj)
    assert world.decide(T0) == {"workloadspread": [], "uniteddeployment": [],
                                "podunavailablebudget": []}, "west is not listed yet"
    world.listed("west")  # a sync marker changes no object
    later = world.decide(T0 + 1)
    for rule in ("workloadspread", "uniteddeployment", "podunavailablebudget"):
        assert later[rule], rule
        assert {p.cluster for p in later[rule]} == {"west"}


def test_a_bucket_record_of_west_reaches_the_rule_of_west_alone(
    plans: tuple[World, dict[str, list[Plan]]],
) -> None:
    world, _ = plans
    at = datetime.fromtimestamp(T0, UTC)
    taken = Reservation(f"{NS}/ws", "v1", "a", "web-new", "creating", at)
    world.bucket_entry(reservation_contract.STREAM, reservation_contract.BUCKET,
                       entry_key("west", NS, "ws"),
                       reservation_contract.ENTRIES.encode(
                           reservation_contract.Ledger().with_reservation(taken)))
    spent = budget_ledger.BudgetEntry(disrupted={"web-0": "2027-01-15T08:00:00Z"})
    world.bucket_entry(budget_ledger.STREAM, budget_ledger.BUCKET, entry_key("west", NS, "pub"),
                       budget_ledger.ENTRIES.encode(spent))
    later = world.decide(T0 + 1)
    assert {p.cluster for found in later.values() for p in found} == {"west"}
    versioned = status(later["workloadspread"], "west")["versionedSubsetStatuses"]["v1"]
    (subset_a,) = [s for s in versioned if s["name"] == "a"]
    assert subset_a["creatingPods"] == {"web-new": "2027-01-15T08:00:00Z"}
    assert status(later["podunavailablebudget"], "west")["disruptedPods"] == {
        "web-0": "2027-01-15T08:00:00Z"}
    # East decides again on a pod of its own, and still holds no record of west's.
    world.observe("east", pod("web-3", "web-h1"))
    east = world.decide(T0 + 2)
    assert {p.cluster for found in east.values() for p in found} == {"east"}
    east_spread = status(east["workloadspread"], "east")
    assert "creatingPods" not in json.dumps(east_spread)
    assert "disruptedPods" not in status(east["podunavailablebudget"], "east")
