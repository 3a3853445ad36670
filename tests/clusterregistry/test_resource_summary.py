"""A member's resource and node summaries, as Karmada's cluster-status controller computes them.

The first cases transcribe karmada-io/karmada ``pkg/controllers/status/
cluster_status_controller_test.go`` (``TestGetResourceSummary``, ``TestGetClusterAllocatable``,
``TestGetAllocatingResource``, ``TestGetAllocatedResource``, ``TestGetNodeSummary``); the
others pin the arithmetic of ``pkg/util/resource.go`` they rest on.
"""

from __future__ import annotations

from typing import Any

import pytest

from spreadbus.clusterregistry.resource_summary import (
    allocatable,
    allocated,
    allocating,
    is_scalar_resource,
    node_summary,
    resource_summary,
)


def node(allocatable: dict[str, Any], ready: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"allocatable": allocatable}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    return {"kind": "Node", "status": status}


def pod(requests: dict[str, Any] | None = None, *, node_name: str = "", phase: str = "Pending",
        init: list[dict[str, Any]] | None = None,
        overhead: dict[str, Any] | None = None) -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": requests or {}}}
    spec: dict[str, Any] = {"containers": [container]}
    if node_name:
        spec["nodeName"] = node_name
    if init is not None:
        spec["initContainers"] = [{"name": f"i{i}", "resources": {"requests": r}}
                                  for i, r in enumerate(init)]
    if overhead is not None:
        spec["overhead"] = overhead
    return {"kind": "Pod", "spec": spec, "status": {"phase": phase}}


# -- transcribed from Karmada's tests ----------------------------------------------------------

def test_get_resource_summary() -> None:
    """An unscheduled pod counts as allocating (with ``pods``); a name that is no scalar
    resource is summed in allocatable but never counted in a request."""
    summary = resource_summary([node({"test": "0"}), node({"test": "0"})],
                               [pod({"test": "0"})])
    assert "test" in summary["allocatable"]
    assert "pods" in summary["allocating"]
    assert "test" not in summary.get("allocated", {})


def test_get_cluster_allocatable() -> None:
    assert allocatable([node({"test": "0"}), node({"test": "0"})]) == {"test": "0"}


def test_get_allocating_resource() -> None:
    assert allocating([pod({"test": "0"})])["pods"] == "1"


def test_get_allocated_resource() -> None:
    assert allocated([pod({"test": "0"}, node_name="node1", phase="Pending")])["pods"] == "1"


def test_get_node_summary() -> None:
    nodes = [node({}, ready="True"), {"status": {"conditions": [{"type": "MemoryPressure"}]}}]
    assert node_summary(nodes) == {"totalNum": 2, "readyNum": 1}


# -- the arithmetic ----------------------------------------------------------------------------

def test_allocatable_sums_every_node_in_the_first_nodes_format() -> None:
    nodes = [node({"cpu": "4", "memory": "16Gi", "pods": "110", "example.com/gpu": "2"})
             for _ in range(3)]
    assert allocatable(nodes) == {"cpu": "12", "example.com/gpu": "6", "memory": "48Gi",
                                  "pods": "330"}


def test_bound_pods_that_finished_are_not_allocated() -> None:
    pods = [pod({"cpu": "250m", "memory": "64Mi"}, node_name="n1", phase="Running"),
            pod({"cpu": "250m", "memory": "64Mi"}, node_name="n1", phase="Succeeded"),
            pod({"cpu": "1", "memory": "1Gi"}, node_name="n2", phase="Failed"),
            pod({"cpu": "500m"})]
    assert allocated(pods) == {"cpu": "250m", "memory": "64Mi", "pods": "1"}
    assert allocating(pods) == {"cpu": "500m", "pods": "1"}


def test_requests_round_up_to_millicores_and_whole_bytes() -> None:
    assert allocating([pod({"cpu": "0.0001", "memory": "1.5"})]) == {
        "cpu": "1m", "memory": "2", "pods": "1"}


def test_init_containers_raise_the_running_total_not_each_pod() -> None:
    """Karmada raises the total to an init container's request after adding the pod's own
    containers, so the second pod's large init container is compared with both pods' sum."""
    pods = [pod({"cpu": "1"}, init=[{"cpu": "2"}]), pod({"cpu": "1"}, init=[{"cpu": "2500m"}])]
    assert allocating(pods)["cpu"] == "3"  # max(max(1, 2) + 1, 2.5)
    assert allocating(pods[:1])["cpu"] == "2"


def test_overhead_is_added_to_the_request() -> None:
    assert allocating([pod({"cpu": "100m"}, overhead={"cpu": "50m"})])["cpu"] == "150m"


def test_no_pods_leaves_the_requests_out_of_the_summary() -> None:
    assert resource_summary([node({"cpu": "2"})], []) == {"allocatable": {"cpu": "2"}}


def test_a_quantity_that_does_not_parse_is_skipped() -> None:
    assert allocatable([node({"cpu": "lots"}), node({"cpu": "2"})]) == {"cpu": "2"}
    assert allocating([pod({"cpu": "lots"})]) == {"pods": "1"}


@pytest.mark.parametrize(("name", "scalar"), [
    ("example.com/gpu", True), ("hugepages-2Mi", True), ("attachable-volumes-aws-ebs", True),
    ("kubernetes.io/batch-cpu", True), ("cpu", False), ("test", False),
    ("requests.example.com/gpu", False),
])
def test_scalar_resources_are_kubernetes_scalar_names(name: str, scalar: bool) -> None:
    assert is_scalar_resource(name) is scalar


def test_huge_pages_are_written_in_binary() -> None:
    assert allocating([pod({"hugepages-2Mi": "4Mi"})])["hugepages-2Mi"] == "4Mi"
