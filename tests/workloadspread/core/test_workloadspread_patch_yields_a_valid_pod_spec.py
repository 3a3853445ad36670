"""A subset's patch merged onto the target's pod template is validated as a whole pod spec.

Kruise's webhook (pkg/webhook/workloadspread/validating/workloadspread_validation.go,
``validateWorkloadSpreadSubsets`` and ``withVolumeClaimTemplates``) builds the target's pod
template, a CloneSet's or StatefulSet's with one volume per volumeClaimTemplate, merges each
subset's patch onto it and runs ``ValidatePodSpec`` at ``spec.subsets[i].patch``. The first table
is its ``Test_validateWorkloadSpreadSubsets`` (workloadspread_validation_test.go): a mount of a
claim template is fine, the same mount after the claim is renamed is one error.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesemantics.field_errors import describe
from spreadbus.features.workloadspread.core.validation import validate_workloadspread
from tests.workloadspread.core.builders import deployment, subset, workloadspread

JSON = dict[str, Any]
ANNOTATION_PATCH: JSON = {"metadata": {"annotations": {"some-key": "some-value"}}}


def with_claim(api_version: str, kind: str, labels: dict[str, str]) -> JSON:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "web", "namespace": "default", "uid": "uid-web"},
        "spec": {
            "replicas": 6,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{
                    "name": "main", "image": "img:latest",
                    "volumeMounts": [{"name": "vol-1--0", "mountPath": "/logs",
                                      "subPath": "logs"}],
                }]},
            },
            "volumeClaimTemplates": [{"metadata": {"name": "vol-1--0"}}],
        },
    }


def renamed_claim(workload: JSON) -> JSON:
    bad = copy.deepcopy(workload)
    bad["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] = "bad-boy"
    return bad


CLONESET = with_claim("apps.kruise.io/v1alpha1", "CloneSet", {"app": "test"})
STATEFULSET = with_claim("apps/v1", "StatefulSet", {"app": "nginx"})


def errors(workload: JSON, patch: JSON) -> list[str]:
    ws = workloadspread(subset("a", patch=patch), kind=workload["kind"],
                        api_version=workload["apiVersion"])
    return [describe(e) for e in validate_workloadspread(ws, workload=workload)]


@pytest.mark.parametrize(
    ("workload", "expected"),
    [
        (CLONESET, []),
        (renamed_claim(CLONESET),
         ['spec.subsets[0].patch.containers[0].volumeMounts[0].name: Not found: "vol-1--0"']),
        (STATEFULSET, []),
        (renamed_claim(STATEFULSET),
         ['spec.subsets[0].patch.containers[0].volumeMounts[0].name: Not found: "vol-1--0"']),
    ],
    ids=["good cloneset", "bad cloneset", "good sts", "bad sts"],
)
def test_kruise_table_claim_templates_are_the_pods_volumes(
    workload: JSON, expected: list[str]
) -> None:
    assert errors(workload, ANNOTATION_PATCH) == expected


def test_a_patch_mounting_a_volume_nobody_declares_is_refused() -> None:
    patch = {"spec": {"containers": [{"name": "main", "volumeMounts": [
        {"name": "cache", "mountPath": "/cache"}]}]}}
    assert errors(deployment(), patch) == [
        'spec.subsets[0].patch.containers[0].volumeMounts[0].name: Not found: "cache"'
    ]


def test_a_patch_that_adds_the_volume_it_mounts_is_accepted() -> None:
    patch = {"spec": {
        "volumes": [{"name": "cache", "emptyDir": {}}],
        "containers": [{"name": "main", "volumeMounts": [{"name": "cache", "mountPath": "/c"}]}],
    }}
    assert errors(deployment(), patch) == []


def test_a_deployments_claim_templates_are_not_volumes() -> None:
    """Only a CloneSet's and a StatefulSet's claim templates become volumes."""
    workload = deployment()
    workload["spec"]["volumeClaimTemplates"] = [{"metadata": {"name": "data"}}]
    patch = {"spec": {"containers": [{"name": "main", "volumeMounts": [
        {"name": "data", "mountPath": "/data"}]}]}}
    assert errors(workload, patch) == [
        'spec.subsets[0].patch.containers[0].volumeMounts[0].name: Not found: "data"'
    ]


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        ({"spec": {"volumes": [{"name": "v"}]}},
         ["spec.subsets[0].patch.volumes[0]: Required value: must specify a volume type"]),
        ({"spec": {"volumes": [{"name": "v", "emptyDir": {}, "hostPath": {"path": "/x"}}]}},
         ["spec.subsets[0].patch.volumes[0].hostPath: Forbidden: "
          "may not specify more than 1 volume type"]),
        ({"spec": {"volumes": [{"name": "v", "emptyDir": {}, "downwardAPI": {}}]}},
         ["spec.subsets[0].patch.volumes[0].downwarAPI: Forbidden: "
          "may not specify more than 1 volume type"]),
        ({"spec": {"volumes": [{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]}},
         ['spec.subsets[0].patch.volumes[1].name: Duplicate value: "v"']),
        ({"spec": {"volumes": [{"name": "v", "persistentVolumeClaim": {}}]}},
         ["spec.subsets[0].patch.volumes[0].persistentVolumeClaim.claimName: Required value"]),
        ({"spec": {"volumes": [{"name": "v", "emptyDir": {}}], "containers": [
            {"name": "main", "volumeMounts": [{"name": "v", "mountPath": "/a"},
                                               {"name": "v", "mountPath": "/a"}]}]}},
         ['spec.subsets[0].patch.containers[0].volumeMounts[1].mountPath: Invalid value: "/a": '
          "must be unique"]),
        ({"spec": {"volumes": [{"name": "v", "emptyDir": {}}], "containers": [
            {"name": "main", "volumeMounts": [{"name": "v", "mountPath": "/a",
                                               "subPath": "../up"}]}]}},
         ["spec.subsets[0].patch.containers[0].volumeMounts.subPath: Invalid value: \"../up\": "
          "must not contain '..'"]),
        ({"spec": {"containers": [{"name": "main", "imagePullPolicy": "Sometimes"}]}},
         ['spec.subsets[0].patch.containers[0].imagePullPolicy: Unsupported value: '
          'supported values: "Always", "IfNotPresent", "Never"']),
    ],
    ids=["no source", "two sources", "Kubernetes' spelling", "duplicate name",
         "claim without name", "same mount path", "sub path up", "pull policy"],
)
def test_the_merged_pod_spec_is_checked_with_kubernetes_paths_and_messages(
    patch: JSON, expected: list[str]
) -> None:
    assert errors(deployment(), patch) == expected
