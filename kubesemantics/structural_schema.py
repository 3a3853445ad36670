"""The fields a CRD's structural schema does not declare, found as the API server finds them.

The API server drops such fields from a custom resource (pruning); with
``fieldValidation=Strict``, which kubectl sends by default, it refuses the object instead,
naming each one (``unknown field "spec.subsets[0].maxReplica"``). Both the simulated API server
and ``spreadbus validate`` ask this module, so an object is refused offline exactly when it
would be refused online. ``apiVersion`` and ``kind`` are the API server's own; ``metadata`` is
judged against ``ObjectMeta`` (a CRD's schema may not describe it), as the API server does.

The walk follows the schema, which is finite, so a value nested arbitrarily deep costs no more
than the schema's own depth below a field that keeps unknown fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

Schema = Mapping[str, Any]

_STRING: Final[Schema] = {"type": "string"}
_STRINGS_BY_KEY: Final[Schema] = {"type": "object", "additionalProperties": _STRING}
OBJECT_META: Final[Schema] = {
    "type": "object",
    "properties": {
        **{name: _STRING for name in (
            "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
            "creationTimestamp", "deletionTimestamp",
        )},
        "generation": {"type": "integer"},
        "deletionGracePeriodSeconds": {"type": "integer"},
        "labels": _STRINGS_BY_KEY,
        "annotations": _STRINGS_BY_KEY,
        "finalizers": {"type": "array", "items": _STRING},
        "ownerReferences": {"type": "array", "items": {"type": "object", "properties": {
            name: {} for name in (
                "apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion",
            )}}},
        "managedFields": {"type": "array", "items": {"type": "object", "properties": {
            **{name: {} for name in (
                "manager", "operation", "apiVersion", "time", "fieldsType", "subresource",
            )},
            "fieldsV1": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        }}},
    },
}
"""``metav1.ObjectMeta`` as a structural schema: the fields a ``metadata`` may have."""

_ROOT_OWN: Final = ("apiVersion", "kind")


def unknown_fields(
    schema: Schema, value: object, path: str = "", *, root: bool = False
) -> list[str]:
    """Paths of the fields of ``value`` that ``schema`` does not declare and does not keep
    (``x-kubernetes-preserve-unknown-fields``, ``additionalProperties``), sorted: a JSON
    object's keys have no order, and kubectl and the Python client send them in different ones.
    ``root``: ``value`` is a whole object, whose ``metadata`` is ``ObjectMeta``."""
    return sorted(_walk(schema, value, path, root))


def _walk(schema: Schema, value: object, path: str, root: bool) -> list[str]:
    out: list[str] = []
    if isinstance(value, Mapping):
        props: Mapping[str, Any] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        for key, item in value.items():
            at = f"{path}.{key}" if path else str(key)
            if root and key in _ROOT_OWN:
                continue
            if root and key == "metadata":
                out.extend(_walk(OBJECT_META, item, at, False))
            elif key in props and isinstance(props[key], Mapping):
                out.extend(_walk(props[key], item, at, False))
            elif isinstance(extra, Mapping):
                out.extend(_walk(extra, item, at, False))
            elif not (preserve or extra is True or key in props):
                out.append(at)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            out.extend(_walk(schema["items"], item, f"{path}[{i}]", False))
    return out
