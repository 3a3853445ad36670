"""The propagation rule over one projection of a host and two members: a Deployment a
PropagationPolicy takes gets its ResourceBinding (named as Karmada names it), the scheduler's
``spec.clusters`` and ``Scheduled`` status, a copy with its share in each member (plans naming
that member), the copies' status in the binding and summed into the template; a
WorkloadRebalancer's trigger makes the next round Fresh; a ConfigMap is duplicated whole. Each
write is folded back as the actuator would leave it, so the rounds go as they go live."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from events import codec, subjects
from events.messages import Observation, Plan, SyncMarker
from kubesemantics import json_patch, merge_patch
from spreadbus.features.propagation.core.member_copy import follows
from spreadbus.features.propagation.planning.rule import PropagationRule
from spreadbus.features.propagation.planning.templates import KARMADA, TEMPLATES
from spreadbus.features.workloadrebalancer.planning.rule import WorkloadRebalancerRule
from spreadbus.projection.decision_log import DecisionLog
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.projection.planning import Desired, patch_satisfied, plans_for

NOW = datetime(2026, 5, 22, 11, 0, 0, tzinfo=UTC).timestamp()
MEMBERS = ("member1", "member2")


class World:
    """The projection, fed as the watchers feed it, and the actuators' writes folded back."""

    def __init__(self) -> None:
        self.view = KubeProjection()
        self.seq = 0
        self.uids = 0
        self.rule = PropagationRule("host")
        for cluster in ("host", *MEMBERS):
            for ref in (*KARMADA, *(t.ref for t in TEMPLATES)):
                self.sync(cluster, ref.group, ref.resource)

    def sync(self, cluster: str, group: str, resource: str) -> None:
        self.seq += 1
        marker = SyncMarker(cluster=cluster, group=group, version="v1", resource=resource,
                            complete=True)
        self.view.fold(self.seq, subjects.sync(cluster, group, resource), codec.encode(marker))

    def put(self, cluster: str, group: str, resource: str, obj: dict[str, Any]) -> None:
        metadata = obj.setdefault("metadata", {})
        if "uid" not in metadata:
            self.uids += 1
            metadata["uid"] = f"uid-{self.uids}"
        metadata.setdefault("generation", 1)
        self.seq += 1
        metadata["resourceVersion"] = str(self.seq)
        observed = Observation(cluster=cluster, group=group, version="v1", resource=resource,
                               event="ADDED", object=obj)
        self.view.fold(self.seq, subjects.observation(cluster, group, resource,
                                                      metadata.get("namespace", ""),
                                                      metadata["name"]), codec.encode(observed))

    def get(self, cluster: str, group: str, resource: str, namespace: str,
            name: str) -> dict[str, Any] | None:
        return self.view.get(cluster, group, resource, namespace, name)

    def decide(self, now: float = NOW) -> list[Desired]:
        return self.rule.desired(self.view, self.view.take_changed(), now)

    def apply(self, wants: list[Desired]) -> None:
        """Each wanted write as the API server would leave it (spec writes bump generation)."""
        for want in wants:
            cluster = want.cluster or "host"
            t = want.target
            if want.verb == "create":
                assert want.object is not None
                obj = copy.deepcopy(want.object)
                obj["metadata"]["name"] = t.name
                if t.namespace:
                    obj["metadata"]["namespace"] = t.namespace
                self.put(cluster, t.group, t.resource, obj)
                continue
            current = self.get(cluster, t.group, t.resource, t.namespace, t.name)
            assert current is not None
            if want.verb == "delete":
                self.seq += 1
                gone = Observation(cluster=cluster, group=t.group, version="v1",
                                   resource=t.resource, event="DELETED", object=current)
                self.view.fold(self.seq, subjects.observation(cluster, t.group, t.resource,
                                                              t.namespace, t.name),
                               codec.encode(gone))
                continue
            if want.patch_type == "json":
                updated = json_patch.apply(current, [op for op in want.patch
                                                     if op["op"] != "test"])
                bumps = any(not op["path"].startswith("/metadata") for op in want.patch)
            elif patch_satisfied(current, want.patch):
                continue
            else:
                updated = merge_patch.apply(current, want.patch)
                bumps = any(k != "metadata" for k in want.patch)
            if want.verb == "patch" and bumps:
                updated["metadata"]["generation"] = current["metadata"]["generation"] + 1
            self.put(cluster, t.group, t.resource, updated)

    def settle(self, now: float = NOW, rounds: int = 12) -> None:
        for _ in range(rounds):
            wants = self.decide(now)
            if not wants or all(self._true(w) for w in wants):
                return
            self.apply(wants)
        raise AssertionError("the rule did not settle")

    def _true(self, want: Desired) -> bool:
        t = want.target
        current = self.get(want.cluster or "host", t.group, t.resource, t.namespace, t.name)
        return (want.verb in ("patch", "patch_status") and want.patch_type == "merge"
                and current is not None and patch_satisfied(current, want.patch))


