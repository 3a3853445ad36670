"""Deployments on the three-zone cluster, through the official client."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from kubernetes import client, watch

from kubesim.behaviour.pod_ranking import DELETION_COST
from tests.fixtures.cluster import SimCluster, is_ready, is_terminating
from tests.kubesim_behaviour.workloads import deployment


def ready_pods(cluster: SimCluster, app: str) -> list[dict]:
    return [p for p in cluster.pods(selector=f"app={app}") if is_ready(p) and not is_terminating(p)]


def pod_ready(pod: client.V1Pod) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or ())


@contextmanager
def pod_states(cluster: SimCluster, selector: str) -> Iterator[Iterator[dict[str, client.V1Pod]]]:
    """Every state of the selected pods: first as listed, then after each watch event.

    A test lists before it acts and checks an invariant on each state, so no intermediate state
    the API server went through escapes it, however fast the controllers are.
    """
    listed = cluster.core.list_namespaced_pod("default", label_selector=selector)
    watcher = watch.Watch()
    events = watcher.stream(
        cluster.core.list_namespaced_pod,
        "default",
        label_selector=selector,
        resource_version=listed.metadata.resource_version,
        timeout_seconds=60,
    )

    def states() -> Iterator[dict[str, client.V1Pod]]:
        pods = {p.metadata.name: p for p in listed.items}
        yield pods
        for event in events:
            assert event["type"] in ("ADDED", "MODIFIED", "DELETED"), event
            pod = event["object"]
            if event["type"] == "DELETED":
                pods.pop(pod.metadata.name, None)
            else:
                pods[pod.metadata.name] = pod
            yield pods
        pytest.fail(f"the pods {selector} did not reach the awaited state within 60 s")

    sequence = states()
    try:
        yield sequence
    finally:
        sequence.close()
        events.close()
        watcher.stop()


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
    with pod_states(cluster, "app=roll") as states:
        old_hashes = {p.metadata.labels["pod-template-hash"] for p in next(states).values()}
        cluster.apps.patch_namespaced_deployment(
            "roll",
            "default",
            {
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [{"name": "app", "image": "registry.example/roll:2"}]
                        }
                    }
                }
            },
        )
        for pods in states:
            live = [p for p in pods.values() if not p.metadata.deletion_timestamp]
            assert len(live) <= 6 + 2, f"surge beyond maxSurge: {sorted(pods)}"
            assert sum(1 for p in live if pod_ready(p)) >= 6 - 1, "below maxUnavailable"
            new = [p for p in live if p.metadata.labels["pod-template-hash"] not in old_hashes]
            if len(new) == 6 and len(live) == 6 and all(pod_ready(p) for p in new):
                break
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
    with pod_states(cluster, "app=rec") as states:
        old = {p.metadata.labels["pod-template-hash"] for p in next(states).values()}
        cluster.apps.patch_namespaced_deployment(
            "rec",
            "default",
            {"spec": {"template": {"metadata": {"labels": {"app": "rec", "v": "2"}}}}},
        )
        for pods in states:
            hashes = {p.metadata.labels["pod-template-hash"] for p in pods.values()}
            assert not (hashes & old and hashes - old), "old and new pods ran side by side"
            live = [p for p in pods.values() if not p.metadata.deletion_timestamp]
            if pods and not hashes & old and sum(1 for p in live if pod_ready(p)) == 3:
                break


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
    status = cluster.wait_for(
        lambda: (
            (
                s := cluster.apps.read_namespaced_deployment_status("patient", "default").status
            ).available_replicas
            == 2
            and s
        ),
        what="2 available pods",
    )
    # timestamps, not the moment a test happens to look: the deployment turned Available no
    # sooner than minReadySeconds after its last pod turned Ready (both whole seconds, truncated,
    # which keeps the difference at least 2 when the true one is)
    available = next(c for c in status.conditions if c.type == "Available")
    assert available.status == "True"
    pods = cluster.core.list_namespaced_pod("default", label_selector="app=patient").items
    assert len(pods) == 2
    last_ready = max(
        c.last_transition_time
        for p in pods
        for c in p.status.conditions
        if c.type == "Ready" and c.status == "True"
    )
    assert (available.last_transition_time - last_ready).total_seconds() >= 2
