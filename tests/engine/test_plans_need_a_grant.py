"""A plan is applied only when a grant of its rule covers its verb, resource, writes and owner."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from events.messages import ObjectRef, Plan, Verb
from spreadbus.engine.feature_set import plan_grants
from spreadbus.engine.plan_grants import Granted, PlanAuthority, PlanGrant, Refused
from spreadbus.features.registry import BUILTIN

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


# -- scoped to the governing object -----------------------------------------------------------

BUILT_IN = PlanAuthority(plan_grants(BUILTIN))
WS = ("apps.kruise.io", "v1alpha1", "workloadspreads")
UD = ("apps.kruise.io", "v1alpha1", "uniteddeployments")
WR = ("apps.karmada.io", "v1alpha1", "workloadrebalancers")
CLUSTER = ("cluster.karmada.io", "v1alpha1", "clusters")
POD = ("", "v1", "pods")


def ref(kind: tuple[str, str, str], namespace: str, name: str, uid: str = "") -> ObjectRef:
    return ObjectRef(group=kind[0], version=kind[1], resource=kind[2], namespace=namespace,
                     name=name, uid=uid)


def governed(rule: str, verb: Verb, target: ObjectRef, governor: ObjectRef | None,
             patch: Any = None, obj: dict[str, Any] | None = None) -> Plan:
    return Plan(id="p", cluster="c1", verb=verb, rule=rule, target=target, patch=patch,
                governor=governor, object=obj)


COST = {"metadata": {"annotations": {"controller.kubernetes.io/pod-deletion-cost": "1"}}}
STATUS_PATCH = {"status": {"observedGeneration": 1}}


@pytest.mark.parametrize(("plan_", "problem"), [
    (governed("workloadspread", "evict", ref(POD, "shop", "web-1"), ref(WS, "shop", "ws")),
     ""),
    (governed("workloadspread", "patch", ref(POD, "shop", "web-1"), ref(WS, "shop", "ws"),
              COST), ""),
    (governed("workloadspread", "evict", ref(POD, "shop", "web-1"), None),
     "it names no governing WorkloadSpread"),
    (governed("workloadspread", "evict", ref(POD, "kube-system", "dns-1"),
              ref(WS, "shop", "ws")),
     "the target is in 'kube-system', the governing WorkloadSpread shop/ws in 'shop'"),
    (governed("workloadspread", "evict", ref(POD, "shop", "web-1"), ref(UD, "shop", "ud")),
     "it serves a WorkloadSpread, not uniteddeployments.apps.kruise.io"),
    (governed("workloadspread", "patch_status", ref(WS, "shop", "ws-b"), ref(WS, "shop", "ws"),
              STATUS_PATCH),
     "it may touch only the governing WorkloadSpread shop/ws itself"),
    (governed("workloadspread", "patch_status", ref(WS, "shop", "ws", "u2"),
              ref(WS, "shop", "ws", "u1"), STATUS_PATCH),
     "it may touch only the governing WorkloadSpread shop/ws itself"),
    (governed("workloadspread", "patch_status", ref(WS, "shop", "ws", "u1"),
              ref(WS, "shop", "ws", "u1"), STATUS_PATCH), ""),
    (governed("uniteddeployment", "create", ref(("apps", "v1", "deployments"), "shop", "ud-a"),
              ref(UD, "shop", "ud", "u1"), obj=owned_by("UnitedDeployment")), ""),
    (governed("uniteddeployment", "create", ref(("apps", "v1", "deployments"), "shop", "ud-a"),
              ref(UD, "shop", "other", "u9"), obj=owned_by("UnitedDeployment")),
     "the object must be controlled by a UnitedDeployment named 'other'"),
    (governed("uniteddeployment", "patch", ref(POD, "other", "web-1"), ref(UD, "shop", "ud"),
              {"metadata": {"labels": {"apps.kruise.io/united-deployment-reserved-pod": "true"}}}),
     "the target is in 'other', the governing UnitedDeployment shop/ud in 'shop'"),
    (governed("workloadrebalancer", "patch", ref(WS, "any", "ws"), ref(WR, "", "wr"),
              {"metadata": {"annotations": {"rebalance.spreadbus.io/request": "u"}}}), ""),
    (governed("workloadrebalancer", "patch_status", ref(WR, "", "wr"), ref(WR, "shop", "wr"),
              STATUS_PATCH),
     "a WorkloadRebalancer is cluster-scoped, the plan names it in 'shop'"),
    (governed("workloadrebalancer", "delete", ref(WR, "", "other"), ref(WR, "", "wr")),
     "it may touch only the governing WorkloadRebalancer wr itself"),
    (governed("cluster-status", "patch", ref(CLUSTER, "", "m1", "u1"), ref(CLUSTER, "", "m1", "u1"),
              {"spec": {"taints": []}}), ""),
    (governed("cluster-status", "patch", ref(CLUSTER, "", "m1", "u1"), ref(CLUSTER, "", "m1", "u1"),
              {"spec": {"syncMode": "Push"}}),
     "it may not write /spec/syncMode"),
    (governed("cluster-status", "patch_status", ref(CLUSTER, "", "m2", "u2"),
              ref(CLUSTER, "", "m1", "u1"), STATUS_PATCH),
     "it may touch only the governing Cluster m1 itself"),
    (governed("cluster-status", "delete", ref(CLUSTER, "", "m1", "u1"),
              ref(CLUSTER, "", "m1", "u1")),
     "may not delete clusters.cluster.karmada.io"),
    (governed("podunavailablebudget", "patch", ref(POD, "shop", "web-1"),
              ref(("policy.kruise.io", "v1alpha1", "podunavailablebudgets"), "shop", "pub"),
              {"metadata": {"annotations": {"kruise.io/related-pub": "pub"}}}), ""),
])
def test_a_built_in_plan_stays_in_its_governors_namespace_and_kind(plan_: Plan,
                                                                    problem: str) -> None:
    verdict = BUILT_IN.authorize(plan_)
    if not problem:
        assert isinstance(verdict, Granted), verdict
    else:
        assert isinstance(verdict, Refused)
        assert verdict.message.endswith(problem), verdict.message


def test_pod_plans_are_granted_only_for_a_check_on_the_pod_as_read() -> None:
    verdict = BUILT_IN.authorize(
        governed("workloadspread", "evict", ref(POD, "shop", "web-1"), ref(WS, "shop", "ws")))
    assert isinstance(verdict, Granted)
    assert verdict.grant is not None
    assert verdict.grant.relation == "governed"
    assert verdict.reads_target


NAMESPACES = st.sampled_from(["shop", "other", "kube-system", ""])
GOVERNOR_KINDS = st.sampled_from([WS, UD, WR])


@given(target_ns=NAMESPACES, governor_ns=NAMESPACES, kind=GOVERNOR_KINDS,
       named=st.booleans(), verb=st.sampled_from(["evict", "patch"]))
def test_a_workloadspread_pod_plan_is_granted_exactly_when_namespace_and_governor_agree(
        target_ns: str, governor_ns: str, kind: tuple[str, str, str], named: bool,
        verb: Verb) -> None:
    governor = ref(kind, governor_ns, "ws") if named else None
    verdict = BUILT_IN.authorize(governed("workloadspread", verb, ref(POD, target_ns, "p"),
                                          governor, COST if verb == "patch" else None))
    agree = named and kind == WS and bool(governor_ns) and target_ns == governor_ns
    assert isinstance(verdict, Granted) == agree, verdict


@given(target_ns=NAMESPACES, governor_ns=NAMESPACES, target_name=st.sampled_from(["a", "b"]),
       rule=st.sampled_from(["workloadspread", "uniteddeployment"]))
def test_a_status_is_written_only_on_the_governor_itself(
        target_ns: str, governor_ns: str, target_name: str, rule: str) -> None:
    kind = WS if rule == "workloadspread" else UD
    verdict = BUILT_IN.authorize(governed(rule, "patch_status", ref(kind, target_ns, target_name),
                                          ref(kind, governor_ns, "a"), STATUS_PATCH))
    itself = target_ns == governor_ns != "" and target_name == "a"
    assert isinstance(verdict, Granted) == itself, verdict


def test_every_built_in_grant_names_its_governor() -> None:
    for grant in plan_grants(BUILTIN):
        assert grant.governor is not None, f"{grant.rule} {grant.verb} {grant.resource}"
        if not grant.governor.namespaced:
            # A cluster-scoped governor reaches into namespaces only through what it names;
            # it may control only cluster-scoped objects (a ClusterRole its binding).
            assert grant.relation in ("itself", "named") or grant.cluster_scoped, grant
