"""A cluster-scoped template: a ClusterRole a ClusterPropagationPolicy takes gets its
ClusterResourceBinding (no namespace, named as Karmada names it) and a copy in each member,
planned for that member and governed by the binding as the host holds it. A ClusterRole can
grant rights, so the checks a member's actuator runs are the whole defence: a role the host's
binding does not name, a copy with other rules, a role named in a namespace, a copy for a
cluster the binding does not schedule are refused, and a member's own role of the template's
name is neither patched nor deleted for the binding; and without the opt-in watch no ClusterRole
is read or propagated."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from events import codec, subjects
from events.messages import ObjectRef, Plan, Precondition, SyncMarker, Verb
from services.actuator.scope_check import OutOfScope, Uncached, judge
from spreadbus.engine.feature_set import plan_grants
from spreadbus.engine.governor_check import Refusal, judge_written
from spreadbus.engine.plan_grants import Granted, PlanAuthority, Refused
from spreadbus.engine.plan_scope import named
from spreadbus.features.propagation.core.member_copy import follows, member_copy
from spreadbus.features.propagation.settings import PropagationSettings
from spreadbus.features.registry import BUILTIN
from spreadbus.features.workloadrebalancer.planning.rule import WorkloadRebalancerRule
from tests.propagation.test_the_planner_propagates_through_members import (
    MEMBERS,
    NOW,
    World,
    member_cluster,
)

AUTHORITY = PlanAuthority(plan_grants(BUILTIN))
RBAC = "rbac.authorization.k8s.io"
ROLE = {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": "demo-role"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
POLICY = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
          "metadata": {"name": "demo"},
          "spec": {"resourceSelectors": [{"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
                                          "name": "demo-role"}],
                   "placement": {"clusterAffinity": {"clusterNames": list(MEMBERS)}}}}


def propagated() -> tuple[World, dict[str, Any], dict[str, Any]]:
    """The host's ClusterRole and its binding once both members hold their copies."""
    w = World()
    for name in MEMBERS:
        cluster = member_cluster(name)
        del cluster["status"]["apiEnablements"]  # served: what each member's watcher lists
        w.put("host", "cluster.karmada.io", "clusters", cluster)
    w.put("host", "policy.karmada.io", "clusterpropagationpolicies", copy.deepcopy(POLICY))
    w.put("host", RBAC, "clusterroles", copy.deepcopy(ROLE))
    w.settle()
    role = w.get("host", RBAC, "clusterroles", "", "demo-role")
    rb = w.get("host", "work.karmada.io", "clusterresourcebindings", "", "demo-role-clusterrole")
    assert role is not None
    assert rb is not None
    return w, role, rb


def plan(rb: dict[str, Any], verb: Verb, name: str = "demo-role", *, namespace: str = "",
         obj: dict[str, Any] | None = None, patch: Any = None) -> Plan:
    meta = rb["metadata"]
    governor = ObjectRef(group="work.karmada.io", version="v1alpha2",
                         resource="clusterresourcebindings", name=meta["name"], uid=meta["uid"])
    return Plan(id="p", cluster="member1", verb=verb, rule="propagation",
                target=ObjectRef(group=RBAC, version="v1", resource="clusterroles",
                                 namespace=namespace, name=name),
                object=obj, patch=patch, patch_type="json" if patch is not None else "merge",
                governor=governor, governor_generation=meta["generation"],
                precondition=Precondition(resource_version="7" if verb == "patch" else ""))


def judged(p: Plan, rb: dict[str, Any], before: dict[str, Any] | None) -> str:
    """Why the member's actuator refuses ``p`` (the grant, the binding naming its target, what
    it writes following from the binding as the host's API server holds it); "" to apply."""
    granted = AUTHORITY.authorize(p)
    if isinstance(granted, Refused):
        return granted.message
    assert isinstance(granted, Granted)
    grant = granted.covered_by
    assert grant is not None
    target = p.object if p.verb == "create" else before
    if not named(grant, rb, target or {}, p.target.namespace):
        return "the binding does not name it"
    verdict = judge_written(p, grant, rb, before)
    return verdict.message if isinstance(verdict, Refusal) else ""


