"""The fields a structural schema does not declare: what pruning drops and Strict refuses."""

from __future__ import annotations

from typing import Any

import pytest

from kubesemantics.structural_schema import unknown_fields

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {"type": "object", "properties": {
            "items": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "byKey": {"type": "object", "additionalProperties": {
                "type": "object", "properties": {"n": {"type": "integer"}}}},
            "anything": {"type": "object", "additionalProperties": True},
        }},
    },
}


@pytest.mark.parametrize(("value", "unknown"), [
    ({"apiVersion": "v", "kind": "K", "metadata": {"name": "a", "labels": {"x": "y"}}}, []),
    ({"metadata": {"lables": {}}}, ["metadata.lables"]),
    ({"metadata": {"ownerReferences": [{"uid": "u", "owner": True}]}},
     ["metadata.ownerReferences[0].owner"]),
    ({"metadata": {"managedFields": [{"fieldsV1": {"f:spec": {}}}]}}, []),
    ({"spec": {"items": [{"name": "a"}, {"nme": "b"}]}}, ["spec.items[1].nme"]),
    ({"spec": {"free": {"a": {"b": 1}}, "anything": {"z": [1]}}}, []),
    ({"spec": {"byKey": {"k": {"n": 1, "m": 2}}}}, ["spec.byKey.k.m"]),
    ({"status": {}, "spec": {"zz": 1, "aa": 2}}, ["spec.aa", "spec.zz", "status"]),
])
def test_unknown_fields_are_every_undeclared_path_sorted(
    value: dict[str, Any], unknown: list[str]
) -> None:
    assert unknown_fields(SCHEMA, value, root=True) == unknown


def test_metadata_is_object_meta_only_at_the_root() -> None:
    assert unknown_fields(SCHEMA, {"spec": {"metadata": {}}}) == ["spec.metadata"]
    assert unknown_fields(SCHEMA, {"metadata": {"name": "a"}}) == ["metadata"]


def test_a_value_nested_far_below_a_kept_field_is_not_walked() -> None:
    deep: dict[str, Any] = {}
    for _ in range(50_000):
        deep = {"a": deep}
    assert unknown_fields(SCHEMA, {"spec": {"free": deep}}, root=True) == []
