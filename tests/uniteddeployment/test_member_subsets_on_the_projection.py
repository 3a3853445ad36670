"""Subsets in other clusters, decided by the planner's rule over one projection of three clusters.

A host holds the UnitedDeployment and the Karmada Clusters; ``member1`` and ``member2`` hold
the subset workloads and their pods. The planner side of UnitedDeployment runs over the
projection (one rule per cluster), :func:`plans_for` turns its answers into plans, and a small
in-memory apply stands in for each cluster's actuator and workload controller: what a plan
writes is observed back in the cluster the plan names, a StatefulSet runs its replicas as Ready
pods. Every plan must name the cluster its target is in.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from events import codec, subjects
from events.messages import Observation, Plan, SyncMarker
from kubesemantics import merge_patch
from spreadbus.clusterregistry.registry import CLUSTER_ANNOTATION
from spreadbus.engine.feature import PlannerContext
from spreadbus.features.uniteddeployment.core.member_workloads import IDENTITY_ANNOTATION
from spreadbus.features.uniteddeployment.planner import planner_side
from spreadbus.features.uniteddeployment.planning.rule import MEMBER_FINALIZER
from spreadbus.features.uniteddeployment.settings import UnitedDeploymentSettings
from spreadbus.projection.decision_log import DecisionLog
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.projection.planning import Rule, Timed, plans_for

T0 = 1_800_000_000.0
NS = "shop"
HOST = "host"
RESOURCES = {
    "Pod": ("", "v1", "pods"),
    "StatefulSet": ("apps", "v1", "statefulsets"),
    "ControllerRevision": ("apps", "v1", "controllerrevisions"),
    "UnitedDeployment": ("apps.kruise.io", "v1alpha1", "uniteddeployments"),
    "Cluster": ("cluster.karmada.io", "v1alpha1", "clusters"),
}
KIND_OF = {(g, r): k for k, (g, _, r) in RESOURCES.items()}
KARMADA = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster"}


def karmada_cluster(name: str, ready: str = "True") -> dict[str, Any]:
    taints = [] if ready == "True" else [{"key": "cluster.karmada.io/unreachable",
                                          "effect": "NoSchedule"}]
    return {**KARMADA, "metadata": {"name": name, "namespace": ""},
            "spec": {"syncMode": "Pull", "taints": taints},
            "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "x"}]}}


def united(replicas: int) -> dict[str, Any]:
    labels = {"app": "shop"}
    term = {"matchExpressions": [{"key": "node", "operator": "In", "values": ["n"]}]}
    subsets = [
        {"name": "a", "targetCluster": {"name": "member1"}, "nodeSelectorTerm": term},
        {"name": "b", "targetCluster": {"name": "member1"}},
        {"name": "c", "targetCluster": {"name": "member2"}},
    ]
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
            "metadata": {"name": "ud", "namespace": NS, "uid": "uid-ud", "generation": 1},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"statefulSetTemplate": {
                         "metadata": {"labels": labels},
                         "spec": {"selector": {"matchLabels": labels},
                                  "template": {"metadata": {"labels": labels},
                                               "spec": {"containers": [
                                                   {"name": "c", "image": "x"}]}}}}},
                     "topology": {"clusterRegistry": {"clusterType": KARMADA},
                                  "subsets": subsets}}}


class Fleet:
    """Three clusters' objects, the planner's projection of them and its decision log."""

    def __init__(self) -> None:
        self.view = KubeProjection()
        self.log = DecisionLog()
        self.seq = 0
        self.uids = 0
        self.objects: dict[str, dict[tuple[str, str, str], dict[str, Any]]] = {}
        side = asyncio.run(planner_side(PlannerContext(cluster=HOST,
                                                       settings=UnitedDeploymentSettings())))
        (self.rule,) = side.rules
        self.plans: list[Plan] = []

    def put(self, cluster: str, obj: dict[str, Any], event: str = "ADDED") -> None:
        self.seq += 1
        group, version, resource = RESOURCES[obj["kind"]]
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.seq)
        if event != "DELETED" and "uid" not in meta:
            self.uids += 1
            meta["uid"] = f"uid-{self.uids}"
        key = (obj["kind"], meta.get("namespace", ""), meta["name"])
        if event == "DELETED":
            self.objects.setdefault(cluster, {}).pop(key, None)
        else:
            self.objects.setdefault(cluster, {})[key] = obj
        message = Observation(cluster=cluster, group=group, version=version, resource=resource,
                              event=event, object=obj)
        subject = subjects.observation(cluster, group, resource, meta.get("namespace", ""),
                                       meta["name"])
        self.view.apply(self.seq, subject, codec.encode(message))

    def listed(self, cluster: str) -> None:
        """Every resource the rule reads is listed in ``cluster``."""
        for ref in self.rule.resources:
            self.seq += 1
            marker = SyncMarker(cluster=cluster, group=ref.group, version=ref.version,
                                resource=ref.resource, complete=True)
            self.view.apply(self.seq, subjects.sync(cluster, ref.group, ref.resource),
                            codec.encode(marker))

    def decide(self, now: float) -> list[Plan]:
        rule: Rule = self.rule
        changed = self.view.take_changed()
        if isinstance(rule, Timed):
            changed |= rule.due(now)
        if not changed:
            return []
        # Each plan is applied before the next round, so the log needs no record of it.
        return plans_for(rule, self.view, self.log, rule.desired(self.view, changed, now),
                         cluster=HOST, now=now)

    def get(self, cluster: str, kind: str, name: str) -> dict[str, Any] | None:
        return self.objects.get(cluster, {}).get((kind, NS, name))

    def apply(self, plan: Plan) -> None:
        """What the named cluster's actuator, and then its workload controller, would do."""
        target = plan.target
        kind = KIND_OF[(target.group, target.resource)]
        found = self.objects.get(plan.cluster, {}).get((kind, target.namespace, target.name))
        if plan.verb == "create":
            assert found is None, f"{plan.cluster}: {target.name} created twice"
            assert plan.object is not None
            obj = copy.deepcopy(plan.object)
        elif plan.verb == "delete":
            assert found is not None, f"{plan.cluster}: {target.name} is not there"
            self.put(plan.cluster, found, "DELETED")
            for pod in [o for (k, _, _), o in self.objects.get(plan.cluster, {}).items()
                        if k == "Pod" and o["metadata"]["ownerReferences"][0]["name"]
                        == target.name]:
                self.put(plan.cluster, pod, "DELETED")
            return
        else:
            assert found is not None, f"{plan.cluster}: {target.name} is not there"
            obj = merge_patch.apply(copy.deepcopy(found), plan.patch)
        self.put(plan.cluster, obj)
        if kind == "StatefulSet":
            self.run(plan.cluster, obj)

    def run(self, cluster: str, sts: dict[str, Any]) -> None:
        """The StatefulSet controller: ``spec.replicas`` Ready pods."""
        want = sts["spec"]["replicas"]
        name = sts["metadata"]["name"]
        pods = {k[2] for k in self.objects.get(cluster, {}) if k[0] == "Pod"
                and k[2].startswith(f"{name}-")}
        template = sts["spec"]["template"]
        for i in range(want):
            if f"{name}-{i}" not in pods:
                self.put(cluster, {
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": f"{name}-{i}", "namespace": NS,
                                 "labels": dict(template["metadata"]["labels"]),
                                 "creationTimestamp": "2027-01-15T08:00:00Z",
                                 "ownerReferences": [{"apiVersion": "apps/v1",
                                                      "kind": "StatefulSet", "name": name,
                                                      "uid": sts["metadata"]["uid"],
                                                      "controller": True}]},
                    "spec": {**copy.deepcopy(template["spec"]), "nodeName": "n"},
                    "status": {"phase": "Running",
                               "conditions": [{"type": "Ready", "status": "True"}]}})
        for pod in sorted(pods):
            if int(pod.rsplit("-", 1)[1]) >= want:
                found = self.get(cluster, "Pod", pod)
                assert found is not None
                self.put(cluster, found, "DELETED")
        settled = copy.deepcopy(sts)
        settled["status"] = {"replicas": want, "readyReplicas": want, "updatedReplicas": want}
        self.put(cluster, settled)

    def converge(self, now: float = T0, rounds: int = 30) -> None:
        """Rounds a second apart, as the planner's wake-ups ask, until nothing is planned and
        nothing is due within the next second."""
        rule: Rule = self.rule
        for i in range(rounds):
            plans = self.decide(now + i)
            self.plans.extend(plans)
            for plan in plans:
                self.apply(plan)
            wake = rule.next_wake() if isinstance(rule, Timed) else None
            if not plans and (wake is None or wake > now + i + 1):
                return
        raise AssertionError("no fixed point")

    def replicas(self) -> dict[str, tuple[str, int]]:
        """Subset -> (its cluster, its workload's replicas), from every cluster."""
        out: dict[str, tuple[str, int]] = {}
        for cluster, objects in self.objects.items():
            for (kind, _, _), obj in objects.items():
                if kind == "StatefulSet":
                    subset = obj["metadata"]["labels"]["apps.kruise.io/subset-name"]
                    assert subset not in out, f"subset {subset} twice"
                    out[subset] = (cluster, obj["spec"]["replicas"])
        return out

    def pods(self, cluster: str) -> int:
        return sum(1 for k in self.objects.get(cluster, {}) if k[0] == "Pod")

    def ud(self) -> dict[str, Any]:
        found = self.get(HOST, "UnitedDeployment", "ud")
        assert found is not None
        return found