def test_a_clusterrole_gets_its_cluster_binding_and_a_copy_in_each_member() -> None:
    w, role, rb = propagated()
    assert rb["spec"]["resource"] == {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
                                      "name": "demo-role", "uid": role["metadata"]["uid"]}
    assert "namespace" not in rb["metadata"]
    assert [c["name"] for c in rb["spec"]["clusters"]] == list(MEMBERS)
    assert rb["metadata"]["ownerReferences"][0]["kind"] == "ClusterRole"
    for member in MEMBERS:
        placed = w.get(member, RBAC, "clusterroles", "", "demo-role")
        assert placed is not None, member
        assert placed["rules"] == ROLE["rules"]
        annotations = placed["metadata"]["annotations"]
        assert annotations["resourcebinding.karmada.io/name"] == "demo-role-clusterrole"
        assert "resourcebinding.karmada.io/namespace" not in annotations
        assert follows(rb, placed, None) == ""
    # The copies' plans serve the binding, the binding's the ClusterRole.
    w.view.mark_all_changed()
    assert [x for x in w.decide() if not w._true(x)] == []


def test_the_planners_copy_is_applied() -> None:
    _, role, rb = propagated()
    wanted = member_copy(role, "member1", 0, "demo-role-clusterrole", "")
    assert judged(plan(rb, "create", obj=wanted), rb, None) == ""


def escalated(obj: dict[str, Any]) -> None:
    obj["rules"] = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]


