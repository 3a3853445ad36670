"""kubesim serves ``statefulsets.apps.kruise.io`` as a cluster with Kruise does.

Kruise's CRD gives the kind its short name ``asts``, printer columns, ``status`` and ``scale``
subresources (the selector from ``.status.labelSelector``) and both versions; Kruise's webhooks
default and validate it. kubectl and the official client see all of that here.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.fixtures.cluster import SimCluster, is_ready
from tests.kubesim_behaviour.workloads import advanced_statefulset

GROUP, PLURAL = "apps.kruise.io", "statefulsets"


def objects(cluster: SimCluster) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(cluster.api_client)


def create(cluster: SimCluster, body: dict[str, Any], version: str = "v1beta1") -> dict[str, Any]:
    created: dict[str, Any] = objects(cluster).create_namespaced_custom_object(
        GROUP, version, "default", PLURAL, body
    )
    return created


def running(cluster: SimCluster, name: str, replicas: int) -> dict[str, Any]:
    """The set once all its pods are ready and its status says so."""

    def check() -> dict[str, Any] | None:
        obj: dict[str, Any] = objects(cluster).get_namespaced_custom_object(
            GROUP, "v1beta1", "default", PLURAL, name
        )
        ready = sum(1 for p in cluster.pods(selector=f"app={name}") if is_ready(p))
        status = obj.get("status") or {}
        return obj if ready == replicas and status.get("readyReplicas") == replicas else None

    return cluster.wait_for(check, what=f"{name} running {replicas} pods")


def refusal(cluster: SimCluster, body: dict[str, Any]) -> str:
    with pytest.raises(ApiException) as caught:
        create(cluster, body)
    assert caught.value.status == 422
    return str(json.loads(caught.value.body)["message"])


def test_kubectl_get_asts_prints_kruises_columns_and_wide_adds_containers_and_images(
    cluster: SimCluster,
) -> None:
    create(cluster, advanced_statefulset("web", 3, podManagementPolicy="Parallel"))
    running(cluster, "web", 3)
    lines = cluster.kubectl("get", "asts").stdout.splitlines()
    assert lines[0].split() == ["NAME", "DESIRED", "CURRENT", "UPDATED", "READY", "AGE"]
    assert lines[1].split()[:5] == ["web", "3", "3", "3", "3"]
    wide = cluster.kubectl("get", "statefulsets.apps.kruise.io", "-o", "wide").stdout
    header, row = (line.split() for line in wide.splitlines()[:2])
    assert header[-2:] == ["CONTAINERS", "IMAGES"]
    assert row[-2:] == ["app", "registry.example/web:1"]
    assert "No resources found" in cluster.kubectl("get", "sts").stderr, "sts stays apps/v1"
    resources = cluster.kubectl("api-resources", "--api-group=apps.kruise.io").stdout
    (asts,) = [line.split() for line in resources.splitlines() if line.startswith("statefulsets")]
    assert asts == ["statefulsets", "asts", "apps.kruise.io/v1beta1", "true", "StatefulSet"]


def test_kubectl_describe_shows_the_spec_the_status_and_the_controllers_events(
    cluster: SimCluster,
) -> None:
    create(cluster, advanced_statefulset("shown", 2))
    running(cluster, "shown", 2)
    described = cluster.kubectl("describe", "asts", "shown").stdout
    assert "API Version:  apps.kruise.io/v1beta1" in described
    assert "Pod Management Policy:   OrderedReady" in described
    assert "Ready Replicas:" in described
    assert "Label Selector:" in described
    assert "create Pod shown-0 in StatefulSet shown successful" in described
    assert "create Pod shown-1 in StatefulSet shown successful" in described


def test_the_scale_subresource_reads_the_status_label_selector_and_writes_replicas(
    cluster: SimCluster,
) -> None:
    create(cluster, advanced_statefulset("sized", 2, podManagementPolicy="Parallel"))
    running(cluster, "sized", 2)
    scale = objects(cluster).get_namespaced_custom_object_scale(
        GROUP, "v1beta1", "default", PLURAL, "sized"
    )
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"] == {"replicas": 2, "selector": "app=sized"}
    objects(cluster).patch_namespaced_custom_object_scale(
        GROUP, "v1beta1", "default", PLURAL, "sized", {"spec": {"replicas": 4}}
    )
    running(cluster, "sized", 4)


def test_kruises_webhook_defaults_are_filled_in(cluster: SimCluster) -> None:
    body = advanced_statefulset("plain", 1)
    del body["spec"]["replicas"]
    created = create(cluster, {**body, "status": {"replicas": 7}})
    spec = created["spec"]
    assert spec["replicas"] == 1
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["revisionHistoryLimit"] == 10
    assert spec["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {
            "partition": 0,
            "maxUnavailable": 1,
            "podUpdatePolicy": "ReCreate",
            "minReadySeconds": 0,
        },
    }
    assert spec["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    template = spec["template"]["spec"]
    assert template["containers"][0]["imagePullPolicy"] == "Always", "Kruise's own default"
    assert (template["restartPolicy"], template["dnsPolicy"]) == ("Always", "ClusterFirst")
    assert "status" not in created, "status is written through its subresource only"


def test_v1alpha1_reads_and_writes_the_same_object(cluster: SimCluster) -> None:
    alpha = advanced_statefulset("old", 1)
    alpha["apiVersion"] = "apps.kruise.io/v1alpha1"
    create(cluster, alpha, version="v1alpha1")
    beta = objects(cluster).get_namespaced_custom_object(GROUP, "v1beta1", "default", PLURAL, "old")
    assert beta["apiVersion"] == "apps.kruise.io/v1beta1"
    shown = cluster.kubectl(
        "get", "statefulsets.v1alpha1.apps.kruise.io", "old", "-o", "jsonpath={.apiVersion}"
    ).stdout
    assert shown == "apps.kruise.io/v1alpha1"
    running(cluster, "old", 1)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"scaleStrategy": {"maxUnavailable": 2}},
            "spec.scaleStrategy.maxUnavailable: Invalid value: 2: can only work with Parallel "
            "PodManagementPolicyType",
        ),
        (
            {"podManagementPolicy": "Parallel", "scaleStrategy": {"maxUnavailable": "0%"}},
            'spec.scaleStrategy.maxUnavailable: Invalid value: "0%": should not be less than 1',
        ),
        (
            {"reserveOrdinals": ["5-3"]},
            "0 th reserve ordinal is not a valid range: 5-3",
        ),
        (
            {"updateStrategy": {"type": "Recreate"}},
            "must be 'RollingUpdate' or 'OnDelete'",
        ),
        (
            {"updateStrategy": {"rollingUpdate": {"minReadySeconds": 301}}},
            "spec.updateStrategy.rollingUpdate.minReadySeconds: Invalid value: 301: must be no "
            "more than 300 seconds",
        ),
    ],
    ids=["scale-limit-needs-parallel", "zero-percent", "backwards-range", "strategy", "ready-300"],
)
def test_specs_kruise_refuses_are_invalid_with_the_field_named(
    cluster: SimCluster, spec: dict[str, Any], message: str
) -> None:
    body = advanced_statefulset("bad", 1, **spec)
    assert message in refusal(cluster, body)


def test_an_update_may_not_change_the_fields_kruise_holds_fixed(cluster: SimCluster) -> None:
    create(cluster, advanced_statefulset("fixed", 1))
    changed = cluster.kubectl(
        "patch",
        "asts",
        "fixed",
        "--type",
        "merge",
        "-p",
        '{"spec":{"serviceName":"other"}}',
        check=False,
    )
    assert changed.returncode != 0
    assert "updates to statefulset spec for fields other than 'replicas'" in changed.stderr
    allowed = cluster.kubectl(
        "patch", "asts", "fixed", "--type", "merge", "-p", '{"spec":{"reserveOrdinals":[0]}}'
    )
    assert "patched" in allowed.stdout


def test_a_strategic_merge_patch_is_refused_as_for_custom_resources(cluster: SimCluster) -> None:
    create(cluster, advanced_statefulset("merge", 1))
    result = cluster.kubectl("patch", "asts", "merge", "-p", '{"spec":{"replicas":2}}', check=False)
    assert result.returncode != 0
    assert "application/strategic-merge-patch+json" in result.stderr
