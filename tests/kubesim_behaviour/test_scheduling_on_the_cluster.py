"""The scheduler on a running cluster: placement rules, Unschedulable, retry on new nodes."""

from __future__ import annotations

from typing import Any

from tests.fixtures.cluster import SimCluster, is_ready


def bare_pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}], **spec},
    }


def scheduled_condition(cluster: SimCluster, name: str) -> Any:
    pod = cluster.core.read_namespaced_pod(name, "default")
    return next((c for c in pod.status.conditions or () if c.type == "PodScheduled"), None)


def test_a_pod_that_fits_no_node_is_unschedulable_until_a_node_appears(
    cluster: SimCluster,
) -> None:
    big = bare_pod("big")
    big["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "12"}}
    cluster.core.create_namespaced_pod("default", big)
    condition = cluster.wait_for(
        lambda: (c := scheduled_condition(cluster, "big")) and c.status == "False" and c,
        what="PodScheduled=False",
    )
    assert condition.reason == "Unschedulable"
    assert condition.message == (
        "0/12 nodes are available: 12 Insufficient cpu. preemption: 0/12 nodes are available: "
        "12 No preemption victims found for incoming pod."
    )
    assert cluster.core.read_namespaced_pod("big", "default").status.phase == "Pending"
    cluster.add_node(
        "large-1", labels={"topology.kubernetes.io/zone": "zone-a"}, allocatable={"cpu": "16"}
    )
    pod = cluster.wait_for(
        lambda: (p := cluster.core.read_namespaced_pod("big", "default")).spec.node_name and p,
        what="big scheduled",
    )
    assert pod.spec.node_name == "large-1"
    cluster.wait_for(lambda: is_ready(cluster.pods()[0]), what="big ready")


def test_binding_is_seen_by_a_watcher_as_upstream_sends_it(cluster: SimCluster) -> None:
    from kubernetes import watch

    cluster.core.create_namespaced_pod("default", bare_pod("seen"))
    stream = watch.Watch()
    phases: list[tuple[str, str | None, str | None]] = []
    for event in stream.stream(cluster.core.list_namespaced_pod, "default", timeout_seconds=10):
        pod = event["object"]
        phases.append((event["type"], pod.spec.node_name, pod.status.phase))
        ready = any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or ())
        if ready:
            stream.stop()
    assert phases[0][0] == "ADDED"
    bound_at = next(i for i, (_t, node, _p) in enumerate(phases) if node)
    assert all(node is None for _t, node, _p in phases[:bound_at])
    assert phases[bound_at][2] in (None, "Pending")
    assert phases[-1][2] == "Running"


def test_node_selectors_affinity_and_taints_steer_pods_on_the_elastic_topology(
    elastic_cluster: SimCluster,
) -> None:
    cluster = elastic_cluster
    cluster.core.create_namespaced_pod(
        "default", bare_pod("no-toleration", nodeSelector={"topology.kubernetes.io/zone": "eci"})
    )
    cluster.core.create_namespaced_pod(
        "default",
        bare_pod(
            "tolerant",
            tolerations=[{"key": "virtual-kubelet.io/provider", "operator": "Exists"}],
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "type", "operator": "In", "values": ["virtual-kubelet"]}
                                ]
                            }
                        ]
                    }
                }
            },
        ),
    )
    cluster.core.create_namespaced_pod("default", bare_pod("plain"))
    tolerant = cluster.wait_for(
        lambda: cluster.core.read_namespaced_pod("tolerant", "default").spec.node_name,
        what="tolerant scheduled",
    )
    plain = cluster.wait_for(
        lambda: cluster.core.read_namespaced_pod("plain", "default").spec.node_name,
        what="plain scheduled",
    )
    assert tolerant.startswith("eci-")
    assert plain.startswith("ack-")
    condition = cluster.wait_for(
        lambda: scheduled_condition(cluster, "no-toleration"), what="no-toleration condition"
    )
    assert condition.message.startswith(
        "0/6 nodes are available: 2 node(s) had untolerated taint(s), "
        "4 node(s) didn't match Pod's node affinity/selector."
    )


