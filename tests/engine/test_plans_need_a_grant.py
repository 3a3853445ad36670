"""A plan is applied only when a grant of its rule covers its verb, resource, writes and owner."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from events.messages import ObjectRef, Plan, Verb
from spreadbus.engine.plan_grants import Granted, PlanAuthority, PlanGrant, Refused
from spreadbus.features.registry import BUILTIN, plan_grants

POD_METADATA = PlanGrant(rule="spread", verb="patch", group="", resource="pods",
                         writes=(("metadata", "annotations", "*"), ("metadata", "labels", "*")))
STATUS = PlanGrant(rule="spread", verb="patch_status", group="apps.kruise.io",
                   resource="workloadspreads", writes=(("status",),))
OWNED = PlanGrant(rule="united", verb="create", group="apps", resource="deployments",
                  owner=("apps.kruise.io", "UnitedDeployment"))
ONE_LABEL = PlanGrant(rule="united", verb="patch", group="", resource="pods",
                      writes=(("metadata", "labels", "apps.kruise.io/reserved-*"),))
AUTHORITY = PlanAuthority([POD_METADATA, STATUS, OWNED, ONE_LABEL])


def plan(rule: str, verb: Verb, group: str, resource: str, patch: Any = None, *,
         patch_type: str = "merge", obj: dict[str, Any] | None = None) -> Plan:
    return Plan(id="p", cluster="c1", verb=verb, rule=rule, patch=patch,
                patch_type=patch_type,  # type: ignore[arg-type]
                target=ObjectRef(group=group, version="v1", resource=resource,
                                 namespace="default", name="x"),
                object=obj)


def refusal(p: Plan) -> str:
    verdict = AUTHORITY.authorize(p)
    assert isinstance(verdict, Refused), verdict
    return verdict.message


def test_metadata_writes_on_pods_are_granted_and_spec_writes_are_not() -> None:
    ok = plan("spread", "patch", "", "pods",
              {"metadata": {"annotations": {"controller.kubernetes.io/pod-deletion-cost": "5"},
                            "labels": {"zone": "a"}}})
    assert AUTHORITY.authorize(ok) == Granted()
    message = refusal(plan("spread", "patch", "", "pods",
                           {"metadata": {"annotations": {"a": "1"}},
                            "spec": {"containers": [{"name": "c", "image": "evil"}]}}))
    assert message == "the rule 'spread' may not patch pods: it may not write /spec/containers"


def test_removing_a_whole_map_is_not_writing_its_keys() -> None:
    assert "/metadata/annotations" in refusal(
        plan("spread", "patch", "", "pods", {"metadata": {"annotations": None}}))


def test_an_unknown_rule_or_an_ungranted_target_is_refused_by_name() -> None:
    assert refusal(plan("anonymous", "patch", "apps", "deployments", {"spec": {"replicas": 0}})
                   ) == "no feature declares the rule 'anonymous'"
    assert refusal(plan("spread", "patch", "apps", "deployments", {"spec": {"replicas": 0}})
                   ) == "the rule 'spread' may not patch deployments.apps"
    assert refusal(plan("spread", "patch", "", "nodes", {"spec": {"unschedulable": True}})
                   ) == "the rule 'spread' may not patch nodes"
    assert refusal(plan("spread", "evict", "", "pods")) == "the rule 'spread' may not evict pods"


def test_json_patch_operations_are_checked_by_path_and_tests_write_nothing() -> None:
    granted = [{"op": "test", "path": "/spec/nodeName", "value": "n1"},
               {"op": "add", "path": "/metadata/labels/apps.kruise.io~1reserved-pod",
                "value": "true"}]
    assert AUTHORITY.authorize(plan("united", "patch", "", "pods", granted,
                                    patch_type="json")) == Granted()
    moved = [{"op": "move", "from": "/spec/nodeName",
              "path": "/metadata/labels/apps.kruise.io~1reserved-pod"}]
    assert "/spec/nodeName" in refusal(plan("united", "patch", "", "pods", moved,
                                            patch_type="json"))
    assert "may not write" in refusal(plan("united", "patch", "", "pods",
                                           [{"op": "add", "path": "/metadata/labels/app",
                                             "value": "x"}], patch_type="json"))
    assert "bad JSON pointer" in refusal(plan("united", "patch", "", "pods",
                                              [{"op": "add", "path": "metadata"}],
                                              patch_type="json"))


def test_a_status_grant_covers_the_status_only() -> None:
    assert AUTHORITY.authorize(plan("spread", "patch_status", "apps.kruise.io",
                                    "workloadspreads", {"status": {"a": 1}})) == Granted()
    assert "/spec/x" in refusal(plan("spread", "patch_status", "apps.kruise.io",
                                     "workloadspreads", {"status": {"a": 1}, "spec": {"x": 1}}))


def owned_by(kind: str, group_version: str = "apps.kruise.io/v1alpha1",
             controller: bool = True) -> dict[str, Any]:
    return {"metadata": {"ownerReferences": [
        {"apiVersion": group_version, "kind": kind, "name": "ud", "uid": "u1",
         "controller": controller}]}}


@pytest.mark.parametrize(("obj", "granted"), [
    (owned_by("UnitedDeployment"), True),
    (owned_by("UnitedDeployment", "apps/v1"), False),
    (owned_by("CloneSet"), False),
    (owned_by("UnitedDeployment", controller=False), False),
    ({"metadata": {}}, False),
])
def test_a_create_needs_the_granted_controller_owner(obj: dict[str, Any], granted: bool) -> None:
    verdict = AUTHORITY.authorize(plan("united", "create", "apps", "deployments", obj=obj))
    if granted:
        assert verdict == Granted(owner=("apps.kruise.io", "UnitedDeployment"))
    else:
        assert isinstance(verdict, Refused)
        assert verdict.message.endswith("must be controlled by a UnitedDeployment")


KEYS = st.text(st.characters(codec="ascii", exclude_characters="~"), min_size=1, max_size=8)
LEAVES = st.one_of(st.none(), st.integers(), st.text(max_size=3), st.lists(st.integers()))
PATCHES = st.recursive(LEAVES, lambda inner: st.dictionaries(KEYS, inner, max_size=3),
                       max_leaves=8)


@given(annotations=st.dictionaries(KEYS, st.one_of(st.none(), st.text(max_size=4)),
                                   min_size=1),
       rest=st.dictionaries(KEYS, PATCHES, max_size=3))
def test_a_pod_patch_is_granted_exactly_when_it_writes_only_metadata_maps(
        annotations: dict[str, str | None], rest: dict[str, Any]) -> None:
    patch = {"metadata": {"annotations": annotations}, **rest}
    outside = [k for k in rest if k != "metadata"]  # even {} writes: it creates the key
    verdict = AUTHORITY.authorize(plan("spread", "patch", "", "pods", patch))
    if "metadata" in rest:
        return  # rest replaced the metadata: covered by the examples above
    assert isinstance(verdict, Refused) == bool(outside)


def test_the_built_in_features_grant_only_rules_they_run() -> None:
    grants = plan_grants(BUILTIN)
    assert grants, "the built-in features declare their plans"
    for grant in grants:
        if grant.verb in ("patch", "patch_status"):
            assert grant.writes, f"{grant.rule} {grant.verb} {grant.resource} writes nothing"
        assert ("*",) not in grant.writes, f"{grant.rule} may write anything"
