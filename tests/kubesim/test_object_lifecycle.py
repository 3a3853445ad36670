"""Create, read, update and delete through the official client, with real Status errors."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from tests.kubesim.conftest import deployment, pod


def _status(e: ApiException) -> dict:
    return json.loads(e.body)


def test_create_assigns_uid_timestamp_and_increasing_resource_versions(
    core: client.CoreV1Api,
) -> None:
    a = core.create_namespaced_pod("default", pod("a"))
    b = core.create_namespaced_pod("default", pod("b"))
    assert a.metadata.uid
    assert b.metadata.uid
    assert a.metadata.uid != b.metadata.uid
    assert a.metadata.creation_timestamp is not None
    assert int(b.metadata.resource_version) > int(a.metadata.resource_version)
    assert a.status.phase == "Pending"
    assert a.spec.restart_policy == "Always"
    assert a.spec.containers[0].image_pull_policy == "IfNotPresent"


def test_generate_name_gets_a_random_suffix(core: client.CoreV1Api) -> None:
    body = pod("")
    del body["metadata"]["name"]
    body["metadata"]["generateName"] = "web-"
    created = core.create_namespaced_pod("default", body)
    assert created.metadata.name.startswith("web-")
    assert len(created.metadata.name) == len("web-") + 5


def test_duplicate_create_is_409_already_exists(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("dup"))
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("default", pod("dup"))
    assert info.value.status == 409
    status = _status(info.value)
    assert status["reason"] == "AlreadyExists"
    assert status["message"] == 'pods "dup" already exists'
    assert status["details"] == {"name": "dup", "kind": "pods"}


def test_missing_object_is_404_not_found_with_group(apps: client.AppsV1Api) -> None:
    with pytest.raises(ApiException) as info:
        apps.read_namespaced_deployment("nope", "default")
    status = _status(info.value)
    assert (info.value.status, status["reason"]) == (404, "NotFound")
    assert status["message"] == 'deployments.apps "nope" not found'
    assert status["details"]["group"] == "apps"


def test_stale_update_is_409_conflict(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map(
        "default", {"metadata": {"name": "cm"}, "data": {"k": "1"}}
    )
    fresh = core.read_namespaced_config_map("cm", "default")
    fresh.data = {"k": "2"}
    core.replace_namespaced_config_map("cm", "default", fresh)
    created.data = {"k": "3"}
    with pytest.raises(ApiException) as info:
        core.replace_namespaced_config_map("cm", "default", created)
    status = _status(info.value)
    assert (info.value.status, status["reason"]) == (409, "Conflict")
    assert "the object has been modified" in status["message"]
    assert core.read_namespaced_config_map("cm", "default").data == {"k": "2"}


def test_invalid_pod_is_422_with_a_cause_per_field(core: client.CoreV1Api) -> None:
    body = pod("Bad_Name")
    body["spec"]["containers"] = [{"name": "c"}, {"name": "c", "image": "x"}]
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("default", body)
    status = _status(info.value)
    assert (info.value.status, status["reason"]) == (422, "Invalid")
    fields = {c["field"]: c["reason"] for c in status["details"]["causes"]}
    assert fields == {
        "metadata.name": "FieldValueInvalid",
        "spec.containers[0].image": "FieldValueRequired",
        "spec.containers[1].name": "FieldValueDuplicate",
    }
    assert status["message"].startswith('Pod "Bad_Name" is invalid: [')


def test_create_in_a_missing_namespace_is_404(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("ghost", pod("a"))
    assert _status(info.value)["message"] == 'namespaces "ghost" not found'


def test_generation_bumps_on_spec_changes_only(apps: client.AppsV1Api) -> None:
    d = apps.create_namespaced_deployment("default", deployment("web"))
    assert d.metadata.generation == 1
    apps.patch_namespaced_deployment("web", "default", {"metadata": {"labels": {"x": "y"}}})
    assert apps.read_namespaced_deployment("web", "default").metadata.generation == 1
    apps.patch_namespaced_deployment_status("web", "default", {"status": {"replicas": 3}})
    d = apps.read_namespaced_deployment("web", "default")
    assert (d.metadata.generation, d.status.replicas) == (1, 3)
    apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 4}})
    assert apps.read_namespaced_deployment("web", "default").metadata.generation == 2


def test_status_writes_ignore_spec_and_main_writes_ignore_status(apps: client.AppsV1Api) -> None:
    apps.create_namespaced_deployment("default", deployment("web", replicas=2))
    apps.patch_namespaced_deployment_status(
        "web", "default", {"spec": {"replicas": 9}, "status": {"readyReplicas": 1}}
    )
    apps.patch_namespaced_deployment("web", "default", {"status": {"readyReplicas": 7}})
    d = apps.read_namespaced_deployment("web", "default")
    assert (d.spec.replicas, d.status.ready_replicas) == (2, 1)


def test_scale_subresource_reads_and_writes_replicas(apps: client.AppsV1Api) -> None:
    apps.create_namespaced_deployment(
        "default", deployment("web", replicas=2, labels={"app": "web"})
    )
    scale = apps.read_namespaced_deployment_scale("web", "default")
    assert (scale.spec.replicas, scale.status.selector) == (2, "app=web")
    apps.replace_namespaced_deployment_scale(
        "web",
        "default",
        {"metadata": {"name": "web", "namespace": "default"}, "spec": {"replicas": 5}},
    )
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 5


def test_unbound_pod_is_deleted_at_once_and_bound_pod_gracefully(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("free"))
    core.delete_namespaced_pod("free", "default")
    with pytest.raises(ApiException):
        core.read_namespaced_pod("free", "default")

    core.create_namespaced_pod("default", pod("bound", node="n1"))
    core.delete_namespaced_pod("bound", "default")
    terminating = core.read_namespaced_pod("bound", "default")
    assert terminating.metadata.deletion_timestamp is not None
    assert terminating.metadata.deletion_grace_period_seconds == 30
    core.delete_namespaced_pod("bound", "default", grace_period_seconds=0)
    with pytest.raises(ApiException) as info:
        core.read_namespaced_pod("bound", "default")
    assert info.value.status == 404


def test_finalizers_hold_an_object_until_removed(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(
        "default", {"metadata": {"name": "held", "finalizers": ["example.com/x"]}}
    )
    core.delete_namespaced_config_map("held", "default")
    held = core.read_namespaced_config_map("held", "default")
    assert held.metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("held", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException):
        core.read_namespaced_config_map("held", "default")


def test_delete_with_a_stale_uid_precondition_is_409(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    with pytest.raises(ApiException) as info:
        core.delete_namespaced_config_map(
            "cm",
            "default",
            body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="other")),
        )
    assert info.value.status == 409
    uid = core.read_namespaced_config_map("cm", "default").metadata.uid
    assert _status(info.value)["message"] == (
        f'Operation cannot be fulfilled on ConfigMap "cm": the UID in the precondition (other) '
        f"does not match the UID in record ({uid}). The object might have been deleted and then "
        "recreated"
    )


def test_update_with_a_different_name_than_the_url_is_400(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    with pytest.raises(ApiException) as info:
        core.replace_namespaced_config_map("cm", "default", {"metadata": {"name": "other"}})
    assert info.value.status == 400


def test_running_pod_spec_is_immutable_except_images(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("p"))
    core.patch_namespaced_pod(
        "p", "default", {"spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}}
    )
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_pod("p", "default", {"spec": {"nodeName": "n2"}})
    assert info.value.status == 422
    assert _status(info.value)["details"]["causes"][0]["field"] == "spec"


def test_token_is_required(kubesim) -> None:  # type: ignore[no-untyped-def]
    cfg = kubesim.kube_configuration()
    cfg.api_key = {}
    with client.ApiClient(cfg) as api, pytest.raises(ApiException) as info:
        client.CoreV1Api(api).list_namespace()
    assert info.value.status == 401


def test_services_get_distinct_cluster_ips_and_port_defaults(core: client.CoreV1Api) -> None:
    ports = [{"port": 80}]
    a = core.create_namespaced_service(
        "default", {"metadata": {"name": "a"}, "spec": {"ports": ports}}
    )
    b = core.create_namespaced_service(
        "default", {"metadata": {"name": "b"}, "spec": {"ports": ports}}
    )
    headless = core.create_namespaced_service(
        "default", {"metadata": {"name": "h"}, "spec": {"clusterIP": "None", "ports": ports}}
    )
    assert a.spec.cluster_ip.startswith("10.96.")
    assert a.spec.cluster_ip != b.spec.cluster_ip
    assert headless.spec.cluster_ip == "None"
    assert (a.spec.type, a.spec.ports[0].protocol, a.spec.ports[0].target_port) == (
        "ClusterIP",
        "TCP",
        80,
    )


def test_an_immutable_config_map_keeps_its_data(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(
        "default", {"metadata": {"name": "fixed"}, "data": {"a": "1"}, "immutable": True}
    )
    core.patch_namespaced_config_map("fixed", "default", {"metadata": {"labels": {"ok": "yes"}}})
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_config_map("fixed", "default", {"data": {"a": "2"}})
    assert info.value.status == 422
    assert _status(info.value)["details"]["causes"][0]["field"] == "data"