def started(replicas: int = 6) -> Fleet:
    fleet = Fleet()
    for name in ("member1", "member2"):
        fleet.put(HOST, karmada_cluster(name))
    fleet.put(HOST, united(replicas))
    for cluster in (HOST, "member1", "member2"):
        fleet.listed(cluster)
    fleet.converge()
    return fleet


def scale(fleet: Fleet, replicas: int, now: float) -> None:
    ud = copy.deepcopy(fleet.ud())
    ud["spec"]["replicas"] = replicas
    ud["metadata"]["generation"] += 1
    fleet.put(HOST, ud, "MODIFIED")
    fleet.converge(now)


def test_each_subset_runs_in_its_cluster_scaled_6_10_4_with_the_status_summed() -> None:
    fleet = started(6)
    assert fleet.replicas() == {"a": ("member1", 2), "b": ("member1", 2), "c": ("member2", 2)}
    assert (fleet.pods("member1"), fleet.pods("member2"), fleet.pods(HOST)) == (4, 2, 0)
    for replicas, expected, at in ((10, (3, 3, 4), T0 + 100), (4, (1, 1, 2), T0 + 200)):
        scale(fleet, replicas, at)
        assert {s: n for s, (_, n) in fleet.replicas().items()} == dict(
            zip("abc", expected, strict=True))
        status = fleet.ud()["status"]
        assert (status["replicas"], status["readyReplicas"]) == (replicas, replicas)
        assert fleet.pods("member1") + fleet.pods("member2") == replicas
    for plan in fleet.plans:
        if plan.target.resource == "statefulsets":
            assert plan.cluster in ("member1", "member2")
            assert plan.governor is not None
            assert plan.governor.name == "ud"
        else:
            assert plan.cluster == HOST, plan.target
    revisions = [k for c, objs in fleet.objects.items() for k in objs
                 if k[0] == "ControllerRevision" and c == HOST]
    assert revisions, "revisions stay in the host"


