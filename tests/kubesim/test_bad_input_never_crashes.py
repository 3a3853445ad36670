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
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(["metadata", "spec", "name", "containers", "labels", "kind", "apiVersion", "$patch", "status", "x"]), children, max_size=4),
    max_leaves=12,
)

_settings = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


class Raw:
    def __init__(self, api: client.ApiClient) -> None:
        cfg = api.configuration
        self.host = cfg.host
        self.http = urllib3.PoolManager(ca_certs=cfg.ssl_ca_cert)
        self.auth = cfg.api_key_prefix["authorization"] + " " + cfg.api_key["authorization"]

    def __call__(self, method: str, path: str, body: Any, content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        resp = self.http.request(method, self.host + path, body=data, headers={"Content-Type": content_type, "Authorization": self.auth}, timeout=10)
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
@given(patch=_json, kind=st.sampled_from(["application/strategic-merge-patch+json", "application/merge-patch+json", "application/json-patch+json"]))
def test_arbitrary_patches(kube_api_client: client.ApiClient, core: client.CoreV1Api, patch: Any, kind: str) -> None:
    raw = Raw(kube_api_client)
    if not core.list_namespaced_pod("default", field_selector="metadata.name=target").items:
        core.create_namespaced_pod("default", {"metadata": {"name": "target"}, "spec": {"containers": [{"name": "a", "image": "x"}]}})
    _assert_client_error_or_success(*raw("PATCH", "/api/v1/namespaces/default/pods/target", patch, kind))


@_settings
@given(selector=st.text(max_size=20), fields=st.text(max_size=20))
def test_arbitrary_selectors(kube_api_client: client.ApiClient, selector: str, fields: str) -> None:
    raw = Raw(kube_api_client)
    q = urllib.parse.urlencode({"labelSelector": selector, "fieldSelector": fields})
    resp = raw.http.request("GET", f"{raw.host}/api/v1/pods?{q}", headers={"Authorization": raw.auth}, timeout=10)
    _assert_client_error_or_success(resp.status, json.loads(resp.data))
