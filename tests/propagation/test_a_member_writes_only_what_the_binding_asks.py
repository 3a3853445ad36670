"""Forged propagation plans, through the built-in grants and the checks the actuator runs on
what it reads (the host's binding as governor of a member's copy, the template as governor of
its binding): the planner's own plans pass; a copy with another image, more replicas than the
cluster's share, for a cluster the binding does not schedule, naming another binding, or a
patch that swaps the content, is refused; so is a binding that does not carry its template's
replicas or digest; and the propagation rule may not touch what its grants do not name."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from events.messages import ObjectRef, Plan, Precondition, Verb
from kubesemantics import json_patch
from spreadbus.engine.feature_set import plan_grants
from spreadbus.engine.governor_check import Refusal, judge_written
from spreadbus.engine.plan_grants import Granted, PlanAuthority, Refused
from spreadbus.features.propagation.core.member_copy import copy_patch, member_copy
from spreadbus.features.registry import BUILTIN
from tests.propagation.test_the_planner_propagates_through_members import (
    binding,
    world,
)

AUTHORITY = PlanAuthority(plan_grants(BUILTIN))
DEPLOY = ObjectRef(group="apps", version="v1", resource="deployments", namespace="default",
                   name="demo-deploy")


def scheduled() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The host's template and binding once scheduled 2:1, and member1's copy."""
    w = world()
    w.settle()
    template = w.get("host", "apps", "deployments", "default", "demo-deploy")
    placed = w.get("member1", "apps", "deployments", "default", "demo-deploy")
    assert template is not None
    assert placed is not None
    return template, binding(w), placed


def plan(rb: dict[str, Any], verb: Verb, *, obj: dict[str, Any] | None = None,
         patch: Any = None, target: ObjectRef = DEPLOY, rule: str = "propagation") -> Plan:
    meta = rb["metadata"]
    governor = ObjectRef(group="work.karmada.io", version="v1alpha2",
                         resource="resourcebindings", namespace=meta["namespace"],
                         name=meta["name"], uid=meta["uid"])
    return Plan(id="p", cluster="member1", verb=verb, rule=rule, target=target,
                patch=patch, patch_type="json" if patch is not None else "merge", object=obj,
                governor=governor, governor_generation=meta["generation"],
                precondition=Precondition(resource_version="7" if verb == "patch" else ""))


def judged(p: Plan, governor: dict[str, Any], before: dict[str, Any] | None) -> str:
    granted = AUTHORITY.authorize(p)
    assert isinstance(granted, Granted), granted
    assert granted.covered_by is not None
    verdict = judge_written(p, granted.covered_by, governor, before)
    return verdict.message if isinstance(verdict, Refusal) else ""