def test_a_member_workload_names_its_uniteddeployment_and_the_uniteddeployment_holds_a_finalizer(
) -> None:
    fleet = started()
    (sts,) = [o for (k, _, _), o in fleet.objects["member1"].items() if k == "StatefulSet"
              and o["metadata"]["labels"]["apps.kruise.io/subset-name"] == "a"]
    assert "ownerReferences" not in sts["metadata"]
    assert CLUSTER_ANNOTATION not in sts["metadata"]["annotations"]
    assert IDENTITY_ANNOTATION in sts["metadata"]["annotations"]
    terms = sts["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "node", "operator": "In", "values": ["n"]}]}]
    assert MEMBER_FINALIZER in fleet.ud()["metadata"]["finalizers"]


def test_deleting_the_uniteddeployment_deletes_its_member_workloads_then_lets_it_go() -> None:
    fleet = started()
    ud = copy.deepcopy(fleet.ud())
    ud["metadata"]["deletionTimestamp"] = "2027-01-15T09:00:00Z"
    fleet.put(HOST, ud, "MODIFIED")
    fleet.converge(T0 + 100)
    assert fleet.replicas() == {}
    assert fleet.ud()["metadata"]["finalizers"] == []


def test_a_workload_whose_uniteddeployment_is_gone_is_deleted() -> None:
    fleet = started()
    ud = fleet.ud()
    fleet.put(HOST, ud, "DELETED")
    fleet.converge(T0 + 100)
    assert fleet.replicas() == {}


def test_an_unreachable_member_moves_adaptive_pods_and_they_stay_when_it_returns() -> None:
    fleet = Fleet()
    for name in ("member1", "member2"):
        fleet.put(HOST, karmada_cluster(name))
    ud = united(6)
    ud["spec"]["topology"]["scheduleStrategy"] = {
        "type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30,
                                         "unschedulableDuration": 60}}
    for subset in ud["spec"]["topology"]["subsets"][:2]:
        subset["maxReplicas"] = 2
    fleet.put(HOST, ud)
    for cluster in (HOST, "member1", "member2"):
        fleet.listed(cluster)
    fleet.converge()
    assert {s: n for s, (_, n) in fleet.replicas().items()} == {"a": 2, "b": 2, "c": 2}
    fleet.put(HOST, karmada_cluster("member1", "Unknown"), "MODIFIED")
    fleet.converge(T0 + 100)
    assert {s: n for s, (_, n) in fleet.replicas().items()} == {"a": 0, "b": 0, "c": 6}
    (a,) = [s for s in fleet.ud()["status"]["subsetStatuses"] if s["name"] == "a"]
    assert (a["conditions"][0]["status"], a["conditions"][0]["reason"]) == (
        "False", "ClusterUnavailable")
    fleet.put(HOST, karmada_cluster("member1"), "MODIFIED")
    fleet.converge(T0 + 1000)
    assert {s: n for s, (_, n) in fleet.replicas().items()} == {"a": 0, "b": 0, "c": 6}
    (a,) = [s for s in fleet.ud()["status"]["subsetStatuses"] if s["name"] == "a"]
    assert a["conditions"][0]["status"] == "True"


