"""Deployments on the three-zone cluster, through the official client."""

from __future__ import annotations

import time
from collections import Counter

from kubesim.behaviour.pod_ranking import DELETION_COST
from tests.fixtures.cluster import SimCluster, is_ready, is_terminating
from tests.kubesim_behaviour.workloads import deployment


def ready_pods(cluster: SimCluster, app: str) -> list[dict]:
    return [p for p in cluster.pods(selector=f"app={app}") if is_ready(p) and not is_terminating(p)]


def test_a_deployment_of_thirty_lands_thirty_ready_pods_spread_over_every_node(
    cluster: SimCluster,
) -> None:
    cluster.apps.create_namespaced_deployment("default", deployment("web", 30))
    pods = cluster.wait_for(
        lambda: (r := ready_pods(cluster, "web")) and len(r) == 30 and r,
        what="30 ready pods",
    )
    per_node = Counter(p["spec"]["nodeName"] for p in pods)
    assert len(per_node) == 12
    assert set(per_node.values()) <= {2, 3}
    for pod in cluster.core.list_namespaced_pod("default", label_selector="app=web").items:
        assert pod.status.phase == "Running"
        assert pod.metadata.owner_references[0].kind == "ReplicaSet"
        assert pod.metadata.labels["pod-template-hash"]
    status = cluster.wait_for(
        lambda: (
            (
                s := cluster.apps.read_namespaced_deployment_status("web", "default").status
            ).available_replicas
            == 30
            and s
        ),
        what="deployment status",
    )
    assert status.ready_replicas == 30
    assert status.updated_replicas == 30
    conditions = {c.type: c.reason for c in status.conditions}
    assert conditions == {
        "Available": "MinimumReplicasAvailable",
        "Progressing": "NewReplicaSetAvailable",
    }


def test_scaling_thirty_to_ten_removes_the_pods_with_the_lowest_deletion_cost(
    cluster: SimCluster,
) -> None:
    cluster.apps.create_namespaced_deployment("default", deployment("web", 30))
    pods = cluster.wait_for(
        lambda: (r := ready_pods(cluster, "web")) and len(r) == 30 and r, what="30 ready pods"
    )
    # costs deliberately unrelated to name, node or age
    costs = {p["metadata"]["name"]: (i * 7) % 30 for i, p in enumerate(pods)}
    for name, cost in costs.items():
        cluster.core.patch_namespaced_pod(
            name, "default", {"metadata": {"annotations": {DELETION_COST: str(cost)}}}
        )
    cluster.apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 10}})
    survivors = cluster.wait_for(
        lambda: (
            (live := [p for p in cluster.pods(selector="app=web") if not is_terminating(p)])
            and len(live) == 10
            and live
        ),
        what="10 remaining pods",
    )
    assert sorted(costs[p["metadata"]["name"]] for p in survivors) == list(range(20, 30))


def test_a_rolling_update_replaces_every_pod_within_surge_and_unavailability(
    cluster: SimCluster,
) -> None:
    body = deployment("roll", 6)
    body["spec"]["strategy"] = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 2, "maxUnavailable": 1},
    }
    cluster.apps.create_namespaced_deployment("default", body)
    cluster.wait_for(lambda: len(ready_pods(cluster, "roll")) == 6, what="6 ready pods")
    old_hashes = {
        p["metadata"]["labels"]["pod-template-hash"] for p in cluster.pods(selector="app=roll")
    }
    cluster.apps.patch_namespaced_deployment(
        "roll",
        "default",
        {
            "spec": {
                "template": {
                    "spec": {"containers": [{"name": "app", "image": "registry.example/roll:2"}]}
                }
            }
        },
    )
    worst_total, worst_ready = 0, 6
    deadline_hit = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pods = [p for p in cluster.pods(selector="app=roll") if not is_terminating(p)]
        worst_total = max(worst_total, len(pods))
        worst_ready = min(worst_ready, sum(1 for p in pods if is_ready(p)))
        new = [p for p in pods if p["metadata"]["labels"]["pod-template-hash"] not in old_hashes]
        if len(new) == 6 and len(pods) == 6 and all(is_ready(p) for p in new):
            break
    else:
        deadline_hit = True
    assert not deadline_hit, "rollout did not finish"
    assert worst_total <= 6 + 2
    assert worst_ready >= 6 - 1
    images = {
        p["spec"]["containers"][0]["image"]
        for p in cluster.pods(selector="app=roll")
        if not is_terminating(p)
    }
    assert images == {"registry.example/roll:2"}
    d = cluster.apps.read_namespaced_deployment("roll", "default")
    assert d.metadata.annotations["deployment.kubernetes.io/revision"] == "2"


