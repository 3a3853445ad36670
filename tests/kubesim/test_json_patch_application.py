"""JSON Patch application: the document sent is never changed, and neither is the patch.

The values of ``add`` and ``replace`` enter the result without a copy (each patch is decoded for
one call), so what keeps the patch and the input intact is that every operation copies the
containers on its own path, including those of a value an earlier operation added.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesim import jsonpatch


def pod() -> dict[str, Any]:
    return {
        "metadata": {"name": "web-1", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx"}], "tolerations": []},
    }


def test_operations_on_a_value_added_earlier_leave_the_patch_as_decoded() -> None:
    ops: list[dict[str, Any]] = [
        {"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {}}},
        {"op": "add", "path": "/spec/affinity/nodeAffinity/required", "value": {"terms": []}},
        {"op": "add", "path": "/spec/affinity/nodeAffinity/required/terms/-", "value": {"a": 1}},
        {"op": "replace", "path": "/metadata/labels", "value": {"app": "web", "zone": "a"}},
        {"op": "add", "path": "/metadata/labels/tier", "value": "front"},
    ]
    sent = copy.deepcopy(ops)
    doc = pod()

    result = jsonpatch.apply(doc, ops)

    assert result["spec"]["affinity"] == {"nodeAffinity": {"required": {"terms": [{"a": 1}]}}}
    assert result["metadata"]["labels"] == {"app": "web", "zone": "a", "tier": "front"}
    assert ops == sent
    assert doc == pod()


def test_a_copied_value_is_independent_of_its_source() -> None:
    ops: list[dict[str, Any]] = [
        {"op": "copy", "from": "/spec/containers/0", "path": "/spec/containers/-"},
        {"op": "replace", "path": "/spec/containers/1/name", "value": "sidecar"},
        {"op": "move", "from": "/metadata/labels", "path": "/metadata/annotations"},
    ]
    doc = pod()

    result = jsonpatch.apply(doc, ops)

    assert [c["name"] for c in result["spec"]["containers"]] == ["app", "sidecar"]
    assert result["metadata"] == {"name": "web-1", "annotations": {"app": "web"}}
    assert doc == pod()


@pytest.mark.parametrize(
    ("op", "message"),
    [
        ({"op": "replace", "path": "/spec/missing", "value": 1}, "doc is missing key"),
        ({"op": "remove", "path": "/metadata/absent"}, "missing value"),
        ({"op": "test", "path": "/metadata/name", "value": "other"}, "test failed"),
    ],
)
def test_an_operation_that_does_not_apply_fails_and_changes_nothing(
    op: dict[str, Any], message: str
) -> None:
    doc = pod()
    with pytest.raises(jsonpatch.JsonPatchError, match=message):
        jsonpatch.apply(doc, [op])
    assert doc == pod()