def member_cluster(name: str, cpu: str = "8", pods: str = "110") -> dict[str, Any]:
    return {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name},
            "spec": {"syncMode": "Pull"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "apiEnablements": [
                           {"groupVersion": "apps/v1", "resources": [
                               {"name": "deployments", "kind": "Deployment"}]},
                           {"groupVersion": "v1", "resources": [
                               {"name": "configmaps", "kind": "ConfigMap"}]}],
                       "resourceSummary": {"allocatable": {"cpu": cpu, "pods": pods}}}}


def deployment(replicas: int = 3) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "demo-deploy", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "demo"}},
                     "template": {"metadata": {"labels": {"app": "demo"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx",
                                                           "resources": {"requests": {
                                                               "cpu": "100m"}}}]}}}}


def policy(scheduling: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "demo", "namespace": "default"},
            "spec": {"resourceSelectors": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "demo-deploy"},
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "demo-config"}],
                "placement": {"clusterAffinity": {"clusterNames": list(MEMBERS)},
                              "replicaScheduling": scheduling}}}


STATIC = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
          "weightPreference": {"staticWeightList": [
              {"targetCluster": {"clusterNames": ["member1"]}, "weight": 2},
              {"targetCluster": {"clusterNames": ["member2"]}, "weight": 1}]}}


def world(scheduling: dict[str, Any] = STATIC) -> World:
    w = World()
    for name in MEMBERS:
        w.put("host", "cluster.karmada.io", "clusters", member_cluster(name))
    w.put("host", "policy.karmada.io", "propagationpolicies", policy(scheduling))
    w.put("host", "apps", "deployments", deployment())
    w.put("host", "", "configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": "demo-config", "namespace": "default"},
                                     "data": {"k": "v"}})
    return w


def binding(w: World, name: str = "demo-deploy-deployment") -> dict[str, Any]:
    found = w.get("host", "work.karmada.io", "resourcebindings", "default", name)
    assert found is not None
    return found