def at_version(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"]["resourceVersion"] = "7"
    return out


def test_the_planners_copy_follows_from_the_binding() -> None:
    template, rb, _ = scheduled()
    wanted = member_copy(template, "member1", 2, rb["metadata"]["name"], "default")
    assert judged(plan(rb, "create", obj=wanted), rb, None) == ""


def forged_image(obj: dict[str, Any]) -> None:
    obj["spec"]["template"]["spec"]["containers"][0]["image"] = "evil:latest"


def more_replicas(obj: dict[str, Any]) -> None:
    obj["spec"]["replicas"] = 50


def other_cluster(obj: dict[str, Any]) -> None:
    obj["metadata"]["annotations"]["multicluster.spreadbus.io/cluster"] = "member9"


def other_binding(obj: dict[str, Any]) -> None:
    obj["metadata"]["annotations"]["resourcebinding.karmada.io/name"] = "other-deployment"


def host_network(obj: dict[str, Any]) -> None:
    obj["spec"]["template"]["spec"]["hostNetwork"] = True


@pytest.mark.parametrize(("forge", "why"), [
    (forged_image, "not the template"),
    (host_network, "not the template"),
    (more_replicas, "gives cluster member1 2 replicas, not 50"),
    (other_cluster, "does not schedule it to cluster 'member9'"),
    (other_binding, "does not name the binding"),
])
def test_a_forged_copy_is_refused(forge: Any, why: str) -> None:
    template, rb, _ = scheduled()
    wanted = member_copy(template, "member1", 2, rb["metadata"]["name"], "default")
    forge(wanted)
    assert why in judged(plan(rb, "create", obj=wanted), rb, None)


def test_a_patch_may_set_the_share_or_the_template_and_nothing_else() -> None:
    template, rb, placed = scheduled()
    before = at_version(placed)
    # What the member's API server defaults stays out of the check.
    before["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "Always"
    before["spec"]["revisionHistoryLimit"] = 10
    before["spec"]["replicas"] = 1
    wanted = member_copy(template, "member1", 2, rb["metadata"]["name"], "default")
    share = copy_patch(wanted, before)
    assert share is not None
    assert [op["path"] for op in share] == ["/metadata/resourceVersion", "/spec/replicas"]
    assert judged(plan(rb, "patch", patch=share), rb, before) == ""
    # The template changes: the body is replaced by the new template's (the binding holds its
    # digest as the host's actuator checked it), the defaulted fields go with the old body.
    changed = copy.deepcopy(template)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    rb_new = copy.deepcopy(rb)
    rb_new["metadata"]["annotations"]["propagation.spreadbus.io/template-digest"] = \
        member_copy(changed, "member1", 2, rb["metadata"]["name"], "default")[
            "metadata"]["annotations"]["propagation.spreadbus.io/template-digest"]
    update = copy_patch(member_copy(changed, "member1", 2, rb["metadata"]["name"], "default"),
                        before)
    assert update is not None
    assert judged(plan(rb_new, "patch", patch=update), rb_new, before) == ""
    # The same update under the old binding, or a hand-made swap of the image: refused.
    assert "not the template" in judged(plan(rb, "patch", patch=update), rb, before)
    swap: list[dict[str, Any]] = [
        {"op": "replace", "path": "/spec/template/spec/containers/0/image",
         "value": "evil:latest"}, {"op": "replace", "path": "/spec/replicas", "value": 2}]
    assert json_patch.apply(before, swap)["spec"]["replicas"] == 2  # the share is right
    assert "not the template" in judged(plan(rb, "patch", patch=swap), rb, before)


def test_a_binding_must_carry_its_templates_replicas_and_digest() -> None:
    template, rb, _ = scheduled()
    meta = template["metadata"]
    target = ObjectRef(group="work.karmada.io", version="v1alpha2",
                       resource="resourcebindings", namespace="default",
                       name=rb["metadata"]["name"])
    governor = ObjectRef(group="apps", version="v1", resource="deployments",
                         namespace="default", name="demo-deploy", uid=meta["uid"])

    def create(obj: dict[str, Any]) -> str:
        p = Plan(id="p", cluster="host", verb="create", rule="propagation", target=target,
                 object=obj, governor=governor, governor_generation=meta["generation"])
        return judged(p, template, None)

    made = {k: copy.deepcopy(v) for k, v in rb.items() if k != "status"}
    made["metadata"] = {k: v for k, v in made["metadata"].items()
                        if k in ("name", "namespace", "annotations", "ownerReferences",
                                 "finalizers")}
    assert create(made) == ""
    more = copy.deepcopy(made)
    more["spec"]["replicas"] = 300
    assert "spec.replicas is 300" in create(more)
    digest = copy.deepcopy(made)
    digest["metadata"]["annotations"]["propagation.spreadbus.io/template-digest"] = "0" * 32
    assert "digest" in create(digest)
    stranger = copy.deepcopy(made)
    stranger["spec"]["resource"]["uid"] = "someone-else"
    assert "spec.resource.uid" in create(stranger)


def test_the_rule_may_not_touch_what_its_grants_do_not_name() -> None:
    _, rb, _ = scheduled()
    pod = ObjectRef(group="", version="v1", resource="pods", namespace="default", name="p")
    assert isinstance(AUTHORITY.authorize(plan(rb, "delete", target=pod)), Refused)
    owner = [{"op": "add", "path": "/metadata/ownerReferences", "value": []}]
    assert isinstance(AUTHORITY.authorize(plan(rb, "patch", patch=owner)), Refused)
    elsewhere = ObjectRef(group="apps", version="v1", resource="deployments",
                          namespace="kube-system", name="demo-deploy")
    assert isinstance(AUTHORITY.authorize(plan(rb, "create", target=elsewhere, obj={})),
                      Refused)
