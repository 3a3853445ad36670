"""CRDs: serving, schema checks and pruning, status and scale subresources, DynamicClient."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException
from kubernetes.dynamic import DynamicClient

from tests.fixtures.polling import wait_until

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {
            "plural": "widgets",
            "singular": "widget",
            "kind": "Widget",
            "shortNames": ["wd"],
            "categories": ["all"],
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.size",
                        "statusReplicasPath": ".status.count",
                        "labelSelectorPath": ".status.selector",
                    },
                },
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "Colour", "type": "string", "jsonPath": ".spec.colour"},
                ],
                "selectableFields": [{"jsonPath": ".spec.colour"}],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "properties": {
                                    "size": {"type": "integer", "minimum": 0},
                                    "colour": {
                                        "type": "string",
                                        "enum": ["red", "blue"],
                                        "default": "red",
                                    },
                                    "extra": {
                                        "type": "object",
                                        "x-kubernetes-preserve-unknown-fields": True,
                                    },
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "count": {"type": "integer"},
                                    "selector": {"type": "string"},
                                },
                            },
                        },
                    }
                },
            },
            {
                "name": "v1beta1",
                "served": True,
                "storage": False,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            },
        ],
    },
}


def widget(name: str, size: Any = 1, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": size, **spec},
    }


@pytest.fixture
def crs(kube_api_client: client.ApiClient) -> client.CustomObjectsApi:
    client.ApiextensionsV1Api(kube_api_client).create_custom_resource_definition(WIDGET_CRD)
    return client.CustomObjectsApi(kube_api_client)


def _create(crs: client.CustomObjectsApi, body: dict[str, Any]) -> dict[str, Any]:
    return crs.create_namespaced_custom_object("example.com", "v1", "default", "widgets", body)


def test_a_new_crd_is_established_and_served(
    kube_api_client: client.ApiClient, crs: client.CustomObjectsApi
) -> None:
    crd = client.ApiextensionsV1Api(kube_api_client).read_custom_resource_definition(
        "widgets.example.com"
    )
    assert {c.type: c.status for c in crd.status.conditions} == {
        "NamesAccepted": "True",
        "Established": "True",
    }
    created = _create(crs, widget("w1"))
    assert created["metadata"]["generation"] == 1
    assert created["spec"] == {"size": 1, "colour": "red"}


def test_dynamic_client_discovers_and_uses_the_custom_resource(
    kube_api_client: client.ApiClient, crs: client.CustomObjectsApi
) -> None:
    dyn = DynamicClient(kube_api_client)
    res = dyn.resources.get(api_version="example.com/v1", kind="Widget")
    assert res.namespaced
    res.create(body=widget("w1", 2), namespace="default")
    res.patch(
        name="w1",
        namespace="default",
        body={"spec": {"size": 3}},
        content_type="application/merge-patch+json",
    )
    assert res.get(name="w1", namespace="default").spec.size == 3
    names = [i.metadata.name for i in res.get(namespace="default").items]
    assert names == ["w1"]


def test_schema_violations_are_422_with_field_paths(crs: client.CustomObjectsApi) -> None:
    with pytest.raises(ApiException) as info:
        _create(
            crs,
            {
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "metadata": {"name": "bad"},
                "spec": {"size": "big", "colour": "green"},
            },
        )
    status = json.loads(info.value.body)
    assert info.value.status == 422
    causes = {(c["field"], c["reason"]) for c in status["details"]["causes"]}
    assert causes == {("spec.size", "FieldValueInvalid"), ("spec.colour", "FieldValueNotSupported")}
    with pytest.raises(ApiException) as info:
        _create(
            crs,
            {
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "metadata": {"name": "bad"},
                "spec": {},
            },
        )
    assert json.loads(info.value.body)["details"]["causes"][0] == {
        "reason": "FieldValueRequired",
        "message": "Required value",
        "field": "spec.size",
    }


def test_unknown_fields_are_pruned_except_where_preserved(crs: client.CustomObjectsApi) -> None:
    created = _create(crs, widget("w1", unknown="x", extra={"free": {"form": 1}}))
    assert "unknown" not in created["spec"]
    assert created["spec"]["extra"] == {"free": {"form": 1}}
    assert "top" not in _create(crs, {**widget("w2"), "top": 1})


def test_status_subresource_splits_spec_and_status(crs: client.CustomObjectsApi) -> None:
    _create(crs, {**widget("w1", 2), "status": {"count": 99}})
    assert "status" not in crs.get_namespaced_custom_object(
        "example.com", "v1", "default", "widgets", "w1"
    )
    crs.patch_namespaced_custom_object_status(
        "example.com",
        "v1",
        "default",
        "widgets",
        "w1",
        {"status": {"count": 2}, "spec": {"size": 5}},
    )
    got = crs.get_namespaced_custom_object("example.com", "v1", "default", "widgets", "w1")
    assert (got["spec"]["size"], got["status"]["count"], got["metadata"]["generation"]) == (2, 2, 1)
    crs.patch_namespaced_custom_object(
        "example.com",
        "v1",
        "default",
        "widgets",
        "w1",
        {"spec": {"size": 4}, "status": {"count": 0}},
    )
    got = crs.get_namespaced_custom_object("example.com", "v1", "default", "widgets", "w1")
    assert (got["spec"]["size"], got["status"]["count"], got["metadata"]["generation"]) == (4, 2, 2)


def test_scale_subresource_follows_the_crd_paths(crs: client.CustomObjectsApi) -> None:
    _create(crs, widget("w1", 2))
    crs.patch_namespaced_custom_object_status(
        "example.com",
        "v1",
        "default",
        "widgets",
        "w1",
        {"status": {"count": 1, "selector": "app=w1"}},
    )
    scale = crs.get_namespaced_custom_object_scale("example.com", "v1", "default", "widgets", "w1")
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"] == {"replicas": 1, "selector": "app=w1"}
    crs.patch_namespaced_custom_object_scale(
        "example.com", "v1", "default", "widgets", "w1", {"spec": {"replicas": 7}}
    )
    assert (
        crs.get_namespaced_custom_object("example.com", "v1", "default", "widgets", "w1")["spec"][
            "size"
        ]
        == 7
    )


def test_strategic_merge_patch_on_a_custom_resource_is_415(
    kube_api_client: client.ApiClient, crs: client.CustomObjectsApi
) -> None:
    _create(crs, widget("w1"))
    res = DynamicClient(kube_api_client).resources.get(api_version="example.com/v1", kind="Widget")
    with pytest.raises(ApiException) as info:
        res.patch(name="w1", namespace="default", body={"spec": {"size": 2}})
    assert info.value.status == 415


def test_every_served_version_reads_the_same_objects(crs: client.CustomObjectsApi) -> None:
    _create(crs, widget("w1", 3))
    old = crs.get_namespaced_custom_object("example.com", "v1beta1", "default", "widgets", "w1")
    assert (old["apiVersion"], old["spec"]["size"]) == ("example.com/v1beta1", 3)


def test_selectable_fields_filter_lists(crs: client.CustomObjectsApi) -> None:
    _create(crs, widget("r", colour="red"))
    _create(crs, widget("b", colour="blue"))
    got = crs.list_namespaced_custom_object(
        "example.com", "v1", "default", "widgets", field_selector="spec.colour=blue"
    )
    assert [i["metadata"]["name"] for i in got["items"]] == ["b"]


def test_deleting_the_crd_removes_its_objects_and_stops_serving(
    kube_api_client: client.ApiClient, crs: client.CustomObjectsApi
) -> None:
    _create(crs, widget("w1"))
    client.ApiextensionsV1Api(kube_api_client).delete_custom_resource_definition(
        "widgets.example.com"
    )
    with pytest.raises(ApiException) as info:
        crs.list_namespaced_custom_object("example.com", "v1", "default", "widgets")
    assert info.value.status == 404


def test_cluster_scoped_crd(kube_api_client: client.ApiClient) -> None:
    crd = json.loads(json.dumps(WIDGET_CRD))
    crd["metadata"]["name"] = "gadgets.example.com"
    crd["spec"]["scope"] = "Cluster"
    crd["spec"]["names"] = {"plural": "gadgets", "kind": "Gadget"}
    client.ApiextensionsV1Api(kube_api_client).create_custom_resource_definition(crd)
    crs = client.CustomObjectsApi(kube_api_client)
    made = crs.create_cluster_custom_object(
        "example.com",
        "v1",
        "gadgets",
        {
            "apiVersion": "example.com/v1",
            "kind": "Gadget",
            "metadata": {"name": "g"},
            "spec": {"size": 1},
        },
    )
    assert "namespace" not in made["metadata"]


def test_an_invalid_crd_is_rejected(kube_api_client: client.ApiClient) -> None:
    crd = json.loads(json.dumps(WIDGET_CRD))
    crd["metadata"]["name"] = "wrong.example.com"
    with pytest.raises(ApiException) as info:
        client.ApiextensionsV1Api(kube_api_client).create_custom_resource_definition(crd)
    assert info.value.status == 422


def test_owner_references_garbage_collect_dependents_in_background(
    kube_api_client: client.ApiClient, crs: client.CustomObjectsApi
) -> None:
    owner = _create(crs, widget("owner"))
    core = client.CoreV1Api(kube_api_client)
    ref = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
    }
    core.create_namespaced_config_map(
        "default", {"metadata": {"name": "dep", "ownerReferences": [ref]}}
    )
    crs.delete_namespaced_custom_object("example.com", "v1", "default", "widgets", "owner")
    wait_until(
        lambda: (
            not core.list_namespaced_config_map("default", field_selector="metadata.name=dep").items
        ),
        what="the custom resource's dependent collected",
    )


def test_a_non_structural_schema_is_rejected(kube_api_client: client.ApiClient) -> None:
    crd = json.loads(json.dumps(WIDGET_CRD))
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "size"
    ] = {"minimum": 0}
    crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"] = {"type": "object", "pattern": "["}
    with pytest.raises(ApiException) as info:
        client.ApiextensionsV1Api(kube_api_client).create_custom_resource_definition(crd)
    fields = {c["field"] for c in json.loads(info.value.body)["details"]["causes"]}
    assert fields == {
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[size].type",
        "spec.versions[1].schema.openAPIV3Schema.pattern",
    }


def test_field_validation_warn_keeps_the_object_and_sends_a_warning(
    kube_api_client: client.ApiClient, crs: client.CustomObjectsApi
) -> None:
    import urllib3

    cfg = kube_api_client.configuration
    http = urllib3.PoolManager(ca_certs=cfg.ssl_ca_cert)
    auth = cfg.api_key_prefix["authorization"] + " " + cfg.api_key["authorization"]
    body = json.dumps(widget("w1", 1, stray=True)).encode()
    resp = http.request(
        "POST",
        cfg.host + "/apis/example.com/v1/namespaces/default/widgets?fieldValidation=Warn",
        body=body,
        headers={"Content-Type": "application/json", "Authorization": auth},
    )
    assert resp.status == 201
    assert resp.headers["Warning"] == '299 - "unknown field \\"spec.stray\\""'
    assert "stray" not in json.loads(resp.data)["spec"]
