"""The three patch content types over HTTP, with real merge keys, directives and errors."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from tests.kubesim.conftest import deployment, pod


def test_strategic_merge_patch_merges_containers_by_name(core: client.CoreV1Api) -> None:
    body = pod("p")
    body["spec"]["containers"].append({"name": "side", "image": "busybox:1"})
    core.create_namespaced_pod("default", body)
    core.patch_namespaced_pod(
        "p", "default", {"spec": {"containers": [{"name": "side", "image": "busybox:2"}]}}
    )
    got = core.read_namespaced_pod("p", "default")
    assert [(c.name, c.image) for c in got.spec.containers] == [
        ("app", "nginx:1.27"),
        ("side", "busybox:2"),
    ]


def test_strategic_merge_patch_directives_delete_env_entries(apps: client.AppsV1Api) -> None:
    d = deployment("web")
    d["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "2"},
    ]
    apps.create_namespaced_deployment("default", d)
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "app", "env": [{"name": "A", "$patch": "delete"}]}]
                }
            }
        }
    }
    apps.patch_namespaced_deployment("web", "default", patch)
    env = apps.read_namespaced_deployment("web", "default").spec.template.spec.containers[0].env
    assert [(e.name, e.value) for e in env] == [("B", "2")]


def test_json_patch_applies_operations_and_test_failure_is_422(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    core.patch_namespaced_config_map(
        "cm",
        "default",
        [{"op": "add", "path": "/data/b", "value": "2"}, {"op": "remove", "path": "/data/a"}],
    )
    assert core.read_namespaced_config_map("cm", "default").data == {"b": "2"}
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_config_map(
            "cm", "default", [{"op": "test", "path": "/data/b", "value": "9"}]
        )
    assert info.value.status == 422


def test_merge_patch_replaces_lists_and_null_deletes(core: client.CoreV1Api) -> None:
    body = pod("p")
    body["metadata"]["labels"] = {"a": "1", "b": "2"}
    body["metadata"]["finalizers"] = ["x/a", "x/b"]
    core.create_namespaced_pod("default", body)
    patch = {"metadata": {"labels": {"a": None, "c": "3"}, "finalizers": ["x/c"]}}
    core.patch_namespaced_pod("p", "default", patch, _content_type="application/merge-patch+json")
    got = core.read_namespaced_pod("p", "default")
    assert got.metadata.labels == {"b": "2", "c": "3"}
    assert got.metadata.finalizers == ["x/c"]


def test_patch_with_a_stale_resource_version_is_409(core: client.CoreV1Api) -> None:
    cm = core.create_namespaced_config_map(
        "default", {"metadata": {"name": "cm"}, "data": {"a": "1"}}
    )
    core.patch_namespaced_config_map("cm", "default", {"data": {"a": "2"}})
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_config_map(
            "cm",
            "default",
            {"metadata": {"resourceVersion": cm.metadata.resource_version}, "data": {"a": "3"}},
        )
    assert info.value.status == 409


def _raw(
    api: client.ApiClient, method: str, path: str, body: bytes, content_type: str
) -> tuple[int, dict]:
    import urllib3

    cfg = api.configuration
    http = urllib3.PoolManager(ca_certs=cfg.ssl_ca_cert)
    auth = cfg.api_key_prefix["authorization"] + " " + cfg.api_key["authorization"]
    resp = http.request(
        method,
        cfg.host + path,
        body=body,
        headers={"Content-Type": content_type, "Authorization": auth},
    )
    return resp.status, json.loads(resp.data)


def test_unknown_patch_content_type_is_415(
    kube_api_client: client.ApiClient, core: client.CoreV1Api
) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    code, status = _raw(
        kube_api_client,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/cm",
        b"{}",
        "application/x-made-up",
    )
    assert (code, status["reason"]) == (415, "UnsupportedMediaType")


def test_malformed_json_body_is_400_not_500(kube_api_client: client.ApiClient) -> None:
    code, status = _raw(
        kube_api_client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        b"{not json",
        "application/json",
    )
    assert (code, status["kind"], status["reason"]) == (400, "Status", "BadRequest")


def test_oversized_body_is_413(kube_api_client: client.ApiClient) -> None:
    big = json.dumps({"metadata": {"name": "big"}, "data": {"x": "y" * (4 * 1024 * 1024)}}).encode()
    code, status = _raw(
        kube_api_client, "POST", "/api/v1/namespaces/default/configmaps", big, "application/json"
    )
    assert (code, status["reason"]) == (413, "RequestEntityTooLarge")


def test_wrong_kind_in_body_is_400(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as info:
        core.create_namespaced_config_map(
            "default", {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}
        )
    assert info.value.status == 400


def test_missing_name_is_422_required(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as info:
        core.create_namespaced_config_map("default", {"metadata": {}})
    status = json.loads(info.value.body)
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueRequired",
            "message": "Required value: name or generateName is required",
            "field": "metadata.name",
        }
    ]


def test_dry_run_create_validates_but_does_not_persist(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map(
        "default", {"metadata": {"name": "dry"}}, dry_run="All"
    )
    assert created.metadata.name == "dry"
    with pytest.raises(ApiException):
        core.read_namespaced_config_map("dry", "default")


def _pb_string(field: int, value: bytes) -> bytes:
    return bytes([field << 3 | 2, len(value)]) + value


def test_protobuf_of_a_kind_kubesim_does_not_decode_is_415(
    kube_api_client: client.ApiClient,
) -> None:
    type_meta = _pb_string(1, b"v1") + _pb_string(2, b"Pod")
    body = b"k8s\x00" + _pb_string(1, type_meta) + _pb_string(2, _pb_string(1, _pb_string(1, b"p")))
    code, status = _raw(
        kube_api_client,
        "POST",
        "/api/v1/namespaces/default/pods",
        body,
        "application/vnd.kubernetes.protobuf",
    )
    assert (code, status["reason"]) == (415, "UnsupportedMediaType")


def test_protobuf_config_map_is_decoded(
    kube_api_client: client.ApiClient, core: client.CoreV1Api
) -> None:
    meta = _pb_string(1, b"from-pb") + _pb_string(3, b"default")
    entry = _pb_string(1, b"k") + _pb_string(2, b"v")
    raw = _pb_string(1, meta) + _pb_string(2, entry)
    type_meta = _pb_string(1, b"v1") + _pb_string(2, b"ConfigMap")
    body = b"k8s\x00" + _pb_string(1, type_meta) + _pb_string(2, raw)
    code, _ = _raw(
        kube_api_client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        body,
        "application/vnd.kubernetes.protobuf",
    )
    assert code == 201
    assert core.read_namespaced_config_map("from-pb", "default").data == {"k": "v"}


def test_malformed_yaml_body_is_400(kube_api_client: client.ApiClient) -> None:
    code, status = _raw(
        kube_api_client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        b"metadata: [unclosed",
        "application/yaml",
    )
    assert (code, status["reason"]) == (400, "BadRequest")
