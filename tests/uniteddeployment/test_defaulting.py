"""The UnitedDeployment defaulting webhook (Kruise v1.9.0's), and its JSON Patch."""

from __future__ import annotations

import copy

from kubesemantics import json_patch
from spreadbus.features.uniteddeployment.core.defaulting import (
    default_uniteddeployment,
    defaulting_patch,
)
from tests.uniteddeployment.test_validation_rules import JSON, base, elastic, stateful


def bare() -> JSON:
    obj = base()
    del obj["spec"]["updateStrategy"]
    return obj


def test_spec_replicas_is_not_defaulted() -> None:
    obj = bare()
    del obj["spec"]["replicas"]
    assert "replicas" not in default_uniteddeployment(obj)["spec"]


def test_history_limit_and_manual_strategy_are_defaulted() -> None:
    spec = default_uniteddeployment(bare())["spec"]
    assert spec["revisionHistoryLimit"] == 10
    assert spec["updateStrategy"] == {"type": "Manual", "manualUpdate": {}}


def test_values_given_are_kept() -> None:
    obj = base()
    obj["spec"]["revisionHistoryLimit"] = 3
    spec = default_uniteddeployment(obj)["spec"]
    assert spec["revisionHistoryLimit"] == 3
    assert spec["updateStrategy"] == obj["spec"]["updateStrategy"]


def test_an_unknown_strategy_type_gets_no_manual_update() -> None:
    obj = bare()
    obj["spec"]["updateStrategy"] = {"type": "Other"}
    assert default_uniteddeployment(obj)["spec"]["updateStrategy"] == {"type": "Other"}


def test_only_a_statefulset_template_gets_pod_defaults() -> None:
    deployment = default_uniteddeployment(bare())
    assert deployment["spec"]["template"] == bare()["spec"]["template"]
    obj = stateful(bare())
    obj["spec"]["template"]["statefulSetTemplate"]["spec"]["template"]["spec"][
        "initContainers"] = [{"name": "init", "image": "busybox"}]
    obj["spec"]["template"]["statefulSetTemplate"]["spec"]["volumeClaimTemplates"] = [
        {"metadata": {"name": "data"}, "spec": {}}]
    sts = default_uniteddeployment(obj)["spec"]["template"]["statefulSetTemplate"]["spec"]
    pod = sts["template"]["spec"]
    assert {k: pod[k] for k in ("restartPolicy", "terminationGracePeriodSeconds", "dnsPolicy",
                                "schedulerName", "securityContext")} == {
        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
        "securityContext": {}}
    (main,) = pod["containers"]
    # Kruise pulls regular containers Always (in-place update); init containers follow
    # Kubernetes' rule (no tag: latest: Always; a tag: IfNotPresent).
    assert main["imagePullPolicy"] == "Always"
    assert main["terminationMessagePath"] == "/dev/termination-log"
    assert main["terminationMessagePolicy"] == "File"
    assert pod["initContainers"][0]["imagePullPolicy"] == "Always"
    assert sts["volumeClaimTemplates"][0]["status"] == {"phase": "Pending"}


def test_init_container_with_a_tag_pulls_if_not_present() -> None:
    obj = stateful(bare())
    obj["spec"]["template"]["statefulSetTemplate"]["spec"]["template"]["spec"][
        "initContainers"] = [{"name": "init", "image": "busybox:1.36"}]
    out = default_uniteddeployment(obj)
    pod = out["spec"]["template"]["statefulSetTemplate"]["spec"]["template"]["spec"]
    assert pod["initContainers"][0]["imagePullPolicy"] == "IfNotPresent"


def test_on_update_pod_defaults_only_when_the_template_changed() -> None:
    old = stateful(bare())
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 7
    pod = default_uniteddeployment(new, old=old)["spec"]["template"]["statefulSetTemplate"][
        "spec"]["template"]["spec"]
    assert "restartPolicy" not in pod
    new["spec"]["template"]["statefulSetTemplate"]["spec"]["template"]["spec"]["containers"][0][
        "image"] = "nginx:2"
    pod = default_uniteddeployment(new, old=old)["spec"]["template"]["statefulSetTemplate"][
        "spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Always"


def test_subsets_without_min_get_zero_when_min_max_is_used() -> None:
    obj = elastic(bare(), [(None, 4), (2, None), (None, None)])
    subsets = default_uniteddeployment(obj)["spec"]["topology"]["subsets"]
    assert [s.get("minReplicas") for s in subsets] == [0, 2, 0]


def test_no_min_default_when_some_subset_has_replicas() -> None:
    obj = elastic(bare(), [(None, 4), (None, None)])
    obj["spec"]["topology"]["subsets"][1]["replicas"] = 1
    subsets = default_uniteddeployment(obj)["spec"]["topology"]["subsets"]
    assert [s.get("minReplicas") for s in subsets] == [None, None]


def test_status_is_cleared_and_the_input_untouched() -> None:
    obj = bare()
    obj["status"] = {"replicas": 3}
    before = copy.deepcopy(obj)
    assert "status" not in default_uniteddeployment(obj)
    assert obj == before


def test_the_patch_turns_the_object_into_the_defaulted_one() -> None:
    obj = stateful(bare())
    obj["status"] = {"replicas": 3}
    patch = defaulting_patch(obj)
    assert {"op": "remove", "path": "/status"} in patch
    assert json_patch.apply(obj, patch) == default_uniteddeployment(obj)
    assert defaulting_patch(default_uniteddeployment(obj)) == []


def test_garbage_is_left_for_validation() -> None:
    for spec in (3, "x", []):
        assert default_uniteddeployment({"spec": spec}) == {"spec": spec}
    out = default_uniteddeployment({"spec": {"updateStrategy": 5, "template": [], "topology": "t"}})
    assert out["spec"] == {"updateStrategy": 5, "template": [], "topology": "t",
                           "revisionHistoryLimit": 10}