def test_a_recreate_deployment_removes_old_pods_before_creating_new_ones(
    cluster: SimCluster,
) -> None:
    body = deployment("rec", 3)
    body["spec"]["strategy"] = {"type": "Recreate"}
    cluster.apps.create_namespaced_deployment("default", body)
    cluster.wait_for(lambda: len(ready_pods(cluster, "rec")) == 3, what="3 ready pods")
    old = {p["metadata"]["labels"]["pod-template-hash"] for p in cluster.pods(selector="app=rec")}
    cluster.apps.patch_namespaced_deployment(
        "rec", "default", {"spec": {"template": {"metadata": {"labels": {"app": "rec", "v": "2"}}}}}
    )
    mixed = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pods = cluster.pods(selector="app=rec")
        hashes = {p["metadata"]["labels"]["pod-template-hash"] for p in pods}
        if hashes & old and hashes - old:
            mixed = True
        if pods and not hashes & old and len(ready_pods(cluster, "rec")) == 3:
            break
    else:
        raise AssertionError("the recreate rollout did not finish")
    assert not mixed


def test_a_paused_deployment_scales_but_does_not_roll(cluster: SimCluster) -> None:
    cluster.apps.create_namespaced_deployment("default", deployment("paused", 2))
    cluster.wait_for(lambda: len(ready_pods(cluster, "paused")) == 2, what="2 ready pods")
    cluster.apps.patch_namespaced_deployment("paused", "default", {"spec": {"paused": True}})
    cluster.apps.patch_namespaced_deployment(
        "paused",
        "default",
        {
            "spec": {
                "replicas": 4,
                "template": {"metadata": {"labels": {"app": "paused", "v": "2"}}},
            }
        },
    )
    pods = cluster.wait_for(
        lambda: (r := ready_pods(cluster, "paused")) and len(r) == 4 and r, what="4 ready pods"
    )
    assert all("v" not in p["metadata"]["labels"] for p in pods)


def test_a_rollout_that_makes_no_progress_exceeds_its_deadline(cluster: SimCluster) -> None:
    body = deployment("stuck", 2)
    body["spec"]["progressDeadlineSeconds"] = 1
    body["spec"]["template"]["metadata"]["annotations"] = {"kubesim.spreadbus.io/ready": "false"}
    cluster.apps.create_namespaced_deployment("default", body)
    condition = cluster.wait_for(
        lambda: next(
            (
                c
                for c in cluster.apps.read_namespaced_deployment_status(
                    "stuck", "default"
                ).status.conditions
                or ()
                if c.type == "Progressing" and c.status == "False"
            ),
            None,
        ),
        what="ProgressDeadlineExceeded",
    )
    assert condition.reason == "ProgressDeadlineExceeded"
    rollout = cluster.kubectl("rollout", "status", "deployment/stuck", "--timeout=20s", check=False)
    assert rollout.returncode != 0
    assert 'deployment "stuck" exceeded its progress deadline' in rollout.stderr


def test_min_ready_seconds_delays_availability(cluster: SimCluster) -> None:
    body = deployment("patient", 2)
    body["spec"]["minReadySeconds"] = 2
    cluster.apps.create_namespaced_deployment("default", body)
    cluster.wait_for(lambda: len(ready_pods(cluster, "patient")) == 2, what="2 ready pods")
    status = cluster.apps.read_namespaced_deployment_status("patient", "default").status
    assert not status.available_replicas
    cluster.wait_for(
        lambda: (
            cluster.apps.read_namespaced_deployment_status(
                "patient", "default"
            ).status.available_replicas
            == 2
        ),
        what="2 available pods",
    )