def test_a_taken_deployment_gets_its_binding_named_as_karmada_names_it() -> None:
    w = world()
    wants = w.decide()
    creates = sorted((x for x in wants if x.verb == "create"), key=lambda x: x.target.name)
    assert [(x.target.resource, x.target.namespace, x.target.name, x.cluster) for x in creates] \
        == [("resourcebindings", "default", "demo-config-configmap", ""),
            ("resourcebindings", "default", "demo-deploy-deployment", "")]
    rb = creates[1].object
    assert rb is not None
    template = w.get("host", "apps", "deployments", "default", "demo-deploy")
    assert template is not None
    assert rb["spec"]["resource"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                      "namespace": "default", "name": "demo-deploy",
                                      "uid": template["metadata"]["uid"]}
    assert rb["spec"]["replicas"] == 3
    assert rb["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    # The binding's writes serve the template, the copies' writes the binding.
    assert creates[1].governor is not None
    assert creates[1].governor.resource == "deployments"


def test_the_scheduler_writes_clusters_then_status_and_each_member_gets_its_share() -> None:
    w = world()
    w.settle()
    rb = binding(w)
    assert rb["spec"]["clusters"] == [{"name": "member1", "replicas": 2},
                                      {"name": "member2", "replicas": 1}]
    assert rb["status"]["schedulerObservedGeneration"] == rb["metadata"]["generation"]
    assert rb["status"]["lastScheduledTime"] == "2026-05-22T11:00:00Z"
    scheduled = next(c for c in rb["status"]["conditions"] if c["type"] == "Scheduled")
    assert (scheduled["status"], scheduled["reason"]) == ("True", "Success")
    assert "policy.karmada.io/applied-placement" in rb["metadata"]["annotations"]
    for member, share in (("member1", 2), ("member2", 1)):
        placed = w.get(member, "apps", "deployments", "default", "demo-deploy")
        assert placed is not None, member
        assert placed["spec"]["replicas"] == share
        assert placed["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx"
        assert placed["metadata"]["annotations"]["resourcebinding.karmada.io/name"] == \
            "demo-deploy-deployment"
        assert follows(rb, placed, None) == ""
        # The ConfigMap is duplicated whole.
        config = w.get(member, "", "configmaps", "default", "demo-config")
        assert config is not None
        assert config["data"] == {"k": "v"}
    # Nothing more to do: a round on the same state writes nothing.
    w.view.mark_all_changed()
    assert [x for x in w.decide() if not w._true(x)] == []


def report(w: World, member: str, ready: int, replicas: int) -> None:
    placed = w.get(member, "apps", "deployments", "default", "demo-deploy")
    assert placed is not None
    placed["status"] = {"observedGeneration": placed["metadata"]["generation"],
                        "replicas": replicas, "readyReplicas": ready,
                        "availableReplicas": ready, "updatedReplicas": replicas}
    w.put(member, "apps", "deployments", placed)


def test_the_members_status_is_aggregated_into_the_binding_and_summed_into_the_template() -> None:
    w = world()
    w.settle()
    report(w, "member1", 2, 2)
    report(w, "member2", 0, 1)
    w.settle()
    rb = binding(w)
    items = {i["clusterName"]: i for i in rb["status"]["aggregatedStatus"]}
    assert items["member1"]["health"] == "Healthy"
    assert items["member1"]["status"]["readyReplicas"] == 2
    assert items["member2"]["status"]["readyReplicas"] == 0
    template = w.get("host", "apps", "deployments", "default", "demo-deploy")
    assert template is not None
    status = template["status"]
    assert (status["replicas"], status["readyReplicas"], status["availableReplicas"],
            status["updatedReplicas"]) == (3, 2, 2, 3)
    assert status["observedGeneration"] == template["metadata"]["generation"]
    full = next(c for c in rb["status"]["conditions"] if c["type"] == "FullyApplied")
    assert full["status"] == "True"


def test_scaling_the_template_changes_each_members_share_and_a_dropped_cluster_loses_its_copy(
) -> None:
    w = world()
    w.settle()
    template = w.get("host", "apps", "deployments", "default", "demo-deploy")
    assert template is not None
    template["spec"]["replicas"] = 6
    template["metadata"]["generation"] += 1
    w.put("host", "apps", "deployments", template)
    w.settle(NOW + 10)
    assert binding(w)["spec"]["clusters"] == [{"name": "member1", "replicas": 4},
                                              {"name": "member2", "replicas": 2}]
    member1 = w.get("member1", "apps", "deployments", "default", "demo-deploy")
    assert member1 is not None
    assert member1["spec"]["replicas"] == 4
    # The policy now names member1 only: member2's copy is deleted.
    pp = w.get("host", "policy.karmada.io", "propagationpolicies", "default", "demo")
    assert pp is not None
    pp["spec"]["placement"]["clusterAffinity"]["clusterNames"] = ["member1"]
    w.put("host", "policy.karmada.io", "propagationpolicies", pp)
    w.settle(NOW + 20)
    assert binding(w)["spec"]["clusters"] == [{"name": "member1", "replicas": 6}]
    assert w.get("member2", "apps", "deployments", "default", "demo-deploy") is None
    assert w.get("member2", "", "configmaps", "default", "demo-config") is None


def test_a_rebalance_trigger_after_the_last_schedule_makes_the_next_round_fresh() -> None:
    dynamic = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
               "weightPreference": {"dynamicWeight": "AvailableReplicas"}}
    w = world(dynamic)
    w.settle()
    first = binding(w)["spec"]["clusters"]
    # member1 gains room; Steady keeps the layout (replicas unchanged, nothing to do).
    member1 = w.get("host", "cluster.karmada.io", "clusters", "", "member1")
    assert member1 is not None
    w.put("host", "cluster.karmada.io", "clusters", {
        **member_cluster("member1", cpu="800", pods="1100"), "metadata": member1["metadata"]})
    w.settle(NOW + 10)
    assert binding(w)["spec"]["clusters"] == first
    rb = binding(w)
    rb["spec"]["rescheduleTriggeredAt"] = "2026-05-22T11:00:30Z"
    rb["metadata"]["generation"] += 1
    w.put("host", "work.karmada.io", "resourcebindings", rb)
    wants = w.decide(NOW + 40)
    spec = next(x for x in wants if x.verb == "patch" and x.target.name == rb["metadata"]["name"])
    # Fresh: the whole count redivided by room (member1 now holds far more).
    assert spec.patch["spec"]["clusters"] != first
    w.apply(wants)
    w.settle(NOW + 40)
    after = binding(w)
    assert after["status"]["lastScheduledTime"] == "2026-05-22T11:00:40Z"
    member1 = w.get("member1", "apps", "deployments", "default", "demo-deploy")
    assert member1 is not None
    share = next(c["replicas"] for c in after["spec"]["clusters"] if c["name"] == "member1")
    assert member1["spec"]["replicas"] == share == 3


def test_a_binding_being_deleted_loses_its_copies_then_its_finalizer() -> None:
    w = world()
    w.settle()
    rb = binding(w)
    rb["metadata"]["deletionTimestamp"] = "2026-05-22T11:01:00Z"
    w.put("host", "work.karmada.io", "resourcebindings", rb)
    wants = [x for x in w.decide(NOW + 60) if not w._true(x)]
    assert sorted((x.verb, x.cluster) for x in wants) == [("delete", "member1"),
                                                           ("delete", "member2")]
    w.apply(wants)
    last = [x for x in w.decide(NOW + 61) if not w._true(x)]
    assert [(x.verb, x.patch) for x in last] == [("patch", {"metadata": {"finalizers": []}})]


def test_a_workloadrebalancer_triggers_the_fresh_schedule_that_spreads_anew() -> None:
    """Karmada's seed scenario on the planner: replicas stay where Steady put them though
    member1 gained room; a WorkloadRebalancer's trigger lands on the binding, its entry turns
    Successful, and the planner's next round is Fresh: all on member1, member2's copy gone."""
    dynamic = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
               "weightPreference": {"dynamicWeight": "AvailableReplicas"}}
    w = world(dynamic)
    w.settle()
    before = binding(w)["spec"]["clusters"]
    assert len(before) == 2
    member1 = w.get("host", "cluster.karmada.io", "clusters", "", "member1")
    assert member1 is not None
    w.put("host", "cluster.karmada.io", "clusters",
          {**member_cluster("member1", cpu="800", pods="1100"), "metadata": member1["metadata"]})
    w.settle(NOW + 10)
    assert binding(w)["spec"]["clusters"] == before
    rebalancers = WorkloadRebalancerRule("host")
    w.put("host", "apps.karmada.io", "workloadrebalancers", {
        "apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
        "metadata": {"name": "demo", "creationTimestamp": "2026-05-22T11:00:30Z"},
        "spec": {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                "name": "demo-deploy", "namespace": "default"}]}})
    changed = w.view.take_changed()
    first = rebalancers.desired(w.view, changed, NOW + 31)
    trigger = next(x for x in first if x.target.resource == "resourcebindings")
    assert trigger.patch == {"spec": {"rescheduleTriggeredAt": "2026-05-22T11:00:30Z"}}
    w.apply([trigger])
    second = rebalancers.desired(w.view, w.view.take_changed(), NOW + 32)
    status = next(x for x in second if x.verb == "patch_status").patch["status"]
    assert [e["result"] for e in status["observedWorkloads"]] == ["Successful"]
    assert status["finishTime"] == "2026-05-22T11:00:32Z"
    w.view.mark_all_changed()
    w.settle(NOW + 40)
    after = binding(w)
    assert after["spec"]["clusters"] == [{"name": "member1", "replicas": 3}]
    assert after["status"]["lastScheduledTime"] == "2026-05-22T11:00:40Z"
    assert w.get("member2", "apps", "deployments", "default", "demo-deploy") is None
    placed = w.get("member1", "apps", "deployments", "default", "demo-deploy")
    assert placed is not None
    assert placed["spec"]["replicas"] == 3


