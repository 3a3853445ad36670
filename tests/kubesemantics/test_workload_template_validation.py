"""A workload's pod template and a StatefulSet spec, checked with Kubernetes' paths and messages."""

from __future__ import annotations

from typing import Any

from kubesemantics.field_errors import Path
from kubesemantics.workload_template_validation import (
    validate_statefulset_spec,
    validate_template_for_replicaset,
)

SELECTOR = {"matchLabels": {"app": "web"}}
P = Path("spec")


def template(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "main", "image": "nginx"}], **spec}}


def triples(errors: list[Any]) -> list[tuple[str, str, str]]:
    return [(e.field, e.type, e.message) for e in errors]


def test_a_good_template_and_statefulset_spec_pass() -> None:
    assert validate_template_for_replicaset(template(), SELECTOR, P.child("template")) == []
    assert validate_statefulset_spec({"template": template()}, SELECTOR, P) == []


def test_statefulset_spec_enums_and_counts() -> None:
    spec = {"template": template(activeDeadlineSeconds=5), "minReadySeconds": -1,
            "updateStrategy": {"type": "OnDelete", "rollingUpdate": {}},
            "ordinals": {"start": -2},
            "persistentVolumeClaimRetentionPolicy": {"whenScaled": "Keep"}}
    assert triples(validate_statefulset_spec(spec, SELECTOR, P)) == [
        ("spec.updateStrategy.rollingUpdate", "Invalid",
         "only allowed for updateStrategy 'RollingUpdate'"),
        ("spec.persistentVolumeClaimRetentionPolicy.whenScaled", "NotSupported",
         'supported values: "Retain", "Delete"'),
        ("spec.minReadySeconds", "Invalid", "must be greater than or equal to 0"),
        ("spec.ordinals.start", "Invalid", "must be greater than or equal to 0"),
        ("spec.template.spec.activeDeadlineSeconds", "Forbidden",
         "activeDeadlineSeconds in StatefulSet is not Supported"),
    ]
    wrong = {"template": template(), "updateStrategy": {"type": "Sometimes"}}
    assert triples(validate_statefulset_spec(wrong, SELECTOR, P)) == [
        ("spec.updateStrategy", "Invalid", "must be 'RollingUpdate' or 'OnDelete'")]


def test_statefulset_template_labels_are_reported_where_kubernetes_reports_them() -> None:
    bad = template()
    bad["metadata"]["labels"]["-bad"] = "x"
    fields = [f for f, _, _ in triples(validate_statefulset_spec({"template": bad}, SELECTOR, P))]
    assert fields == ["spec.template.labels"]


def test_containers_are_checked() -> None:
    pod = template()
    pod["spec"]["containers"] = [
        {"name": "Main", "image": "nginx", "imagePullPolicy": "Sometimes",
         "ports": [{"containerPort": 0}, {"containerPort": 70000}]},
        {"image": "nginx"},
    ]
    pod["spec"]["initContainers"] = [{"name": "main", "image": "busybox"}]
    got = triples(validate_template_for_replicaset(pod, SELECTOR, P))
    assert [(f, t) for f, t, _ in got] == [
        ("spec.spec.containers[0].name", "Invalid"),
        ("spec.spec.containers[0].imagePullPolicy", "NotSupported"),
        ("spec.spec.containers[0].ports[0].containerPort", "Required"),
        ("spec.spec.containers[0].ports[1].containerPort", "Invalid"),
        ("spec.spec.containers[1].name", "Required"),
    ]
    duplicate = template()
    duplicate["spec"]["initContainers"] = [{"name": "main", "image": "busybox"}]
    assert triples(validate_template_for_replicaset(duplicate, SELECTOR, P)) == [
        ("spec.spec.containers[0].name", "Duplicate", "")]


def test_a_template_the_selector_does_not_select() -> None:
    pod = template()
    pod["metadata"]["labels"] = {"app": "db"}
    assert triples(validate_template_for_replicaset(pod, SELECTOR, P)) == [
        ("spec.metadata.labels", "Invalid", "`selector` does not match template `labels`")]
