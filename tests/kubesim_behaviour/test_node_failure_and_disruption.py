"""Node failure evicts pods after their toleration; evictions respect disruption budgets."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes.client.exceptions import ApiException

from tests.fixtures.cluster import SimCluster, is_ready, is_terminating
from tests.kubesim_behaviour.workloads import deployment

UNREACHABLE = "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION = 0.3


def test_a_lost_nodes_pods_are_evicted_after_their_toleration_and_replaced(
    cluster: SimCluster,
) -> None:
    body = deployment(
        "svc",
        12,
        tolerations=[
            {
                "key": UNREACHABLE,
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 1,
            }
        ],
    )
    cluster.apps.create_namespaced_deployment("default", body)
    cluster.wait_for(
        lambda: sum(is_ready(p) for p in cluster.pods(selector="app=svc")) == 12, what="12 ready"
    )
    victims = {
        p["metadata"]["name"]
        for p in cluster.pods(selector="app=svc")
        if p["spec"]["nodeName"] == "zone-a-1"
    }
    assert victims
    cluster.set_node_ready("zone-a-1", False)
    taints = cluster.wait_for(
        lambda: cluster.core.read_node("zone-a-1").spec.taints, what="unreachable taints"
    )
    assert {(t.key, t.effect) for t in taints} == {
        (UNREACHABLE, "NoSchedule"),
        (UNREACHABLE, "NoExecute"),
    }
    # the pods turn not ready at once, but stay until their toleration runs out
    cluster.wait_for(
        lambda: all(
            not is_ready(p)
            for p in cluster.pods(selector="app=svc")
            if p["metadata"]["name"] in victims
        ),
        what="pods on the lost node not ready",
    )
    still_there = [p for p in cluster.pods(selector="app=svc") if p["metadata"]["name"] in victims]
    assert still_there
    assert not any(is_terminating(p) for p in still_there)
    cluster.wait_for(
        lambda: all(
            is_terminating(p)
            for p in cluster.pods(selector="app=svc")
            if p["metadata"]["name"] in victims
        ),
        what="evictions",
    )
    replacements = cluster.wait_for(
        lambda: (
            (
                live := [
                    p
                    for p in cluster.pods(selector="app=svc")
                    if not is_terminating(p) and is_ready(p)
                ]
            )
            and len(live) == 12
            and live
        ),
        what="12 ready replacements",
    )
    assert all(p["spec"]["nodeName"] != "zone-a-1" for p in replacements)
    cluster.set_node_ready("zone-a-1", True)
    cluster.wait_for(lambda: not cluster.core.read_node("zone-a-1").spec.taints, what="taints gone")


def test_pods_that_tolerate_the_taint_forever_stay(
    cluster_factory: Callable[..., SimCluster],
) -> None:
    # a short default toleration, so the watch below lasts several times what a pod with the
    # default toleration gets; pods with the default toleration on the same node are the control
    cluster = cluster_factory(default_toleration_seconds=DEFAULT_TOLERATION)
    pinned = {"nodeSelector": {"kubernetes.io/hostname": "zone-c-4"}}
    forever = [{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}]
    cluster.apps.create_namespaced_deployment(
        "default", deployment("sticky", 3, tolerations=forever, **pinned)
    )
    cluster.apps.create_namespaced_deployment("default", deployment("plain", 3, **pinned))
    cluster.wait_for(
        lambda: sum(is_ready(p) for p in cluster.pods(selector="app in (sticky,plain)")) == 6,
        what="six ready pods on zone-c-4",
    )
    plain = {p["metadata"]["name"] for p in cluster.pods(selector="app=plain")}
    cluster.set_node_ready("zone-c-4", False)
    cluster.wait_for(lambda: cluster.core.read_node("zone-c-4").spec.taints, what="taints")
    cluster.wait_for(
        lambda: all(
            is_terminating(p) or p["metadata"]["name"] not in plain
            for p in cluster.pods(selector="app=plain")
        ),
        what="the pods with the default toleration evicted",
    )
    with pytest.raises(pytest.fail.Exception):
        cluster.wait_for(
            lambda: any(is_terminating(p) for p in cluster.pods(selector="app=sticky")),
            timeout=5 * DEFAULT_TOLERATION,
            what="an eviction",
        )
    sticky = cluster.pods(selector="app=sticky")
    assert len(sticky) == 3
    assert not any(is_ready(p) for p in sticky)
    cluster.set_node_ready("zone-c-4", True)
    cluster.wait_for(
        lambda: all(is_ready(p) for p in cluster.pods(selector="app=sticky")),
        what="the node's pods ready again",
    )


def evict(cluster: SimCluster, name: str) -> None:
    cluster.core.create_namespaced_pod_eviction(
        name,
        "default",
        {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": "default"},
        },
    )


def budget(name: str, **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}}, **spec},
    }


def test_an_eviction_that_would_break_the_budget_gets_429(cluster: SimCluster) -> None:
    cluster.apps.create_namespaced_deployment("default", deployment("guarded", 3))
    cluster.policy.create_namespaced_pod_disruption_budget(
        "default", budget("guarded", minAvailable=3)
    )
    status = cluster.wait_for(
        lambda: (
            (s := cluster.policy.read_namespaced_pod_disruption_budget("guarded", "default").status)
            and s.current_healthy == 3
            and s
        ),
        what="budget status",
    )
    assert (status.desired_healthy, status.expected_pods, status.disruptions_allowed) == (3, 3, 0)
    victim = cluster.pods(selector="app=guarded")[0]["metadata"]["name"]
    with pytest.raises(ApiException) as refused:
        evict(cluster, victim)
    assert refused.value.status == 429
    assert "disruption budget" in str(refused.value.body)

    cluster.policy.patch_namespaced_pod_disruption_budget(
        "guarded", "default", {"spec": {"minAvailable": None, "maxUnavailable": "33%"}}
    )
    cluster.wait_for(
        lambda: (
            cluster.policy.read_namespaced_pod_disruption_budget(
                "guarded", "default"
            ).status.disruptions_allowed
            == 1
        ),
        what="one disruption allowed",
    )
    evict(cluster, victim)
    assert is_terminating(
        next(p for p in cluster.pods(selector="app=guarded") if p["metadata"]["name"] == victim)
    ) or victim not in {p["metadata"]["name"] for p in cluster.pods(selector="app=guarded")}
    # the replacement restores the budget
    cluster.wait_for(
        lambda: (
            cluster.policy.read_namespaced_pod_disruption_budget(
                "guarded", "default"
            ).status.current_healthy
            == 3
        ),
        what="healthy again",
    )


def test_budget_status_follows_readiness(cluster: SimCluster) -> None:
    cluster.apps.create_namespaced_deployment("default", deployment("flaky", 4))
    cluster.policy.create_namespaced_pod_disruption_budget(
        "default", budget("flaky", maxUnavailable=1)
    )
    cluster.wait_for(
        lambda: (
            cluster.policy.read_namespaced_pod_disruption_budget(
                "flaky", "default"
            ).status.disruptions_allowed
            == 1
        ),
        what="one allowed",
    )
    name = cluster.pods(selector="app=flaky")[0]["metadata"]["name"]
    cluster.set_pod_ready("default", name, False)
    status = cluster.wait_for(
        lambda: (
            (s := cluster.policy.read_namespaced_pod_disruption_budget("flaky", "default").status)
            and s.current_healthy == 3
            and s
        ),
        what="three healthy",
    )
    assert status.disruptions_allowed == 0
    assert status.desired_healthy == 3


def test_back_to_back_evictions_cannot_both_spend_the_one_allowed_disruption(
    cluster: SimCluster,
) -> None:
    cluster.apps.create_namespaced_deployment("default", deployment("pair", 3))
    cluster.policy.create_namespaced_pod_disruption_budget(
        "default", budget("pair", maxUnavailable=1)
    )
    cluster.wait_for(
        lambda: (
            cluster.policy.read_namespaced_pod_disruption_budget(
                "pair", "default"
            ).status.disruptions_allowed
            == 1
        ),
        what="one allowed",
    )
    first, second = (p["metadata"]["name"] for p in cluster.pods(selector="app=pair")[:2])
    evict(cluster, first)
    with pytest.raises(ApiException) as refused:
        evict(cluster, second)
    assert refused.value.status == 429


def test_deleting_a_deployment_takes_its_replicasets_and_pods_with_it(cluster: SimCluster) -> None:
    cluster.apps.create_namespaced_deployment("default", deployment("gone", 4))
    cluster.wait_for(
        lambda: sum(is_ready(p) for p in cluster.pods(selector="app=gone")) == 4, what="4 ready"
    )
    cluster.apps.delete_namespaced_deployment("gone", "default")
    cluster.wait_for(
        lambda: (
            not cluster.apps.list_namespaced_replica_set("default").items
            and not cluster.pods(selector="app=gone")
        ),
        what="replicasets and pods collected",
    )


def test_pods_with_only_the_default_tolerations_leave_after_the_configured_default(
    cluster_factory: object,
) -> None:
    cluster: SimCluster = cluster_factory(default_toleration_seconds=0.5)  # type: ignore[operator]
    cluster.apps.create_namespaced_deployment("default", deployment("plain", 12))
    cluster.wait_for(
        lambda: sum(is_ready(p) for p in cluster.pods(selector="app=plain")) == 12, what="ready"
    )
    defaults = cluster.pods(selector="app=plain")[0]["spec"]["tolerations"]
    assert {(t["key"], t.get("tolerationSeconds")) for t in defaults} == {
        ("node.kubernetes.io/not-ready", 0.5),
        (UNREACHABLE, 0.5),
    }
    victims = {
        p["metadata"]["name"]
        for p in cluster.pods(selector="app=plain")
        if p["spec"]["nodeName"] == "zone-b-3"
    }
    cluster.set_node_ready("zone-b-3", False)
    cluster.wait_for(
        lambda: all(
            is_terminating(p)
            for p in cluster.pods(selector="app=plain")
            if p["metadata"]["name"] in victims
        ),
        what="evictions after the configured default",
    )
