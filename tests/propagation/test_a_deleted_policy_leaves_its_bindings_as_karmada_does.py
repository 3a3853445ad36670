"""A policy deleted while its templates stay, as Karmada's detector handles it
(``handlePolicyDeletion``, ``pkg/detector/detector.go``; the claim keys in
``pkg/detector/claim.go``; its scheduler ignores an unclaimed binding,
``pkg/scheduler/event_handler.go``): the binding's claim (the policy's permanent-id label and
name annotations) is removed and nothing else changes: no schedule, no copy created, changed or
deleted, even when the template changes, while the copies' status is still reflected into the
binding and the template. A policy that takes the template later claims the
binding again and schedules it. ``preserveResourcesOnDeletion`` (the policy's, carried by the
binding) applies when the template is deleted: the copies then stay in the members."""

from __future__ import annotations

from typing import Any

from events import codec, subjects
from events.messages import Observation, Plan
from spreadbus.engine.feature_set import plan_grants
from spreadbus.engine.plan_grants import Granted, PlanAuthority
from spreadbus.features.propagation.core.claim import PP_ID, PP_NAME, PP_NAMESPACE
from spreadbus.features.registry import BUILTIN
from tests.propagation.test_the_planner_propagates_through_members import (
    MEMBERS,
    NOW,
    STATIC,
    World,
    binding,
    policy,
    report,
    world,
)

AUTHORITY = PlanAuthority(plan_grants(BUILTIN))


def delete(w: World, cluster: str, group: str, resource: str, namespace: str,
           name: str) -> None:
    current = w.get(cluster, group, resource, namespace, name)
    assert current is not None
    w.seq += 1
    gone = Observation(cluster=cluster, group=group, version="v1", resource=resource,
                       event="DELETED", object=current)
    w.view.fold(w.seq, subjects.observation(cluster, group, resource, namespace, name),
                codec.encode(gone))


def copies(w: World) -> dict[str, Any]:
    return {m: w.get(m, "apps", "deployments", "default", "demo-deploy") for m in MEMBERS}


def claim(rb: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    metadata = rb["metadata"]
    labels = {k: v for k, v in metadata.get("labels", {}).items() if "policy.karmada.io" in k}
    annotations = {k: v for k, v in metadata.get("annotations", {}).items()
                   if "propagationpolicy.karmada.io" in k}
    return labels, annotations


def test_a_binding_carries_the_claim_of_the_policy_that_took_its_template() -> None:
    w = world()
    w.settle()
    pp = w.get("host", "policy.karmada.io", "propagationpolicies", "default", "demo")
    assert pp is not None
    assert claim(binding(w)) == ({PP_ID: pp["metadata"]["uid"]},
                                 {PP_NAME: "demo", PP_NAMESPACE: "default"})


def test_the_deleted_policys_claim_goes_and_the_schedule_and_copies_stay() -> None:
    w = world()
    w.settle()
    before = binding(w)
    placed = copies(w)
    delete(w, "host", "policy.karmada.io", "propagationpolicies", "default", "demo")
    wants = [x for x in w.decide(NOW + 10) if not w._true(x)]
    # One write per binding (the Deployment's and the ConfigMap's): its claim removed.
    assert sorted(x.target.name for x in wants) == ["demo-config-configmap",
                                                    "demo-deploy-deployment"]
    for want in wants:
        assert want.verb == "patch"
        assert want.patch == {"metadata": {
            "labels": {PP_ID: None, "clusterpropagationpolicy.karmada.io/permanent-id": None},
            "annotations": {PP_NAME: None, PP_NAMESPACE: None,
                            "clusterpropagationpolicy.karmada.io/name": None}}}
        assert want.governor is not None
        plan = Plan(id="p", cluster="host", verb="patch", rule="propagation",
                    target=want.target, patch=want.patch, governor=want.governor,
                    governor_generation=want.governor_generation)
        granted = AUTHORITY.authorize(plan)
        assert isinstance(granted, Granted), granted
        assert granted.covered_by is not None
        assert granted.covered_by.follows is None  # marks only
    w.apply(wants)
    after = binding(w)
    assert claim(after) == ({}, {})
    assert after["spec"] == before["spec"]
    # The template scaled: an unclaimed binding is not updated, nor are the copies.
    template = w.get("host", "apps", "deployments", "default", "demo-deploy")
    assert template is not None
    template["spec"]["replicas"] = 9
    template["metadata"]["generation"] += 1
    w.put("host", "apps", "deployments", template)
    w.view.mark_all_changed()
    assert [x for x in w.decide(NOW + 20) if not w._true(x)] == []
    assert binding(w)["spec"] == before["spec"]
    assert copies(w) == placed
    assert w.get("member1", "", "configmaps", "default", "demo-config") is not None
    # The copies' status is still reflected into the binding and summed into the template.
    report(w, "member1", 2, 2)
    report(w, "member2", 1, 1)
    w.settle(NOW + 30)
    items = {i["clusterName"]: i for i in binding(w)["status"]["aggregatedStatus"]}
    assert (items["member1"]["status"]["readyReplicas"],
            items["member2"]["status"]["readyReplicas"]) == (2, 1)
    template = w.get("host", "apps", "deployments", "default", "demo-deploy")
    assert template is not None
    assert template["status"]["readyReplicas"] == 3
    assert binding(w)["spec"] == before["spec"]


def test_a_policy_that_takes_the_template_later_claims_the_binding_again() -> None:
    w = world()
    w.settle()
    delete(w, "host", "policy.karmada.io", "propagationpolicies", "default", "demo")
    w.settle(NOW + 10)
    again = policy(STATIC)
    again["metadata"]["name"] = "again"
    again["spec"]["placement"]["clusterAffinity"]["clusterNames"] = ["member2"]
    w.put("host", "policy.karmada.io", "propagationpolicies", again)
    w.settle(NOW + 20)
    rb = binding(w)
    assert claim(rb) == ({PP_ID: again["metadata"]["uid"]},
                         {PP_NAME: "again", PP_NAMESPACE: "default"})
    assert rb["spec"]["clusters"] == [{"name": "member2", "replicas": 3}]
    assert copies(w)["member1"] is None


def test_preserve_resources_on_deletion_keeps_the_copies_when_the_template_goes() -> None:
    for preserve in (True, False):
        w = world()
        pp = w.get("host", "policy.karmada.io", "propagationpolicies", "default", "demo")
        assert pp is not None
        pp["spec"]["preserveResourcesOnDeletion"] = preserve
        w.put("host", "policy.karmada.io", "propagationpolicies", pp)
        w.settle()
        rb = binding(w)
        assert rb["spec"]["preserveResourcesOnDeletion"] is preserve
        # The template deleted: the host's garbage collector marks the binding deleted.
        rb["metadata"]["deletionTimestamp"] = "2026-05-22T11:01:00Z"
        w.put("host", "work.karmada.io", "resourcebindings", rb)
        delete(w, "host", "apps", "deployments", "default", "demo-deploy")
        wants = [(x.verb, x.cluster) for x in w.decide(NOW + 60)
                 if x.target.name in ("demo-deploy", "demo-deploy-deployment")]
        assert wants == ([("patch", "")] if preserve
                         else [("delete", "member1"), ("delete", "member2")]), preserve
