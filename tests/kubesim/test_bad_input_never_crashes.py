"""Arbitrary bodies, patches and selectors get a 2xx or a 4xx Status, never a 500 or a hang."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import urllib3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client

_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=6)
_json = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "metadata",
                    "spec",
                    "name",
                    "containers",
                    "labels",
                    "kind",
                    "apiVersion",
                    "$patch",
                    "status",
                    "x",
                ]
            ),
            children,
            max_size=4,
        )
    ),
    max_leaves=12,
)

_settings = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


class Raw:
    def __init__(self, api: client.ApiClient) -> None:
        cfg = api.configuration
        self.host = cfg.host
        self.http = urllib3.PoolManager(ca_certs=cfg.ssl_ca_cert)
        self.auth = cfg.api_key_prefix["authorization"] + " " + cfg.api_key["authorization"]

    def __call__(
        self, method: str, path: str, body: Any, content_type: str = "application/json"
    ) -> tuple[int, dict[str, Any]]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        resp = self.http.request(
            method,
            self.host + path,
            body=data,
            headers={"Content-Type": content_type, "Authorization": self.auth},
            timeout=10,
        )
        return resp.status, json.loads(resp.data)


def _assert_client_error_or_success(code: int, body: dict[str, Any]) -> None:
    assert code < 500, body
    if code >= 400:
        assert body["kind"] == "Status"
        assert body["code"] == code


@_settings
@given(body=_json)
def test_arbitrary_create_bodies(kube_api_client: client.ApiClient, body: Any) -> None:
    raw = Raw(kube_api_client)
    for path in ("/api/v1/namespaces/default/pods", "/apis/apps/v1/namespaces/default/deployments"):
        _assert_client_error_or_success(*raw("POST", path, body))


@_settings
@given(
    patch=_json,
    kind=st.sampled_from(
        [
            "application/strategic-merge-patch+json",
            "application/merge-patch+json",
            "application/json-patch+json",
        ]
    ),
)
def test_arbitrary_patches(
    kube_api_client: client.ApiClient, core: client.CoreV1Api, patch: Any, kind: str
) -> None:
    raw = Raw(kube_api_client)
    if not core.list_namespaced_pod("default", field_selector="metadata.name=target").items:
        core.create_namespaced_pod(
            "default",
            {"metadata": {"name": "target"}, "spec": {"containers": [{"name": "a", "image": "x"}]}},
        )
    _assert_client_error_or_success(
        *raw("PATCH", "/api/v1/namespaces/default/pods/target", patch, kind)
    )


@_settings
@given(selector=st.text(max_size=20), fields=st.text(max_size=20))
def test_arbitrary_selectors(kube_api_client: client.ApiClient, selector: str, fields: str) -> None:
    raw = Raw(kube_api_client)
    q = urllib.parse.urlencode({"labelSelector": selector, "fieldSelector": fields})
    resp = raw.http.request(
        "GET", f"{raw.host}/api/v1/pods?{q}", headers={"Authorization": raw.auth}, timeout=10
    )
    _assert_client_error_or_success(resp.status, json.loads(resp.data))


@_settings
@given(spec=_json, version=_json)
def test_arbitrary_custom_resource_definitions(
    kube_api_client: client.ApiClient, spec: Any, version: Any
) -> None:
    raw = Raw(kube_api_client)
    base: dict[str, Any] = {
        "group": "fuzz.example.com",
        "scope": "Namespaced",
        "names": {"plural": "things", "kind": "Thing"},
        "versions": [
            version
            if isinstance(version, dict)
            else {"name": "v1", "served": True, "storage": True, "schema": version}
        ],
    }
    if isinstance(spec, dict):
        base.update(spec)
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.fuzz.example.com"},
        "spec": base,
    }
    code, body = raw("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    _assert_client_error_or_success(code, body)
    if code == 201:
        _assert_client_error_or_success(
            *raw(
                "POST",
                "/apis/fuzz.example.com/v1/namespaces/default/things",
                {"metadata": {"name": "t"}, "spec": spec},
            )
        )
        resp = raw.http.request(
            "GET",
            raw.host + "/apis/fuzz.example.com/v1/namespaces/default/things",
            headers={
                "Authorization": raw.auth,
                "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io",
            },
        )
        assert resp.status < 500
        raw(
            "DELETE",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.fuzz.example.com",
            {},
        )


_schema_keys = st.sampled_from(
    [
        "type",
        "properties",
        "items",
        "required",
        "enum",
        "default",
        "minimum",
        "maxLength",
        "pattern",
        "additionalProperties",
        "x-kubernetes-preserve-unknown-fields",
        "nullable",
        "spec",
    ]
)
_schema_values = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from(
        ["object", "string", "integer", "array", "boolean", "number", "[a-z]+", "spec"]
    )
)
_schemas = st.recursive(
    _schema_values,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(_schema_keys, children, max_size=4)
    ),
    max_leaves=15,
)


@_settings
@given(schema=st.dictionaries(_schema_keys, _schemas, max_size=4), obj=_json)
def test_arbitrary_schemas_and_objects(
    kube_api_client: client.ApiClient, schema: dict[str, Any], obj: Any
) -> None:
    raw = Raw(kube_api_client)
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.fuzz.example.com"},
        "spec": {
            "group": "fuzz.example.com",
            "scope": "Namespaced",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }
    code, body = raw("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    _assert_client_error_or_success(code, body)
    if code == 201:
        things = "/apis/fuzz.example.com/v1/namespaces/default/things"
        _assert_client_error_or_success(
            *raw(
                "POST", things + "?fieldValidation=Strict", {"metadata": {"name": "t"}, "spec": obj}
            )
        )
        _assert_client_error_or_success(
            *raw("PATCH", things + "/t", {"spec": obj}, "application/merge-patch+json")
        )
        raw(
            "DELETE",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.fuzz.example.com",
            {},
        )
