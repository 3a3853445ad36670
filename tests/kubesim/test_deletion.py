"""Garbage collection, namespace termination and evictions guarded by disruption budgets."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from tests.fixtures.polling import wait_until
from tests.kubesim.conftest import deployment, pod


def _gone(read: Callable[[], object]) -> bool:
    try:
        read()
    except ApiException as e:
        return e.status == 404
    return False


def _owned_pod(name: str, owner: client.V1Deployment, *, node: str | None = None) -> dict:
    body = pod(name, node=node)
    body["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": owner.metadata.name,
            "uid": owner.metadata.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return body


def test_foreground_deletion_waits_for_blocking_dependents(
    core: client.CoreV1Api, apps: client.AppsV1Api
) -> None:
    owner = apps.create_namespaced_deployment("default", deployment("web"))
    core.create_namespaced_pod("default", _owned_pod("dep", owner, node="n1"))
    apps.delete_namespaced_deployment("web", "default", propagation_policy="Foreground")
    wait_until(
        lambda: core.read_namespaced_pod("dep", "default").metadata.deletion_timestamp is not None,
        what="the blocking dependent marked for deletion",
    )
    waiting = apps.read_namespaced_deployment("web", "default")
    assert waiting.metadata.deletion_timestamp is not None
    assert "foregroundDeletion" in waiting.metadata.finalizers
    core.delete_namespaced_pod("dep", "default", grace_period_seconds=0)
    wait_until(
        lambda: _gone(lambda: apps.read_namespaced_deployment("web", "default")),
        what="the owner gone once its dependent is",
    )


def test_background_deletion_removes_the_owner_first_then_dependents(
    core: client.CoreV1Api, apps: client.AppsV1Api
) -> None:
    owner = apps.create_namespaced_deployment("default", deployment("web"))
    core.create_namespaced_pod("default", _owned_pod("dep", owner))
    apps.delete_namespaced_deployment("web", "default")
    assert _gone(lambda: apps.read_namespaced_deployment("web", "default"))
    wait_until(
        lambda: _gone(lambda: core.read_namespaced_pod("dep", "default")), what="the dependent gone"
    )


def test_orphan_deletion_keeps_dependents_and_drops_their_owner_reference(
    core: client.CoreV1Api, apps: client.AppsV1Api
) -> None:
    owner = apps.create_namespaced_deployment("default", deployment("web"))
    core.create_namespaced_pod("default", _owned_pod("dep", owner))
    apps.delete_namespaced_deployment("web", "default", propagation_policy="Orphan")
    wait_until(
        lambda: _gone(lambda: apps.read_namespaced_deployment("web", "default")),
        what="the orphaning owner gone",
    )
    assert core.read_namespaced_pod("dep", "default").metadata.owner_references is None


def test_namespace_deletion_cascades_and_waits_for_terminating_pods(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "team"}})
    core.create_namespaced_config_map("team", {"metadata": {"name": "cm"}})
    core.create_namespaced_pod("team", pod("running", node="n1"))
    core.delete_namespace("team")
    assert core.read_namespace("team").status.phase == "Terminating"
    with pytest.raises(ApiException) as info:
        core.create_namespaced_config_map("team", {"metadata": {"name": "late"}})
    assert info.value.status == 403
    wait_until(
        lambda: _gone(lambda: core.read_namespaced_config_map("cm", "team")),
        what="the namespace's config map gone",
    )
    wait_until(
        lambda: core.read_namespaced_pod("running", "team").metadata.deletion_timestamp is not None,
        what="the namespace's pod terminating",
    )
    assert core.read_namespace("team").status.phase == "Terminating"
    core.delete_namespaced_pod("running", "team", grace_period_seconds=0)
    wait_until(lambda: _gone(lambda: core.read_namespace("team")), what="the namespace gone")


def _pdb(core_api: client.ApiClient, allowed: int) -> None:
    policy = client.PolicyV1Api(core_api)
    pdb = policy.create_namespaced_pod_disruption_budget(
        "default",
        {
            "metadata": {"name": "budget"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    policy.patch_namespaced_pod_disruption_budget_status(
        "budget",
        "default",
        {
            "status": {
                "disruptionsAllowed": allowed,
                "currentHealthy": 1,
                "desiredHealthy": 1,
                "expectedPods": 1,
                "observedGeneration": pdb.metadata.generation,
            }
        },
    )


def _running(core: client.CoreV1Api, name: str, *, ready: bool = True) -> None:
    core.create_namespaced_pod("default", pod(name, labels={"app": "web"}, node="n1"))
    condition = {"type": "Ready", "status": "True" if ready else "False"}
    status = {"phase": "Running", "conditions": [condition]}
    core.patch_namespaced_pod_status(name, "default", {"status": status})


def _evict(core: client.CoreV1Api, name: str) -> None:
    core.create_namespaced_pod_eviction(
        name,
        "default",
        client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace="default")),
    )


def test_eviction_blocked_by_a_disruption_budget_is_429(
    kube_api_client: client.ApiClient, core: client.CoreV1Api
) -> None:
    _running(core, "p")
    _pdb(kube_api_client, allowed=0)
    with pytest.raises(ApiException) as info:
        _evict(core, "p")
    status = json.loads(info.value.body)
    assert (info.value.status, status["reason"]) == (429, "TooManyRequests")
    assert status["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert status["details"]["causes"][0]["reason"] == "DisruptionBudget"
    assert core.read_namespaced_pod("p", "default").metadata.deletion_timestamp is None


def test_allowed_eviction_spends_the_budget_and_deletes_gracefully(
    kube_api_client: client.ApiClient, core: client.CoreV1Api
) -> None:
    _running(core, "p")
    _running(core, "q")
    _pdb(kube_api_client, allowed=1)
    _evict(core, "p")
    assert core.read_namespaced_pod("p", "default").metadata.deletion_timestamp is not None
    budget = client.PolicyV1Api(kube_api_client).read_namespaced_pod_disruption_budget(
        "budget", "default"
    )
    assert budget.status.disruptions_allowed == 0
    assert set(budget.status.disrupted_pods) == {"p"}
    with pytest.raises(ApiException) as info:
        _evict(core, "q")
    assert info.value.status == 429


def test_pending_pods_are_evicted_without_consulting_budgets(
    kube_api_client: client.ApiClient, core: client.CoreV1Api
) -> None:
    core.create_namespaced_pod("default", pod("waiting", labels={"app": "web"}))
    _pdb(kube_api_client, allowed=0)
    _evict(core, "waiting")
    assert core.list_namespaced_pod("default").items == []


def test_an_unready_pod_is_evicted_without_spending_a_met_budget(
    kube_api_client: client.ApiClient, core: client.CoreV1Api
) -> None:
    _running(core, "sick", ready=False)
    _pdb(kube_api_client, allowed=0)
    _evict(core, "sick")
    assert core.read_namespaced_pod("sick", "default").metadata.deletion_timestamp is not None
    budget = client.PolicyV1Api(kube_api_client).read_namespaced_pod_disruption_budget(
        "budget", "default"
    )
    assert budget.status.disruptions_allowed == 0
    assert not budget.status.disrupted_pods


def test_eviction_of_a_missing_pod_is_404(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as info:
        _evict(core, "ghost")
    assert info.value.status == 404


def test_binding_assigns_a_node_once(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("p"))
    target = client.V1Binding(
        metadata=client.V1ObjectMeta(name="p"),
        target=client.V1ObjectReference(kind="Node", name="n1"),
    )
    core.create_namespaced_pod_binding("p", "default", target, _preload_content=False)
    got = core.read_namespaced_pod("p", "default")
    assert got.spec.node_name == "n1"
    assert [c.type for c in got.status.conditions] == ["PodScheduled"]
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod_binding("p", "default", target, _preload_content=False)
    assert info.value.status == 409
