"""A body nesting objects thousands deep gets a 400 Status saying so, never a 500.

Every write that carries an object (create, update, each patch type, JSON and YAML) is refused
before anything recurses into it; an object just at :data:`kubesim.nesting.MAX_DEPTH` is stored
and read back whole, so the bound is one every later step handles.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
import urllib3
from hypothesis import given
from hypothesis import strategies as st
from kubernetes import client

from kubesim.nesting import MAX_DEPTH, deeper_than, may_be_deeper_than

GROUP = "example.com"
THINGS = f"/apis/{GROUP}/v1/namespaces/default/things"
DEEP = 5_000


def nested(depth: int) -> str:
    """A JSON object ``depth`` levels deep (``{}`` is 1)."""
    return '{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)


def thing(name: str, spec: str) -> str:
    """A Thing whose spec is ``spec``: the whole object is one level deeper than it."""
    return (f'{{"apiVersion":"{GROUP}/v1","kind":"Thing","metadata":{{"name":"{name}"}},'
            f'"spec":{spec}}}')


@pytest.fixture
def things(kube_api_client: client.ApiClient) -> client.ApiClient:
    """A CRD keeping any field of its objects, so depth is the only thing that may refuse one."""
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    client.ApiextensionsV1Api(kube_api_client).create_custom_resource_definition({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"things.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": schema}]},
    })
    client.CustomObjectsApi(kube_api_client).create_namespaced_custom_object(
        GROUP, "v1", "default", "things", json.loads(thing("t", "{}")))
    return kube_api_client


def send(api: client.ApiClient, method: str, path: str, body: str, content_type: str
         ) -> tuple[int, dict[str, Any]]:
    """One raw request with the client's credentials (the official client cannot even encode
    a body this deep: Python's own json recurses)."""
    config = api.configuration
    http = urllib3.PoolManager(ca_certs=config.ssl_ca_cert)
    auth = config.api_key_prefix["authorization"] + " " + config.api_key["authorization"]
    answer = http.request(method, config.host + path, body=body.encode(), timeout=30,
                          headers={"Content-Type": content_type, "Authorization": auth})
    return answer.status, json.loads(answer.data)


WRITES = [
    ("POST", THINGS, thing("deep", nested(DEEP)), "application/json"),
    ("POST", THINGS, thing("deep", nested(DEEP)), "application/yaml"),
    ("PUT", f"{THINGS}/t", thing("t", nested(DEEP)), "application/json"),
    ("PATCH", f"{THINGS}/t", f'{{"spec":{nested(DEEP)}}}', "application/merge-patch+json"),
    ("PATCH", f"{THINGS}/t", f'[{{"op":"add","path":"/spec/a","value":{nested(DEEP)}}}]',
     "application/json-patch+json"),
    ("PATCH", f"{THINGS}/t?fieldManager=me", thing("t", nested(DEEP)),
     "application/apply-patch+yaml"),
]


@pytest.mark.parametrize(("method", "path", "body", "content_type"), WRITES,
                         ids=[f"{w[0]} {w[3]}" for w in WRITES])
def test_a_body_thousands_deep_is_a_bad_request_naming_the_depth(
    things: client.ApiClient, caplog: pytest.LogCaptureFixture,
    method: str, path: str, body: str, content_type: str,
) -> None:
    with caplog.at_level(logging.ERROR, logger="kubesim"):
        code, status = send(things, method, path, body, content_type)
    assert code == 400, status
    assert status["kind"] == "Status"
    assert status["reason"] == "BadRequest"
    assert f"more than {MAX_DEPTH} levels deep" in status["message"]
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == [], "no traceback"


def test_an_object_at_the_bound_is_stored_and_read_back_whole(things: client.ApiClient) -> None:
    objects = client.CustomObjectsApi(things)
    body = json.loads(thing("at-bound", nested(MAX_DEPTH - 1)))
    assert not deeper_than(body, MAX_DEPTH)
    objects.create_namespaced_custom_object(GROUP, "v1", "default", "things", body)
    read: dict[str, Any] = objects.get_namespaced_custom_object(
        GROUP, "v1", "default", "things", "at-bound")
    assert read["spec"] == body["spec"]
    code, status = send(things, "PATCH", f"{THINGS}/at-bound?fieldManager=me",
                        thing("at-bound", nested(MAX_DEPTH - 1)), "application/apply-patch+yaml")
    assert code == 200, status
    code, status = send(things, "POST", THINGS, thing("over", nested(MAX_DEPTH)),
                        "application/json")
    assert code == 400, status


def depth(value: object) -> int:
    """The nesting depth, recursively (what :func:`deeper_than` measures without recursing)."""
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner,
                                                                 max_size=3),
    max_leaves=30,
)


@given(value=JSON, limit=st.integers(0, 12))
def test_the_walk_measures_the_depth_a_recursion_would(value: object, limit: int) -> None:
    assert deeper_than(value, limit) == (depth(value) > limit)
    if deeper_than(value, limit):
        assert may_be_deeper_than(json.dumps(value).encode(), limit), "never skips a deep one"
