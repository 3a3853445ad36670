"""New workloads come back defaulted as a real server serves them, so typed client calls work."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client, config

from kubesim import KubeSimThread
from tests.fixtures.kubesim import kubesim_process


def workload(kind: str, name: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1"}]},
            },
        },
    }
    if kind == "StatefulSet":
        body["spec"]["serviceName"] = name
    return body


def test_a_new_statefulset_is_served_with_status_replicas_and_parses_as_the_typed_model(
    apps: client.AppsV1Api,
) -> None:
    created = apps.create_namespaced_stateful_set("default", workload("StatefulSet", "db"))
    assert created.status.replicas == 0
    assert created.status.available_replicas == 0
    assert created.spec.replicas == 1
    assert created.spec.update_strategy.rolling_update.partition == 0
    listed = apps.list_namespaced_stateful_set("default").items
    assert [s.status.replicas for s in listed] == [0]


def test_a_new_replicaset_is_served_with_status_replicas_and_parses_as_the_typed_model(
    apps: client.AppsV1Api,
) -> None:
    created = apps.create_namespaced_replica_set("default", workload("ReplicaSet", "web"))
    assert created.status.replicas == 0
    assert apps.read_namespaced_replica_set("web", "default").status.replicas == 0


def test_a_status_write_without_replicas_still_serves_status_replicas(
    apps: client.AppsV1Api,
) -> None:
    apps.create_namespaced_replica_set("default", workload("ReplicaSet", "web"))
    apps.patch_namespaced_replica_set_status(
        "web", "default", [{"op": "replace", "path": "/status", "value": {"readyReplicas": 0}}]
    )
    assert apps.read_namespaced_replica_set_status("web", "default").status.replicas == 0


def test_a_new_daemonset_is_served_with_its_required_status_counts(
    apps: client.AppsV1Api,
) -> None:
    created = apps.create_namespaced_daemon_set("default", workload("DaemonSet", "agent"))
    assert created.status.desired_number_scheduled == 0
    assert created.status.number_ready == 0


def test_pods_get_the_not_ready_and_unreachable_tolerations_for_the_configured_seconds(
    kubesim_factory: Callable[..., KubeSimThread],
) -> None:
    sim = kubesim_factory(tls=False, default_toleration_seconds=42)
    with client.ApiClient(sim.kube_configuration()) as api:
        core = client.CoreV1Api(api)
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "nginx:1"}]},
        }
        created = core.create_namespaced_pod("default", body)
    assert {(t.key, t.effect, t.toleration_seconds) for t in created.spec.tolerations} == {
        ("node.kubernetes.io/not-ready", "NoExecute", 42),
        ("node.kubernetes.io/unreachable", "NoExecute", 42),
    }


def test_the_toleration_flag_reaches_the_api_server(tmp_path: Path) -> None:
    with kubesim_process(
        tmp_path / "kubeconfig", "--no-behaviour", "--default-toleration-seconds", "7"
    ) as sim:
        api = config.new_client_from_config(config_file=str(sim.kubeconfig))  # type: ignore[no-untyped-call]
        with api:
            created = client.CoreV1Api(api).create_namespaced_pod(
                "default",
                {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
            )
    assert {t.toleration_seconds for t in created.spec.tolerations} == {7}


def test_a_patch_removing_a_defaulted_statefulset_field_gets_the_default_back(
    apps: client.AppsV1Api,
) -> None:
    """Upstream decodes a patched object with defaulting: a controller that writes its rendered
    spec as a merge patch (nulls for what it does not render) changes nothing it did not mean."""
    apps.create_namespaced_stateful_set("default", workload("StatefulSet", "rendered"))
    patched = apps.patch_namespaced_stateful_set(
        "rendered", "default",
        {"spec": {"replicas": 2, "podManagementPolicy": None, "revisionHistoryLimit": None}},
    )
    assert patched.spec.replicas == 2
    assert patched.spec.pod_management_policy == "OrderedReady"
    assert patched.spec.revision_history_limit == 10