def test_a_cluster_without_api_enablements_serves_what_its_watcher_lists() -> None:
    w = world()
    for name in MEMBERS:
        cluster = w.get("host", "cluster.karmada.io", "clusters", "", name)
        assert cluster is not None
        del cluster["status"]["apiEnablements"]
        w.put("host", "cluster.karmada.io", "clusters", cluster)
    w.settle()
    assert binding(w)["spec"]["clusters"] == [{"name": "member1", "replicas": 2},
                                              {"name": "member2", "replicas": 1}]
    # A member whose watcher has not listed Deployments is no candidate.
    unlisted = World()
    for name in MEMBERS:
        cluster = member_cluster(name)
        del cluster["status"]["apiEnablements"]
        unlisted.put("host", "cluster.karmada.io", "clusters", cluster)
    unlisted.seq += 1
    marker = SyncMarker(cluster="member2", group="apps", version="v1", resource="deployments",
                        complete=False)
    unlisted.view.fold(unlisted.seq, subjects.sync("member2", "apps", "deployments"),
                       codec.encode(marker))
    unlisted.put("host", "policy.karmada.io", "propagationpolicies", policy(STATIC))
    unlisted.put("host", "apps", "deployments", deployment())
    unlisted.settle()
    assert binding(unlisted)["spec"]["clusters"] == [{"name": "member1", "replicas": 3}]


