"""A WorkloadSpread over a whitelisted custom workload (a CRD) on the local stack.

Every service gets the same ``SPREADBUS_WORKLOAD_WHITELIST``: the watcher streams the custom
resource once its CRD is installed, the planner reads its ``replicasPath`` for percentages, and
the webhook steers the pods it owns. kubesim has no controller for the kind, so the test creates
the pods itself, owned by the custom object as its operator would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.workloadspread_e2e.stack import (
    create_namespace,
    local_stack,
    spread_status,
    subset_field,
    subset_of,
    wait_for,
    zone_term,
)

pytestmark = pytest.mark.e2e
WHITELIST = {"workloads": [{"Group": "kubeflow.org", "Version": "v1", "Kind": "TFJob",
                            "replicasPath": "spec.replicas"}]}
NS = "ml"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.ApiClient]:
    data_dir: Path = tmp_path_factory.mktemp("custom-stack")
    env = {"SPREADBUS_WORKLOAD_WHITELIST": json.dumps(WHITELIST)}
    with local_stack(data_dir, "three-zones", env) as api:
        yield api


def install_crd(api: client.ApiClient) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "tfjobs.kubeflow.org"},
        "spec": {
            "group": "kubeflow.org", "scope": "Namespaced",
            "names": {"plural": "tfjobs", "singular": "tfjob", "kind": "TFJob",
                      "listKind": "TFJobList"},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                "openAPIV3Schema": {"type": "object",
                                    "x-kubernetes-preserve-unknown-fields": True}}}],
        },
    }
    extensions: Any = client.ApiextensionsV1Api(api)
    extensions.create_custom_resource_definition(crd)


def pod(name: str, job_uid: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "train"},
                         "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                                              "name": "train", "uid": job_uid,
                                              "controller": True}]},
            "spec": {"containers": [{"name": "worker", "image": "trainer:1",
                                     "resources": {"requests": {"cpu": "10m"}}}]}}


def test_a_custom_workload_is_split_by_its_replicas_path(api: client.ApiClient) -> None:
    create_namespace(api, NS)
    install_crd(api)
    custom: Any = client.CustomObjectsApi(api)
    job = wait_for("the TFJob API to be served", lambda: _create_job(custom), 30)
    custom.create_namespaced_custom_object("apps.kruise.io", "v1alpha1", NS, "workloadspreads", {
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
        "metadata": {"name": "ws-train"},
        "spec": {"targetRef": {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                               "name": "train"},
                 "subsets": [{"name": "zone-a", "maxReplicas": "50%",
                              "requiredNodeSelectorTerm": zone_term("zone-a")},
                             {"name": "zone-b", "requiredNodeSelectorTerm": zone_term("zone-b")}]},
    })

    def counted_against_four() -> Any:
        missing = subset_field(spread_status(api, NS, "ws-train"), "missingReplicas")
        return missing if missing == {"zone-a": 2, "zone-b": -1} else None

    # 50% of spec.replicas (4), read by the planner from the streamed custom object.
    wait_for("the planner to count against the TFJob's replicas", counted_against_four, 60,
             lambda: spread_status(api, NS, "ws-train"))
    core: Any = client.CoreV1Api(api)
    uid = job["metadata"]["uid"]
    for i in range(4):
        core.create_namespaced_pod(NS, pod(f"train-worker-{i}", uid))
    pods = core.list_namespaced_pod(NS, label_selector="app=train").items
    assert sorted(subset_of(p) for p in pods) == ["zone-a", "zone-a", "zone-b", "zone-b"]

    def settled() -> Any:
        status = spread_status(api, NS, "ws-train")
        replicas = subset_field(status, "replicas")
        return status if replicas == {"zone-a": 2, "zone-b": 2} else None

    status = wait_for("the status to count the pods", settled, 60,
                      lambda: spread_status(api, NS, "ws-train"))
    assert subset_field(status, "missingReplicas") == {"zone-a": 0, "zone-b": -1}


def _create_job(custom: Any) -> dict[str, Any] | None:
    try:
        job: dict[str, Any] = custom.create_namespaced_custom_object(
            "kubeflow.org", "v1", NS, "tfjobs",
            {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "train"},
             "spec": {"replicas": 4}})
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return job
