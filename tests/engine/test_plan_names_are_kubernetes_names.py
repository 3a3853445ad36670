"""A plan's names must be Kubernetes names before anything is sent, and a path has no way out.

Pure: the authority's refusal names the field; every name the authority lets through is one
path segment that the API server reads back as itself (it decodes, then splits on ``/``);
``resource_path`` escapes what it sends and refuses segments it cannot; an object read under the
target's path that is another object is told apart; a controlled grant needs its governor's uid;
an owner reference that is no name is never followed.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from events.messages import ObjectRef, Plan, Verb
from spreadbus.engine.feature_set import plan_grants
from spreadbus.engine.plan_grants import Granted, PlanAuthority, Refused
from spreadbus.engine.plan_names import misnamed
from spreadbus.engine.plan_scope import Reach, Read, step
from spreadbus.features.registry import BUILTIN
from spreadbus.runtime.kube_client import BadPath, resource_path

BUILT_IN = PlanAuthority(plan_grants(BUILTIN))
WR = ("apps.karmada.io", "v1alpha1", "workloadrebalancers")
WS = ("apps.kruise.io", "v1alpha1", "workloadspreads")
UD = ("apps.kruise.io", "v1alpha1", "uniteddeployments")
STS = ("apps", "v1", "statefulsets")


def ref(kind: tuple[str, str, str], namespace: str, name: str, uid: str = "u1") -> ObjectRef:
    return ObjectRef(group=kind[0], version=kind[1], resource=kind[2], namespace=namespace,
                     name=name, uid=uid)


def plan(rule: str, verb: Verb, target: ObjectRef, governor: ObjectRef | None,
         patch: Any = None) -> Plan:
    return Plan(id="p", cluster="c1", verb=verb, rule=rule, target=target, governor=governor,
                patch=patch)


def itself(target: ObjectRef) -> Plan:
    return plan("workloadrebalancer", "delete", target, target)


@pytest.mark.parametrize(("target", "governor", "field"), [
    (ref(WR, "", "../../../../api/v1/namespaces/victim/secrets/db-pass"), None, "target.name"),
    (ref(WR, "", "..%2F..%2Fapi"), None, "target.name"),
    (ref(WR, "", "%2e%2e"), None, "target.name"),
    (ref(WR, "", "."), None, "target.name"),
    (ref(WR, "", ""), None, "target.name"),
    (ref(WR, "", "a" * 254), None, "target.name"),
    (ref(WR, "", "Web"), None, "target.name"),
    (ref(WR, "", "wr?dryRun=All"), None, "target.name"),
    (ref(WR, "", "wr\x00"), None, "target.name"),
    (ref(WR, "", "wr-ü"), None, "target.name"),
    (ref(("apps.karmada.io/../..", "v1alpha1", "workloadrebalancers"), "", "wr"), None,
     "target.group"),
    (ref(("apps.karmada.io", "..", "workloadrebalancers"), "", "wr"), None, "target.version"),
    (ref(("apps.karmada.io", "v1alpha1", ""), "", "wr"), None, "target.resource"),
    (ref(WS, "default/../victim", "ws"), None, "target.namespace"),
    (ref(WS, "a" * 64, "ws"), None, "target.namespace"),
    (ref(WS, "default", "ws"), ref(WS, "default", "ws/.."), "governor.name"),
    (ref(WS, "default", "ws"), ref(WS, "..", "ws"), "governor.namespace"),
])
def test_a_name_no_object_could_have_is_refused_naming_its_field(
        target: ObjectRef, governor: ObjectRef | None, field: str) -> None:
    verdict = BUILT_IN.authorize(plan("workloadspread", "patch_status", target,
                                      governor or target, {"status": {"x": 1}}))
    assert isinstance(verdict, Refused)
    assert verdict.message.startswith(f"{field}: Invalid value: "), verdict.message
    assert len(verdict.message) < 600, "a long name is not quoted whole"


@pytest.mark.parametrize("name", [
    "wr", "sample-ud-subset-a-x2b4c", "ud-5d8f7c9b6", "ud-a-x2b4c-0", "ws.a", "a" * 253,
    "0", "web-7d9f8b6c5-x2b4c",
])
def test_the_names_features_give_their_objects_pass(name: str) -> None:
    assert isinstance(BUILT_IN.authorize(itself(ref(WR, "", name))), Granted)


def served(path: str) -> list[str]:
    """The path's segments as the API server reads them: decoded, then split."""
    return unquote(path).split("/")[1:]


NEARLY = st.one_of(st.sampled_from(["shop", "v1", "web.a", "x-1", "0"]),
                   st.from_regex(r"\A[a-zA-Z0-9.%/?#-]{0,12}\Z"), st.text(max_size=300))
"""Names that are often Kubernetes names, and often just not."""


