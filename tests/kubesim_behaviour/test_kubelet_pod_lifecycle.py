"""The simulated kubelet: pod phases, readiness flips, restarts, graceful deletion."""

from __future__ import annotations

from typing import Any

from tests.fixtures.cluster import SimCluster, is_ready


def make_pod(name: str, grace: int = 30) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "terminationGracePeriodSeconds": grace,
            "containers": [{"name": "app", "image": "registry.example/app:1"}],
        },
    }


def test_a_bound_pod_goes_through_container_creating_to_running_and_ready(
    cluster_factory: Any,
) -> None:
    cluster: SimCluster = cluster_factory(create_delay=0.05, start_delay=0.4, ready_delay=0.3)
    cluster.core.create_namespaced_pod("default", make_pod("slow"))
    creating = cluster.wait_for(
        lambda: (
            (p := cluster.core.read_namespaced_pod("slow", "default")).status.container_statuses
            and p
        ),
        what="container statuses",
    )
    assert creating.status.phase == "Pending"
    assert creating.status.container_statuses[0].state.waiting.reason == "ContainerCreating"
    running = cluster.wait_for(
        lambda: (
            (p := cluster.core.read_namespaced_pod("slow", "default")).status.phase == "Running"
            and p
        ),
        what="running",
    )
    assert running.status.pod_ip
    cluster.wait_for(lambda: is_ready(cluster.pods()[0]), what="ready")


def test_tests_can_flip_readiness_and_report_restarts(cluster: SimCluster) -> None:
    cluster.core.create_namespaced_pod("default", make_pod("flip"))
    cluster.wait_for(lambda: is_ready(cluster.pods()[0]), what="ready")
    cluster.set_pod_ready("default", "flip", False)
    cluster.wait_for(lambda: not is_ready(cluster.pods()[0]), what="not ready")
    cluster.set_pod_ready("default", "flip", True)
    cluster.wait_for(lambda: is_ready(cluster.pods()[0]), what="ready again")
    cluster.restart_containers("default", "flip", 3)
    status = cluster.wait_for(
        lambda: (
            (
                s := cluster.core.read_namespaced_pod("flip", "default").status.container_statuses[
                    0
                ]
            ).restart_count
            == 3
            and s
        ),
        what="restarts",
    )
    assert status.last_state.terminated.reason == "Error"


def test_graceful_deletion_keeps_the_pod_terminating_until_the_kubelet_finishes(
    cluster_factory: Any,
) -> None:
    cluster: SimCluster = cluster_factory(max_termination_grace=0.5)
    cluster.core.create_namespaced_pod("default", make_pod("bye", grace=30))
    cluster.wait_for(lambda: is_ready(cluster.pods()[0]), what="ready")
    cluster.core.delete_namespaced_pod("bye", "default")
    terminating = cluster.core.read_namespaced_pod("bye", "default")
    assert terminating.metadata.deletion_timestamp is not None
    cluster.wait_for(lambda: not cluster.pods(), what="pod gone")


def test_pods_get_distinct_addresses_from_their_nodes_pod_ranges(cluster: SimCluster) -> None:
    import ipaddress

    from tests.kubesim_behaviour.workloads import deployment

    cluster.apps.create_namespaced_deployment("default", deployment("addr", 24))
    pods = cluster.wait_for(
        lambda: (
            (r := [p for p in cluster.pods(selector="app=addr") if is_ready(p)])
            and len(r) == 24
            and r
        ),
        what="24 ready pods",
    )
    nodes = {n.metadata.name: n for n in cluster.core.list_node().items}
    addresses = [p["status"]["podIP"] for p in pods]
    assert len(set(addresses)) == 24
    for pod in pods:
        node = nodes[pod["spec"]["nodeName"]]
        assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(
            node.spec.pod_cidr
        )
        internal = [a.address for a in node.status.addresses if a.type == "InternalIP"]
        assert pod["status"]["hostIP"] == internal[0]