def test_a_cordoned_node_takes_no_new_pods(cluster: SimCluster) -> None:
    for node in cluster.core.list_node().items:
        if node.metadata.name != "zone-b-2":
            cluster.core.patch_node(node.metadata.name, {"spec": {"unschedulable": True}})
    for i in range(3):
        cluster.core.create_namespaced_pod("default", bare_pod(f"p{i}"))
    nodes = {
        cluster.wait_for(
            lambda i=i: cluster.core.read_namespaced_pod(f"p{i}", "default").spec.node_name,
            what=f"p{i} scheduled",
        )
        for i in range(3)
    }
    assert nodes == {"zone-b-2"}
    taints = cluster.wait_for(
        lambda: cluster.core.read_node("zone-a-1").spec.taints, what="unschedulable taint"
    )
    assert [(t.key, t.effect) for t in taints] == [
        ("node.kubernetes.io/unschedulable", "NoSchedule")
    ]


def test_a_gated_pod_waits_until_its_gates_are_removed(cluster: SimCluster) -> None:
    cluster.core.create_namespaced_pod(
        "default", bare_pod("gated", schedulingGates=[{"name": "example.com/quota"}])
    )
    cluster.core.create_namespaced_pod("default", bare_pod("marker"))
    cluster.wait_for(
        lambda: cluster.core.read_namespaced_pod("marker", "default").spec.node_name,
        what="an ungated pod to schedule",
    )
    assert cluster.core.read_namespaced_pod("gated", "default").spec.node_name is None
    cluster.core.patch_namespaced_pod("gated", "default", {"spec": {"schedulingGates": None}})
    cluster.wait_for(
        lambda: cluster.core.read_namespaced_pod("gated", "default").spec.node_name,
        what="the ungated pod to schedule",
    )


def test_pods_of_a_deleted_node_are_collected_and_replaced(cluster: SimCluster) -> None:
    from tests.kubesim_behaviour.workloads import deployment

    cluster.apps.create_namespaced_deployment("default", deployment("moving", 12))
    cluster.wait_for(
        lambda: sum(is_ready(p) for p in cluster.pods(selector="app=moving")) == 12,
        what="12 ready",
    )
    cluster.core.delete_node("zone-c-1")
    pods = cluster.wait_for(
        lambda: (
            (live := [p for p in cluster.pods(selector="app=moving") if is_ready(p)])
            and len(live) == 12
            and all(
                p["spec"]["nodeName"] != "zone-c-1" for p in cluster.pods(selector="app=moving")
            )
            and live
        ),
        what="replacements on the remaining nodes",
    )
    assert {p["spec"]["nodeName"] for p in pods} <= {
        f"zone-{z}-{i}" for z in "abc" for i in range(1, 5)
    } - {"zone-c-1"}


def test_host_anti_affinity_runs_one_replica_per_node_and_leaves_the_rest_pending(
    cluster: SimCluster,
) -> None:
    from tests.kubesim_behaviour.workloads import deployment

    body = deployment(
        "spread",
        13,
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "spread"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        },
    )
    cluster.apps.create_namespaced_deployment("default", body)
    pending = cluster.wait_for(
        lambda: (
            (pods := cluster.pods(selector="app=spread"))
            and sum(is_ready(p) for p in pods) == 12
            and [p for p in pods if not p["spec"].get("nodeName")]
        ),
        what="12 ready and one pending",
    )
    assert (
        len({p["spec"]["nodeName"] for p in cluster.pods(selector="app=spread") if is_ready(p)})
        == 12
    )
    name = pending[0]["metadata"]["name"]
    condition = cluster.wait_for(
        lambda: scheduled_condition(cluster, name), what="the pending pod's condition"
    )
    assert condition.message.startswith(
        "0/12 nodes are available: 12 node(s) didn't match pod anti-affinity rules."
    )
