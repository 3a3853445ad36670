"""A plan for a subset workload in a member is asked for by its UnitedDeployment in the host, or
refused: each forged variation names what is wrong (pure; the real attack against two kubesims is
in tests/uniteddeployment_e2e)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from events.messages import ObjectRef, Plan, Verb
from spreadbus.features.uniteddeployment.core.derived_writes import (
    member_identified,
    workload_follows,
)
from spreadbus.features.uniteddeployment.core.member_workloads import (
    IDENTITY_ANNOTATION,
    UID_LABEL,
)
from spreadbus.features.uniteddeployment.core.reconcile import reconcile
from tests.uniteddeployment.world import NOW, united, zone

JSON = dict[str, Any]
KARMADA = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster"}


def host_ud() -> JSON:
    ud = united([zone("a", targetCluster={"name": "member1"}),
                 zone("b", targetCluster={"name": "member2"}), zone("c")], replicas=6)
    ud["spec"]["topology"]["clusterRegistry"] = {"clusterType": KARMADA}
    return ud


def workload(ud: JSON, subset: str) -> JSON:
    answer = reconcile(ud, workloads=[], pods=[], revisions=[], now=NOW, home="host")
    found = copy.deepcopy(answer.subsets[subset].workload)
    found["metadata"].update(name=f"sample-ud-{subset}-x", namespace="default")
    return found


def plan(verb: Verb, cluster: str = "member1", uid: str = "sample-ud-uid",
         governor_cluster: str = "host") -> Plan:
    return Plan(id="p", cluster=cluster, verb=verb, rule="uniteddeployment",
                target=ObjectRef(group="apps", version="v1", resource="statefulsets",
                                 namespace="default", name="sample-ud-a-x"),
                governor=ObjectRef(group="apps.kruise.io", version="v1alpha1",
                                   resource="uniteddeployments", namespace="default",
                                   name="sample-ud", uid=uid),
                governor_cluster=governor_cluster)


def test_the_workload_the_host_renders_for_this_member_is_asked_for() -> None:
    ud = host_ud()
    written = workload(ud, "a")
    assert member_identified(plan("create"), ud, written) == ""
    assert member_identified(plan("patch"), ud, written) == ""
    assert workload_follows(ud, written, None) == ""


@pytest.mark.parametrize(("change", "expected"), [
    ("another-member", "has no subset 'a' whose targetCluster is 'member2'"),
    ("subset-elsewhere", "has no subset 'b' whose targetCluster is 'member1'"),
    ("local-subset", "has no subset 'c' whose targetCluster is 'member1'"),
    ("other-uid", "not the plan's governor"),
    ("other-cluster", "not the plan's governor"),
    ("no-identity", "it names no UnitedDeployment"),
    ("labels-disagree", "it names no UnitedDeployment"),
    ("ud-gone", "has no subset 'a' whose targetCluster is 'member1'"),
    ("ud-replaced", "has no subset 'a' whose targetCluster is 'member1'"),
])
def test_a_forged_create_is_refused(change: str, expected: str) -> None:
    ud: JSON | None = host_ud()
    assert ud is not None
    written = workload(ud, "a")
    annotations, labels = written["metadata"]["annotations"], written["metadata"]["labels"]
    cluster, governor_cluster = "member1", "host"
    if change == "another-member":
        cluster = "member2"
    elif change in ("subset-elsewhere", "local-subset"):
        written = workload(ud, "b")
        if change == "local-subset":
            written["metadata"]["labels"]["apps.kruise.io/subset-name"] = "c"
    elif change == "other-uid":
        identity = json.loads(annotations[IDENTITY_ANNOTATION])
        annotations[IDENTITY_ANNOTATION] = json.dumps({**identity, "uid": "stolen"})
        labels[UID_LABEL] = "stolen"
    elif change == "other-cluster":
        governor_cluster = "member9"
    elif change == "no-identity":
        del annotations[IDENTITY_ANNOTATION]
    elif change == "labels-disagree":
        labels[UID_LABEL] = "another"
    elif change == "ud-gone":
        ud = None
    elif change == "ud-replaced":
        ud["metadata"]["uid"] = "new-uid"
    why = member_identified(plan("create", cluster, governor_cluster=governor_cluster), ud,
                            written)
    assert expected in why


def test_a_member_workload_with_a_controller_does_not_follow() -> None:
    ud = host_ud()
    written = workload(ud, "a")
    written["metadata"]["ownerReferences"] = [{
        "apiVersion": "apps/v1", "kind": "Deployment", "name": "x", "uid": "x",
        "controller": True}]
    assert workload_follows(ud, written, None).startswith(
        f"metadata.annotations[{IDENTITY_ANNOTATION}]: it must name")


@pytest.mark.parametrize(("state", "allowed"), [
    ("wanted", False), ("gone", True), ("deleting", True), ("moved", True), ("removed", True),
    ("replaced", True),
])
def test_a_delete_is_asked_for_only_once_the_uniteddeployment_no_longer_wants_it(
        state: str, allowed: bool) -> None:
    ud: JSON | None = host_ud()
    assert ud is not None
    target = workload(ud, "a")
    subsets = ud["spec"]["topology"]["subsets"]
    if state == "gone":
        ud = None
    elif state == "deleting":
        ud["metadata"]["deletionTimestamp"] = "2026-01-01T12:00:00Z"
    elif state == "moved":
        subsets[0]["targetCluster"] = {"name": "member2"}
    elif state == "removed":
        del subsets[0]
    elif state == "replaced":
        ud["metadata"]["uid"] = "new-uid"
    why = member_identified(plan("delete"), ud, target)
    assert (why == "") is allowed, why


def member_pod(subset: str, labels: dict[str, str] | None = None) -> JSON:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"sample-ud-{subset}-x-0", "namespace": "default",
                         "labels": labels if labels is not None else {
                             "app": "sample", "apps.kruise.io/subset-name": subset}}}


@pytest.mark.parametrize(("case", "expected"), [
    ("its-pod", ""),
    ("another-members-subset", "has no subset 'b' whose targetCluster is 'member1'"),
    ("not-selected", "selector does not select the pod"),
    ("ud-gone", "is gone"),
])
def test_a_reservation_label_on_a_members_pod_needs_the_uniteddeployment_to_select_it(
        case: str, expected: str) -> None:
    from spreadbus.features.uniteddeployment.core.derived_writes import member_pod_identified

    ud: JSON | None = host_ud()
    pod = member_pod("a")
    if case == "another-members-subset":
        pod = member_pod("b")
    elif case == "not-selected":
        pod = member_pod("a", {"app": "other", "apps.kruise.io/subset-name": "a"})
    elif case == "ud-gone":
        ud = None
    why = member_pod_identified(plan("patch"), ud, pod)
    assert (why == "") if not expected else (expected in why), why