def test_a_noexecute_taint_evicts_after_its_toleration_and_the_old_copy_waits_for_the_new(
) -> None:
    """Seed 004's failover on the planner: member1 is tainted NoExecute; after the policy's
    tolerationSeconds the taint manager evicts the binding from it (a graceful eviction task),
    the scheduler puts every replica on member2, and member1's copy stays until member2's copy
    is healthy; member1's taint goes and nothing moves back."""
    w = World()
    for name in MEMBERS:
        w.put("host", "cluster.karmada.io", "clusters", member_cluster(name))
    pp = policy(STATIC)
    pp["spec"]["placement"]["clusterTolerations"] = [
        {"key": "fail", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}]
    w.put("host", "policy.karmada.io", "propagationpolicies", pp)
    w.put("host", "apps", "deployments", deployment())
    w.settle()
    assert binding(w)["spec"]["clusters"] == [{"name": "member1", "replicas": 2},
                                              {"name": "member2", "replicas": 1}]
    member1 = w.get("host", "cluster.karmada.io", "clusters", "", "member1")
    assert member1 is not None
    member1["spec"]["taints"] = [{"key": "fail", "effect": "NoExecute",
                                  "timeAdded": "2026-05-22T11:00:10Z"}]
    w.put("host", "cluster.karmada.io", "clusters", member1)
    w.settle(NOW + 11)
    assert binding(w)["spec"]["clusters"][0]["name"] == "member1"  # tolerated for 30 s
    # The planner looks again on its own exactly when the toleration runs out (11:00:10 + 30 s).
    assert w.rule.next_wake() == NOW + 40
    assert w.rule.due(NOW + 39.99) == set()
    at = NOW + 40
    due = w.rule.due(at)
    assert due
    w.apply(w.rule.desired(w.view, due, at))
    w.settle(at)
    rb = binding(w)
    assert rb["spec"]["clusters"] == [{"name": "member2", "replicas": 3}]
    tasks = rb["spec"]["gracefulEvictionTasks"]
    assert [(t["fromCluster"], t["reason"], t["replicas"]) for t in tasks] == [
        ("member1", "TaintUntolerated", 2)]
    # With no event, the rule looks again just after the task's grace period (10 minutes).
    stamped = datetime.fromisoformat(tasks[0]["creationTimestamp"]).timestamp()
    assert w.rule.next_wake() == pytest.approx(stamped + 600 + 0.001)
    # The old copy stays until the new one is healthy.
    kept = w.get("member1", "apps", "deployments", "default", "demo-deploy")
    assert kept is not None
    report(w, "member2", 3, 3)
    w.settle(at + 1)
    assert "gracefulEvictionTasks" not in binding(w)["spec"]
    assert w.get("member1", "apps", "deployments", "default", "demo-deploy") is None
    # member1 recovers: a Divided binding does not pull replicas back by itself.
    member1 = w.get("host", "cluster.karmada.io", "clusters", "", "member1")
    assert member1 is not None
    member1["spec"]["taints"] = []
    w.put("host", "cluster.karmada.io", "clusters", member1)
    w.settle(at + 60)
    assert binding(w)["spec"]["clusters"] == [{"name": "member2", "replicas": 3}]