def aggregating(obj: dict[str, Any]) -> None:
    obj["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {"any": "thing"}}]}


def elsewhere(obj: dict[str, Any]) -> None:
    obj["metadata"]["annotations"]["multicluster.spreadbus.io/cluster"] = "member9"


def unmarked(obj: dict[str, Any]) -> None:
    del obj["metadata"]["annotations"]["resourcebinding.karmada.io/name"]


@pytest.mark.parametrize(("forge", "why"), [
    (escalated, "not the template"),
    (aggregating, "not the template"),
    (elsewhere, "does not schedule it to cluster 'member9'"),
    (unmarked, "does not name the binding"),
])
def test_a_forged_copy_of_the_role_is_refused(forge: Any, why: str) -> None:
    _, role, rb = propagated()
    wanted = member_copy(role, "member1", 0, "demo-role-clusterrole", "")
    forge(wanted)
    assert why in judged(plan(rb, "create", obj=wanted), rb, None)


def test_a_role_no_binding_asks_for_is_refused() -> None:
    """The attack: a plan, on a real binding at its generation, asks member1's actuator to
    create a ClusterRole the host never asked for (all verbs on everything)."""
    _, role, rb = propagated()
    admin = member_copy(role, "member1", 0, "demo-role-clusterrole", "")
    admin["metadata"]["name"] = "spreadbus-admin"
    escalated(admin)
    assert judged(plan(rb, "create", "spreadbus-admin", obj=admin), rb, None) \
        == "the binding does not name it"
    # Named as the binding's role but with the binding's name only as a claim: still refused.
    admin["metadata"]["name"] = "demo-role"
    assert "not the template" in judged(plan(rb, "create", obj=admin), rb, None)
    # In a namespace (cluster-scoped roles have none): refused before anything is read.
    assert "cluster-scoped" in judged(plan(rb, "create", namespace="default", obj=admin), rb,
                                      None)
    # A patch widening the copy's rules.
    before = member_copy(role, "member1", 0, "demo-role-clusterrole", "")
    before["metadata"]["resourceVersion"] = "7"
    widen = [{"op": "add", "path": "/rules/0/verbs/-", "value": "escalate"}]
    assert "not the template" in judged(plan(rb, "patch", patch=widen), rb, before)
    # Writing anything outside a copy's content and marks (its owner references): refused.
    owners = [{"op": "add", "path": "/metadata/ownerReferences", "value": []}]
    assert "may not write /metadata/ownerReferences" in judged(
        plan(rb, "patch", patch=owners), rb, before)


def test_clusterroles_are_watched_only_where_their_propagation_is_turned_on() -> None:
    assert PropagationSettings().watches() == ()
    assert PropagationSettings(propagate_configmaps=True).watches() == ("v1/configmaps",)
    assert PropagationSettings(propagate_clusterroles=True).watches() == (
        f"{RBAC}/v1/clusterroles",)
    # A member whose watcher does not list ClusterRoles gets no copy.
    w = World()
    for name in MEMBERS:
        cluster = member_cluster(name)
        del cluster["status"]["apiEnablements"]
        w.put("host", "cluster.karmada.io", "clusters", cluster)
    w.seq += 1
    marker = SyncMarker(cluster="member2", group=RBAC, version="v1", resource="clusterroles",
                        complete=False)
    w.view.fold(w.seq, subjects.sync("member2", RBAC, "clusterroles"), codec.encode(marker))
    w.put("host", "policy.karmada.io", "clusterpropagationpolicies", copy.deepcopy(POLICY))
    w.put("host", RBAC, "clusterroles", copy.deepcopy(ROLE))
    w.settle()
    assert w.get("member1", RBAC, "clusterroles", "", "demo-role") is not None
    assert w.get("member2", RBAC, "clusterroles", "", "demo-role") is None


@pytest.mark.parametrize("verb", ["delete", "patch"])
def test_a_members_own_role_of_the_templates_name_is_not_touched_for_the_binding(
        verb: Verb) -> None:
    """A member's ClusterRole that has the template's name but is no copy (it was there before,
    the planner never adopted it) is neither deleted nor patched for the binding: the actuator's
    check reads it and finds it does not name the binding back."""
    _, role, rb = propagated()
    own = {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
           "metadata": {"name": "demo-role", "uid": "member-own", "resourceVersion": "7"},
           "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}
    copied = member_copy(role, "member1", 0, "demo-role-clusterrole", "")
    copied["metadata"].update(uid="copy", resourceVersion="7")
    p = plan(rb, verb, patch=[{"op": "add", "path": "/metadata/labels", "value": {}}]
             if verb == "patch" else None)
    granted = AUTHORITY.authorize(p)
    assert isinstance(granted, Granted)
    assert granted.grant is not None

    async def read(path: str) -> dict[str, Any]:
        assert path == "/apis/work.karmada.io/v1alpha2/clusterresourcebindings/" \
                       "demo-role-clusterrole"
        return rb

    def verdict(target: dict[str, Any]) -> object:
        assert granted.grant is not None
        return asyncio.run(judge(p, granted.grant, target, Uncached(read)))

    assert verdict(copied) is None
    refused = verdict(own)
    assert isinstance(refused, OutOfScope)
    assert "does not name it back" in refused.message


def test_a_rebalancer_naming_the_role_triggers_its_cluster_binding() -> None:
    """The seed's batch rebalancer names a ClusterRole: its ClusterResourceBinding gets the
    trigger (a plan the built-in grants allow: the rebalancer names the binding's resource),
    and the entry turns Successful once the binding holds it."""
    w, _, rb = propagated()
    rebalancers = WorkloadRebalancerRule("host")
    w.put("host", "apps.karmada.io", "workloadrebalancers", {
        "apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
        "metadata": {"name": "demo", "creationTimestamp": "2026-05-22T11:00:30Z"},
        "spec": {"workloads": [{"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
                                "name": "demo-role"}]}})
    rebalancer = w.get("host", "apps.karmada.io", "workloadrebalancers", "", "demo")
    assert rebalancer is not None
    first = rebalancers.desired(w.view, w.view.take_changed(), NOW + 31)
    (trigger,) = [x for x in first if x.target.resource == "clusterresourcebindings"]
    assert (trigger.target.namespace, trigger.target.name) == ("", "demo-role-clusterrole")
    assert trigger.patch == {"spec": {"rescheduleTriggeredAt": "2026-05-22T11:00:30Z"}}
    p = Plan(id="t", cluster="host", verb="patch", rule=rebalancers.name, target=trigger.target,
             patch=trigger.patch, governor=trigger.governor,
             governor_generation=trigger.governor_generation)
    granted = AUTHORITY.authorize(p)
    assert isinstance(granted, Granted), granted
    assert granted.grant is not None
    assert named(granted.grant, rebalancer, rb, "")
    w.apply([trigger])
    second = rebalancers.desired(w.view, w.view.take_changed(), NOW + 32)
    status = next(x for x in second if x.verb == "patch_status").patch["status"]
    assert status["observedWorkloads"] == [{
        "result": "Successful",
        "workload": {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "name": "demo-role"}}]


def test_a_clusterrole_controls_only_its_cluster_scoped_binding() -> None:
    """A cluster-scoped governor with a ``controlled`` grant: its plans may not reach into a
    namespace (a ResourceBinding, or a ClusterResourceBinding named in one)."""
    _, role, rb = propagated()
    governor = ObjectRef(group=RBAC, version="v1", resource="clusterroles", name="demo-role",
                         uid=role["metadata"]["uid"])

    def create(resource: str, namespace: str) -> object:
        target = ObjectRef(group="work.karmada.io", version="v1alpha2", resource=resource,
                           namespace=namespace, name="demo-role-clusterrole")
        return AUTHORITY.authorize(Plan(
            id="p", cluster="host", verb="create", rule="propagation", target=target,
            object={k: v for k, v in rb.items() if k != "status"}, governor=governor,
            governor_generation=role["metadata"]["generation"]))

    assert isinstance(create("clusterresourcebindings", ""), Granted)
    refused = create("clusterresourcebindings", "default")
    assert isinstance(refused, Refused)
    assert "cluster-scoped" in refused.message
    assert isinstance(create("resourcebindings", "default"), Refused)