@given(namespace=NEARLY, name=NEARLY, version=NEARLY,
       group=st.sampled_from(["apps", "apps/..", "apps%2F..", "Apps"]))
def test_every_name_the_authority_passes_is_one_segment_read_back_as_itself(
        namespace: str, name: str, group: str, version: str) -> None:
    target = ObjectRef(group=group, version=version, resource="statefulsets",
                       namespace=namespace, name=name, uid="u1")
    governor = ref(UD, namespace, "ud", "u9")
    verdict = BUILT_IN.authorize(plan("uniteddeployment", "delete", target, governor))
    event(type(verdict).__name__)
    if not isinstance(verdict, Granted):
        return
    path = resource_path(group, version, "statefulsets", namespace, name)
    head = ["apis", group, version] if group else ["api", version]
    assert served(path) == [*head, "namespaces", namespace, "statefulsets", name]


def test_resource_path_escapes_each_segment_and_refuses_what_cannot_be_one() -> None:
    assert resource_path("", "v1", "pods", "default", "a b?c#d", "status") == (
        "/api/v1/namespaces/default/pods/a%20b%3Fc%23d/status")
    assert resource_path("apps", "v1", "deployments") == "/apis/apps/v1/deployments"
    assert resource_path("apps.karmada.io", "v1alpha1", "workloadrebalancers", "", "wr") == (
        "/apis/apps.karmada.io/v1alpha1/workloadrebalancers/wr")
    for args, message in [
        (("", "v1", "pods", "default", ".."), "name '..': may not be '..'"),
        (("", "v1", "pods", "default", "."), "name '.': may not be '.'"),
        (("", "v1", "pods", "default", "a/b"), "name 'a/b': may not contain '/'"),
        (("", "v1", "pods", "de%2Ffault", "p"), "namespace 'de%2Ffault': may not contain '%'"),
        (("..", "v1", "pods"), "group '..': may not be '..'"),
        (("", "", "pods"), "version '': may not be empty"),
    ]:
        with pytest.raises(BadPath) as refused:
            resource_path(*args)
        assert str(refused.value) == message


def test_an_object_read_that_is_another_is_told_apart_by_group_namespace_and_name() -> None:
    target = ref(WS, "default", "ws")
    same = {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
            "metadata": {"name": "ws", "namespace": "default", "uid": "other-uid"}}
    assert misnamed(target, same) == ""
    secret = {"apiVersion": "v1", "kind": "Secret",
              "metadata": {"name": "db-pass", "namespace": "victim"}}
    assert misnamed(target, secret) == (
        "the object read is Secret victim/'db-pass', not workloadspreads "
        "apps.kruise.io/default/'ws'")
    assert misnamed(target, {**same, "apiVersion": "apps/v1"})
    assert misnamed(target, {**same, "metadata": {"name": "ws", "namespace": "other"}})
    assert misnamed(target, {"kind": "Status"})


def test_a_controlled_grant_needs_the_uid_of_its_governor() -> None:
    subset = ref(STS, "shop", "ud-a-x2b4c")
    refused = BUILT_IN.authorize(plan("uniteddeployment", "delete", subset,
                                      ref(UD, "shop", "ud", uid="")))
    assert isinstance(refused, Refused)
    assert refused.message.endswith("the governing UnitedDeployment shop/ud names no uid")
    granted = BUILT_IN.authorize(plan("uniteddeployment", "delete", subset,
                                      ref(UD, "shop", "ud", uid="u9")))
    assert isinstance(granted, Granted)
    assert (granted.owner, granted.owner_name, granted.owner_uid) == (
        ("apps.kruise.io", "UnitedDeployment"), "ud", "u9")


@pytest.mark.parametrize(("api_version", "name"), [
    ("apps/v1", "../../secrets/db-pass"), ("apps/v1", "rs%2F.."), ("apps/v1", ""),
    ("apps/..", "rs"), ("apps/v1", "RS"),
])
def test_an_owner_reference_that_names_no_object_is_not_followed(api_version: str,
                                                                 name: str) -> None:
    grant = next(g for g in plan_grants(BUILTIN)
                 if (g.rule, g.verb, g.resource) == ("workloadspread", "evict", "pods"))
    pod = {"kind": "Pod", "metadata": {"name": "p", "ownerReferences": [
        {"apiVersion": api_version, "kind": "ReplicaSet", "name": name, "uid": "u",
         "controller": True}]}}
    verdict = step(grant, Reach("apps", "Deployment", "web"), pod)
    assert isinstance(verdict, str), verdict
    ok = {"kind": "Pod", "metadata": {"name": "p", "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9f8b6c5", "uid": "u",
         "controller": True}]}}
    assert step(grant, Reach("apps", "Deployment", "web"), ok) == Read(
        "apps", "v1", "replicasets", "web-7d9f8b6c5", "u")
