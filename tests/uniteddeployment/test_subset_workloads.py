"""Which workloads are a UD's subsets, what it deletes, and which pods each subset runs."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from spreadbus.features.uniteddeployment.core.model import from_object
from spreadbus.features.uniteddeployment.core.subset_workloads import (
    discover,
    pods_by_subset,
)
from tests.uniteddeployment.world import SUBSET, united, zone

JSON = dict[str, Any]
UD = united([zone("a"), zone("b")])
MODEL = from_object(UD)


def workload(
    name: str,
    subset: str | None,
    *,
    kind: str = "StatefulSet",
    api_version: str = "apps/v1",
    owner_uid: str = "sample-ud-uid",
    controller: bool = True,
    namespace: str = "default",
) -> JSON:
    labels = {"app": "sample"}
    if subset is not None:
        labels[SUBSET] = subset
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"{name}-uid",
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": "apps.kruise.io/v1alpha1",
                    "kind": "UnitedDeployment",
                    "name": "sample-ud",
                    "uid": owner_uid,
                    "controller": controller,
                }
            ],
        },
        "spec": {"replicas": 1},
    }


def names(objects: list[Any]) -> list[str]:
    return [o["metadata"]["name"] for o in objects]


def test_owned_labelled_workloads_of_the_template_kind_are_subsets() -> None:
    found = discover(MODEL, [workload("ud-a-1", "a"), workload("ud-b-1", "b")])
    assert names(list(found.by_subset.values())) == ["ud-a-1", "ud-b-1"]
    assert found.deletes == []


@pytest.mark.parametrize(
    "stranger",
    [
        workload("other-owner", "a", owner_uid="someone-else"),
        workload("not-controller", "a", controller=False),
        workload("no-label", None),
        workload("elsewhere", "a", namespace="prod"),
        workload("a-replicaset", "a", kind="ReplicaSet"),
    ],
    ids=["other owner", "owner not controller", "no subset label", "other namespace", "RS"],
)
def test_other_objects_are_ignored(stranger: JSON) -> None:
    found = discover(MODEL, [stranger])
    assert found.by_subset == {}
    assert found.deletes == []


def test_a_second_workload_of_a_subset_is_deleted_and_the_first_by_name_kept() -> None:
    found = discover(MODEL, [workload("ud-a-2", "a"), workload("ud-a-1", "a")])
    assert names([found.by_subset["a"]]) == ["ud-a-1"]
    assert names(found.deletes) == ["ud-a-2"]


def test_a_subset_gone_from_spec_is_deleted_but_still_found() -> None:
    found = discover(MODEL, [workload("ud-c-1", "c")])
    assert names(found.not_in_spec) == ["ud-c-1"]
    assert "c" in found.by_subset
    assert found.wanted(MODEL) == {}


def test_workloads_of_the_other_kinds_owned_by_the_ud_are_deleted() -> None:
    others = [
        workload("clone", "a", kind="CloneSet", api_version="apps.kruise.io/v1alpha1"),
        workload("asts", "a", api_version="apps.kruise.io/v1beta1"),
        workload("deploy", "a", kind="Deployment"),
    ]
    found = discover(MODEL, others)
    assert sorted(names(found.other_kinds)) == ["asts", "clone", "deploy"]
    assert found.by_subset == {}


def test_an_owner_reference_without_uid_matches_by_name() -> None:
    found = discover(MODEL, [workload("ud-a-1", "a", owner_uid="")])
    assert "a" in found.by_subset


def pod(name: str, owner: JSON) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "ownerReferences": [
                {
                    "apiVersion": owner["apiVersion"],
                    "kind": owner["kind"],
                    "name": owner["metadata"]["name"],
                    "uid": owner["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
    }


def test_pods_of_a_statefulset_are_its_controlled_pods() -> None:
    a, b = workload("ud-a-1", "a"), workload("ud-b-1", "b")
    found = pods_by_subset(MODEL, {"a": a, "b": b}, [a, b], [pod("b-0", b), pod("a-0", a)])
    assert {k: names(v) for k, v in found.items()} == {"a": ["a-0"], "b": ["b-0"]}


def test_pods_of_a_deployment_are_found_through_its_replicasets() -> None:
    ud = from_object(united([zone("a")], key="deploymentTemplate"))
    deploy = workload("ud-a-1", "a", kind="Deployment")
    rs = copy.deepcopy(workload("ud-a-1-abc", None, kind="ReplicaSet"))
    rs["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "ud-a-1",
            "uid": "ud-a-1-uid",
            "controller": True,
        }
    ]
    stray_rs = workload("stray", None, kind="ReplicaSet")
    found = pods_by_subset(
        ud, {"a": deploy}, [deploy, rs, stray_rs], [pod("p1", rs), pod("p2", stray_rs)]
    )
    assert names(found["a"]) == ["p1"]