def test_a_subset_whose_target_changes_moves_to_the_new_cluster() -> None:
    fleet = started()
    ud = copy.deepcopy(fleet.ud())
    ud["spec"]["topology"]["subsets"][2]["targetCluster"] = {"name": "member1"}
    ud["metadata"]["generation"] += 1
    fleet.put(HOST, ud, "MODIFIED")
    fleet.converge(T0 + 100)
    assert fleet.replicas() == {"a": ("member1", 2), "b": ("member1", 2), "c": ("member1", 2)}
    assert fleet.pods("member2") == 0
    deleted = [p for p in fleet.plans if p.verb == "delete"]
    assert [(p.cluster, p.governor_cluster) for p in deleted] == [("member2", HOST)]


def test_writes_to_a_member_wait_until_its_objects_are_listed() -> None:
    fleet = Fleet()
    for name in ("member1", "member2"):
        fleet.put(HOST, karmada_cluster(name))
    fleet.put(HOST, united(6))
    fleet.listed(HOST)
    fleet.listed("member1")
    fleet.converge()
    assert fleet.replicas() == {"a": ("member1", 2), "b": ("member1", 2)}
    assert not [p for p in fleet.plans if p.cluster == "member2"]
    fleet.listed("member2")  # a quiet cluster: its listing changes no object
    fleet.converge(T0 + 100)
    assert fleet.replicas() == {"a": ("member1", 2), "b": ("member1", 2), "c": ("member2", 2)}


