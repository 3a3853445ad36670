"""CloneSets and UnitedDeployments as resource templates, over one projection of a host and two
members: each member's copy gets its share of ``spec.replicas``, the copies' status is reflected
into the binding and aggregated into the template as Karmada's third-party customizations for
``apps.kruise.io`` do, a member's UnitedDeployment controller spreads that member's share over
its own subsets, and a member's actuator writes a copy only as the host's binding asks."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from events.messages import ObjectRef
from spreadbus.features.propagation.core.aggregation import health, item, template_status
from spreadbus.features.propagation.core.member_copy import follows, member_copy
from spreadbus.features.uniteddeployment.core.reconcile import reconcile_grouped
from spreadbus.features.uniteddeployment.planning.rule import Fleet, UnitedDeploymentRule
from spreadbus.projection.planning import Desired

from .test_a_member_writes_only_what_the_binding_asks import judged, plan
from .test_the_planner_propagates_through_members import MEMBERS, NOW, STATIC, World

KRUISE = "apps.kruise.io"


def member_cluster(name: str) -> dict[str, Any]:
    return {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name}, "spec": {"syncMode": "Pull"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "apiEnablements": [
                           {"groupVersion": "apps.kruise.io/v1alpha1", "resources": [
                               {"name": "clonesets", "kind": "CloneSet"},
                               {"name": "uniteddeployments", "kind": "UnitedDeployment"}]}],
                       "resourceSummary": {"allocatable": {"cpu": "8", "pods": "110"}}}}


POD = {"metadata": {"labels": {"app": "demo"}},
       "spec": {"containers": [{"name": "c", "image": "nginx",
                                "resources": {"requests": {"cpu": "100m"}}}]}}


def cloneset(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "demo", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "demo"}},
                     "template": POD}}


def united(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
            "metadata": {"name": "demo", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "demo"}},
                     "template": {"deploymentTemplate": {
                         "metadata": {"labels": {"app": "demo"}},
                         "spec": {"selector": {"matchLabels": {"app": "demo"}},
                                  "template": POD}}},
                     "topology": {"subsets": [
                         {"name": "a", "nodeSelectorTerm": {"matchExpressions": [
                             {"key": "zone", "operator": "In", "values": ["a"]}]}},
                         {"name": "b", "nodeSelectorTerm": {"matchExpressions": [
                             {"key": "zone", "operator": "In", "values": ["b"]}]}}]}}}


def world(template: dict[str, Any]) -> World:
    w = World()
    for name in MEMBERS:
        w.put("host", "cluster.karmada.io", "clusters", member_cluster(name))
    w.put("host", "policy.karmada.io", "propagationpolicies", {
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "demo", "namespace": "default"},
        "spec": {"resourceSelectors": [{"apiVersion": template["apiVersion"],
                                        "kind": template["kind"], "name": "demo"}],
                 "placement": {"clusterAffinity": {"clusterNames": list(MEMBERS)},
                               "replicaScheduling": STATIC}}})
    w.put("host", KRUISE, resource(template), template)
    w.settle()
    return w


def resource(template: dict[str, Any]) -> str:
    return "clonesets" if template["kind"] == "CloneSet" else "uniteddeployments"


def shares(w: World, kind: str) -> dict[str, int]:
    out = {}
    rb = w.get("host", "work.karmada.io", "resourcebindings", "default", f"demo-{kind}")
    assert rb is not None
    for member in MEMBERS:
        placed = w.get(member, KRUISE, f"{kind}s", "default", "demo")
        assert placed is not None, member
        assert follows(rb, placed, None) == ""
        out[member] = placed["spec"]["replicas"]
    return out


def test_a_clonesets_replicas_are_divided_and_its_status_aggregated_as_karmada_does() -> None:
    w = world(cloneset(3))
    assert shares(w, "cloneset") == {"member1": 2, "member2": 1}
    for member, (ready, revision) in (("member1", (2, "r2")), ("member2", (0, "r1"))):
        placed = w.get(member, KRUISE, "clonesets", "default", "demo")
        assert placed is not None
        total = placed["spec"]["replicas"]
        placed["status"] = {"observedGeneration": placed["metadata"]["generation"],
                            "replicas": total, "updatedReplicas": total,
                            "readyReplicas": ready, "availableReplicas": ready,
                            "updatedReadyReplicas": ready, "expectedUpdatedReplicas": total,
                            "updateRevision": revision, "currentRevision": revision,
                            "labelSelector": "app=demo"}
        w.put(member, KRUISE, "clonesets", placed)
    w.settle()
    rb = w.get("host", "work.karmada.io", "resourcebindings", "default", "demo-cloneset")
    assert rb is not None
    items = {i["clusterName"]: i for i in rb["status"]["aggregatedStatus"]}
    assert items["member1"]["health"] == "Healthy"
    assert items["member2"]["health"] == "Unhealthy"  # its updated replica is not available
    assert items["member1"]["status"] == {
        "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2,
        "updatedReadyReplicas": 2, "expectedUpdatedReplicas": 2, "updateRevision": "r2",
        "currentRevision": "r2", "observedGeneration": 1, "labelSelector": "app=demo"}
    template = w.get("host", KRUISE, "clonesets", "default", "demo")
    assert template is not None
    assert template["status"] == {
        "observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 2,
        "availableReplicas": 2, "updatedReadyReplicas": 2, "expectedUpdatedReplicas": 3,
        # The last copy's (member2's) revisions, as Karmada's customization takes them.
        "updateRevision": "r1", "currentRevision": "r1", "labelSelector": "app=demo"}


def test_a_uniteddeployments_share_is_split_over_its_subsets_in_each_member() -> None:
    w = world(united(5))
    assert shares(w, "uniteddeployment") == {"member1": 3, "member2": 2}
    placed = w.get("member1", KRUISE, "uniteddeployments", "default", "demo")
    assert placed is not None
    # The member's own UnitedDeployment controller takes its copy: 3 over subsets a and b.
    rule = UnitedDeploymentRule("member1", reconcile=reconcile_grouped, fleet=Fleet(),
                                min_interval_seconds=0.0)
    w.view.mark_all_changed()
    wants: list[Desired] = rule.desired(w.view, w.view.take_changed(), NOW)
    subsets = [x for x in wants if x.verb == "create" and x.target.resource == "deployments"]
    assert {x.cluster for x in subsets} == {"member1"}
    assert sorted(x.object["spec"]["replicas"] for x in subsets if x.object) == [1, 2]


def test_a_uniteddeployments_status_is_aggregated_as_karmadas_customization_does() -> None:
    template = united(5)
    template["metadata"]["generation"] = 2
    template["status"] = {"observedGeneration": 1}

    def copied(member: str, replicas: int, ready: int, made_from: str,
             condition: str) -> dict[str, Any]:
        return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
                "metadata": {"name": "demo", "generation": 4, "annotations": {
                    "resourcetemplate.karmada.io/generation": made_from}},
                "spec": {"replicas": replicas},
                "status": {"observedGeneration": 4, "replicas": replicas,
                           "updatedReplicas": replicas, "readyReplicas": ready,
                           "availableReplicas": ready, "unavailableReplicas": replicas - ready,
                           "conditions": [{"type": "SubsetProvisioned", "status": condition}]}}

    one, two = copied("member1", 3, 3, "2", "True"), copied("member2", 2, 1, "1", "False")
    assert (health(one), health(two)) == ("Healthy", "Unhealthy")
    items = [item("member1", one), item("member2", two)]
    assert items[1]["status"] == {
        "replicas": 2, "updatedReplicas": 2, "readyReplicas": 1, "availableReplicas": 1,
        "unavailableReplicas": 1, "observedGeneration": 4,
        "conditions": [{"type": "SubsetProvisioned", "status": "False"}],
        "generation": 4, "resourceTemplateGeneration": 1}
    # member2's copy was made from generation 1: the template's observedGeneration stays; the
    # conditions are merged by type, the last copy's winning.
    assert template_status(template, items) == {
        "replicas": 5, "updatedReplicas": 5, "readyReplicas": 4, "availableReplicas": 4,
        "unavailableReplicas": 1, "observedGeneration": 1,
        "conditions": [{"type": "SubsetProvisioned", "status": "False"}]}
    two["metadata"]["annotations"]["resourcetemplate.karmada.io/generation"] = "2"
    assert template_status(template, [items[0], item("member2", two)])[
        "observedGeneration"] == 2
    # No copy reports yet: the template's generation and zeros.
    assert template_status(template, []) == {
        "replicas": 0, "updatedReplicas": 0, "readyReplicas": 0, "availableReplicas": 0,
        "unavailableReplicas": 0, "observedGeneration": 2}



@pytest.mark.parametrize("template", [cloneset(3), united(3)], ids=["CloneSet", "UnitedDeployment"])
def test_a_members_actuator_writes_a_kruise_copy_only_as_the_binding_asks(
    template: dict[str, Any],
) -> None:
    kind = template["kind"].lower()
    w = world(copy.deepcopy(template))
    rb = w.get("host", "work.karmada.io", "resourcebindings", "default", f"demo-{kind}")
    held = w.get("host", KRUISE, f"{kind}s", "default", "demo")
    assert rb is not None
    assert held is not None
    target = ObjectRef(group=KRUISE, version="v1alpha1", resource=f"{kind}s",
                       namespace="default", name="demo")
    wanted = member_copy(held, "member1", 2, rb["metadata"]["name"], "default")
    assert judged(plan(rb, "create", obj=wanted, target=target), rb, None) == ""
    more = copy.deepcopy(wanted)
    more["spec"]["replicas"] = 50
    assert "gives cluster member1 2 replicas, not 50" in judged(
        plan(rb, "create", obj=more, target=target), rb, None)
    other = copy.deepcopy(wanted)
    other["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    assert "not the template" in judged(plan(rb, "create", obj=other, target=target), rb, None)


def test_health_is_unknown_where_karmadas_script_fails_and_false_where_it_says_so() -> None:
    clone = cloneset(2)
    clone["metadata"]["generation"] = 3
    assert health(clone) == "Unknown"  # no status: the script indexes nil
    clone["status"] = {"observedGeneration": 2}
    assert health(clone) == "Unhealthy"  # generation not observed yet
    clone["status"] = {"observedGeneration": 3}
    assert health(clone) == "Unknown"  # updatedReplicas compared while missing
    clone["status"] = {"observedGeneration": 3, "updatedReplicas": 2, "availableReplicas": 2}
    assert health(clone) == "Healthy"
    ud = united(2)
    assert health(ud) == "Unhealthy"  # the UnitedDeployment script checks for a status first
