"""Objects real controllers would reject are refused; odd ones never stop the controllers."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from tests.fixtures.cluster import SimCluster, is_ready
from tests.kubesim_behaviour.workloads import deployment


def test_a_selector_that_misses_the_template_labels_is_refused(cluster: SimCluster) -> None:
    body = deployment("mismatch", 2)
    body["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    with pytest.raises(ApiException) as refused:
        cluster.apps.create_namespaced_deployment("default", body)
    assert refused.value.status == 422
    assert "`selector` does not match template `labels`" in str(refused.value.body)


def test_negative_replicas_are_refused(cluster: SimCluster) -> None:
    with pytest.raises(ApiException) as refused:
        cluster.apps.create_namespaced_deployment("default", deployment("negative", -1))
    assert refused.value.status == 422
    assert "spec.replicas" in str(refused.value.body)


def bare_pod(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]},
    }


def test_a_budget_over_pods_without_a_controller_reports_the_failure_and_allows_nothing(
    cluster: SimCluster,
) -> None:
    for i in range(2):
        cluster.core.create_namespaced_pod("default", bare_pod(f"loose-{i}", app="loose"))
    cluster.policy.create_namespaced_pod_disruption_budget(
        "default",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "loose"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "loose"}}},
        },
    )
    condition = cluster.wait_for(
        lambda: next(
            (
                c
                for c in (
                    cluster.policy.read_namespaced_pod_disruption_budget(
                        "loose", "default"
                    ).status.conditions
                    or ()
                )
                if c.type == "DisruptionAllowed"
            ),
            None,
        ),
        what="DisruptionAllowed condition",
    )
    assert (condition.status, condition.reason) == ("False", "SyncFailed")
    assert "no controller" in condition.message
    status = cluster.policy.read_namespaced_pod_disruption_budget("loose", "default").status
    assert status.disruptions_allowed == 0
    # the other controllers carry on
    cluster.apps.create_namespaced_deployment("default", deployment("after", 2))
    cluster.wait_for(
        lambda: sum(is_ready(p) for p in cluster.pods(selector="app=after")) == 2,
        what="a later deployment to run",
    )


def test_an_unknown_extended_resource_leaves_the_pod_pending_with_the_reason(
    cluster: SimCluster,
) -> None:
    pod = bare_pod("gpu")
    pod["spec"]["containers"][0]["resources"] = {
        "requests": {"example.com/gpu": "1"},
        "limits": {"example.com/gpu": "1"},
    }
    cluster.core.create_namespaced_pod("default", pod)
    message = cluster.wait_for(
        lambda: next(
            (
                c.message
                for c in cluster.core.read_namespaced_pod("gpu", "default").status.conditions or ()
                if c.type == "PodScheduled" and c.status == "False"
            ),
            None,
        ),
        what="Unschedulable condition",
    )
    assert message.startswith("0/12 nodes are available: 12 Insufficient example.com/gpu.")