def test_a_reservation_label_of_a_member_pod_is_planned_in_that_member() -> None:
    from dataclasses import replace

    from spreadbus.features.uniteddeployment.core.reconcile import Reconciliation
    from spreadbus.features.uniteddeployment.planning.rule import UnitedDeploymentRule

    fleet = started()
    host = fleet.rule.rule_of(HOST)
    assert isinstance(host, UnitedDeploymentRule)
    pod = next(o for (k, _, _), o in fleet.objects["member2"].items() if k == "Pod")
    label = {"apps.kruise.io/united-deployment-reserved-pod": "true"}
    answer = replace(Reconciliation(), pod_labels={f"{NS}/{pod['metadata']['name']}": label})
    node = ("apps.kruise.io", "UnitedDeployment", NS, "ud")
    (want,) = [w for w in host.writes(fleet.view, fleet.ud(), node, answer)
               if w.target.resource == "pods"]
    assert (want.cluster, want.governor_cluster) == ("member2", HOST)


def test_a_deleted_cluster_makes_its_subset_unschedulable_in_the_status() -> None:
    fleet = started()
    gone = fleet.objects[HOST][("Cluster", "", "member2")]
    fleet.put(HOST, gone, "DELETED")
    fleet.converge(T0 + 100)
    (c,) = [s for s in fleet.ud()["status"]["subsetStatuses"] if s["name"] == "c"]
    assert (c["conditions"][0]["status"], c["conditions"][0]["reason"],
            c["conditions"][0]["message"]) == (
        "False", "ClusterUnavailable",
        "spec.topology.clusterRegistry no longer finds cluster member2")
    assert fleet.replicas()["c"] == ("member2", 2), "without Adaptive its workload stays"


def test_pods_a_cut_off_member_kept_do_not_pull_adaptive_pods_back_when_it_returns() -> None:
    """member1 hears of no plan while it is unreachable, so its pods run on through the cut;
    when it returns, the planner sees them before member1 applies the plans it missed, and
    they must not count again: the share Adaptive moved stays moved."""
    fleet = Fleet()
    for name in ("member1", "member2"):
        fleet.put(HOST, karmada_cluster(name))
    ud = united(6)
    ud["spec"]["topology"]["scheduleStrategy"] = {
        "type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30,
                                         "unschedulableDuration": 60}}
    for subset in ud["spec"]["topology"]["subsets"][:2]:
        subset["maxReplicas"] = 2
    fleet.put(HOST, ud)
    for cluster in (HOST, "member1", "member2"):
        fleet.listed(cluster)
    fleet.converge()
    held: list[Plan] = []
    reaching = fleet.apply

    def cut_off(plan: Plan) -> None:
        if plan.cluster == "member1":
            held.append(plan)
        else:
            reaching(plan)

    fleet.apply = cut_off  # type: ignore[method-assign]
    fleet.put(HOST, karmada_cluster("member1", "Unknown"), "MODIFIED")
    fleet.converge(T0 + 100)
    assert {s: n for s, (_, n) in fleet.replicas().items()} == {"a": 2, "b": 2, "c": 6}
    assert held, "the scale-in of member1's subsets waits for the link"
    fleet.put(HOST, karmada_cluster("member1"), "MODIFIED")
    fleet.converge(T0 + 110)
    assert fleet.replicas()["c"] == ("member2", 6), "member1's kept pods pulled pods back"
    fleet.apply = reaching  # type: ignore[method-assign]
    for plan in held:
        reaching(plan)
    fleet.converge(T0 + 120)
    assert {s: n for s, (_, n) in fleet.replicas().items()} == {"a": 0, "b": 0, "c": 6}
    fleet.converge(T0 + 1000)
    assert {s: n for s, (_, n) in fleet.replicas().items()} == {"a": 0, "b": 0, "c": 6}