def test_the_planners_plans_name_the_cluster_they_are_for() -> None:
    """Through the planner's diff: the bindings' plans are the host's, each copy's plan is its
    member's, on the subject the member's actuator consumes, governed by the host's binding."""
    w = world()
    log = DecisionLog()
    seen: list[Plan] = []
    for step in range(8):
        wants = w.decide(NOW + step)
        plans = plans_for(w.rule, w.view, log, wants, cluster="host", now=NOW + step)
        seen.extend(plans)
        w.apply([x for x in wants if not w._true(x)])
    creates = {(p.cluster, p.target.resource, p.target.name) for p in seen
               if p.verb == "create"}
    assert creates == {("host", "resourcebindings", "demo-deploy-deployment"),
                       ("host", "resourcebindings", "demo-config-configmap"),
                       ("member1", "deployments", "demo-deploy"),
                       ("member2", "deployments", "demo-deploy"),
                       ("member1", "configmaps", "demo-config"),
                       ("member2", "configmaps", "demo-config")}
    rb = binding(w)
    for p in seen:
        if p.cluster.startswith("member") and p.target.resource == "deployments":
            assert p.governor is not None
            assert (p.governor.resource, p.governor.name, p.governor.uid) == (
                "resourcebindings", "demo-deploy-deployment", rb["metadata"]["uid"])
            assert subjects.plan(p.cluster, p.verb, p.target.group, p.target.resource,
                                 p.target.namespace, p.target.name).startswith(
                f"plan.{p.cluster}.")


def test_a_round_that_fits_no_cluster_clears_the_clusters_and_says_why() -> None:
    w = world()
    w.settle()
    pp = w.get("host", "policy.karmada.io", "propagationpolicies", "default", "demo")
    assert pp is not None
    pp["spec"]["placement"]["clusterAffinity"]["clusterNames"] = ["member9"]
    w.put("host", "policy.karmada.io", "propagationpolicies", pp)
    w.settle(NOW + 5)
    rb = binding(w)
    assert "clusters" not in rb["spec"] or rb["spec"]["clusters"] == []
    scheduled = next(c for c in rb["status"]["conditions"] if c["type"] == "Scheduled")
    assert (scheduled["status"], scheduled["reason"]) == ("False", "NoClusterFit")
    assert scheduled["message"].startswith("0/2 clusters are available")
    assert rb["status"]["lastScheduledTime"] == "2026-05-22T11:00:00Z"  # only a success stamps
    for member in MEMBERS:
        assert w.get(member, "apps", "deployments", "default", "demo-deploy") is None


def test_a_copys_change_is_looked_at_for_its_binding_alone() -> None:
    w = world()
    w.settle()
    report(w, "member1", 1, 2)
    changed = w.view.take_changed()
    assert w.rule._affected(changed) == {("default", "demo-deploy-deployment")}
    wants = w.rule.desired(w.view, changed, NOW)
    assert {(x.target.resource, x.target.name) for x in wants} <= {
        ("resourcebindings", "demo-deploy-deployment"), ("deployments", "demo-deploy")}
    # A template of the host, or a binding, touches its own binding; a policy, every one.
    template = w.get("host", "", "configmaps", "default", "demo-config")
    assert template is not None
    w.put("host", "", "configmaps", template)
    assert w.rule._affected(w.view.take_changed()) == {("default", "demo-config-configmap")}
    pp = w.get("host", "policy.karmada.io", "propagationpolicies", "default", "demo")
    assert pp is not None
    w.put("host", "policy.karmada.io", "propagationpolicies", pp)
    assert w.rule._affected(w.view.take_changed()) is None


def test_the_affinity_term_a_round_scheduled_with_stays_in_the_status() -> None:
    """The spec is written in one round and the status in a later one that does not schedule:
    the term still reaches ``schedulerObservedAffinityName``, and stays there."""
    w = World()
    for name in MEMBERS:
        cluster = member_cluster(name)
        if name == "member1":
            cluster["spec"]["taints"] = [{"key": "cluster.karmada.io/unreachable",
                                          "effect": "NoSchedule"}]
        w.put("host", "cluster.karmada.io", "clusters", cluster)
    chosen = policy(STATIC)
    chosen["spec"]["placement"] = {
        "clusterAffinities": [{"affinityName": "primary", "clusterNames": ["member1"]},
                              {"affinityName": "backup", "clusterNames": ["member2"]}],
        "replicaScheduling": {"replicaSchedulingType": "Divided",
                              "replicaDivisionPreference": "Aggregated"}}
    w.put("host", "policy.karmada.io", "propagationpolicies", chosen)
    w.put("host", "apps", "deployments", deployment())
    w.settle()
    rb = binding(w)
    assert rb["spec"]["clusters"] == [{"name": "member2", "replicas": 3}]
    assert rb["status"]["schedulerObservedAffinityName"] == "backup"
    w.view.mark_all_changed()
    assert [x for x in w.decide() if not w._true(x)] == []


def test_the_taint_manager_evicts_no_faster_than_its_rate() -> None:
    """Two bindings on member1 when an untolerated NoExecute taint lands there: at Karmada's
    ``--resource-eviction-rate`` of 0.5/s the first is evicted at once, the second 2 s later,
    when the rule wakes for it by itself."""
    w = World()
    w.rule = PropagationRule("host", eviction_rate=0.5)
    for name in MEMBERS:
        w.put("host", "cluster.karmada.io", "clusters", member_cluster(name))
    pp = policy(STATIC)
    pp["spec"]["resourceSelectors"] = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": n} for n in ("one", "two")]
    w.put("host", "policy.karmada.io", "propagationpolicies", pp)
    for name in ("one", "two"):
        made = deployment()
        made["metadata"]["name"] = name
        w.put("host", "apps", "deployments", made)
    w.settle()
    member1 = w.get("host", "cluster.karmada.io", "clusters", "", "member1")
    assert member1 is not None
    member1["spec"]["taints"] = [{"key": "fail", "effect": "NoExecute",
                                  "timeAdded": "2026-05-22T11:00:10Z"}]
    w.put("host", "cluster.karmada.io", "clusters", member1)
    at = NOW + 11

    def evicted() -> list[str]:
        return [n for n in ("one", "two")
                if [c["name"] for c in binding(w, f"{n}-deployment")["spec"]["clusters"]]
                == ["member2"]]

    w.settle(at)
    assert len(evicted()) == 1
    assert w.rule.next_wake() == at + 2
    assert w.rule.due(at + 1.99) == set()
    due = w.rule.due(at + 2)
    w.apply(w.rule.desired(w.view, due, at + 2))
    w.settle(at + 2)
    assert evicted() == ["one", "two"]
