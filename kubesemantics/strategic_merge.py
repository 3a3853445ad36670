"""Strategic merge patch, as the Kubernetes API server applies it to built-in types.

A strategic merge patch is a JSON merge patch (RFC 7386) with two additions: lists whose
field carries ``patchStrategy: merge`` are merged item by item on a merge key (containers by
``name``, ports by ``containerPort``, ownerReferences by ``uid``) instead of being replaced,
and ``$``-directives steer the merge:

- ``{"$patch": "replace"}`` in a map replaces the whole map; as a list item it replaces the
  whole list with the other items;
- ``{"$patch": "delete"}`` in a map deletes it; as a list item it deletes the original item
  with the same merge key;
- ``$retainKeys: [...]`` keeps only the listed keys (fields with strategy ``retainKeys``);
- ``$deleteFromPrimitiveList/<field>: [...]`` removes values from a merged primitive list;
- ``$setElementOrder/<field>: [...]`` gives the final order of a merged list.

The merge metadata is not a schema: it only records, per field, the strategy and merge key the
upstream Go types declare (``patchStrategy``/``patchMergeKey`` struct tags). Fields with no
entry are replaced, which is also what upstream does for atomic lists such as pod
``tolerations``. The module is pure: it never mutates its inputs and shares unchanged
sub-objects of ``original`` with the result (callers treat results as immutable or copy).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DIRECTIVE = "$patch"
RETAIN_KEYS = "$retainKeys"
DELETE_FROM_PRIMITIVE = "$deleteFromPrimitiveList/"
SET_ELEMENT_ORDER = "$setElementOrder/"


class PatchError(ValueError):
    """A patch that cannot be applied (bad directive, wrong shape)."""


@dataclass(frozen=True, slots=True)
class FieldMeta:
    """Strategy of one field: ``merge`` lists merge on ``merge_key``; ``retain_keys`` honours
    ``$retainKeys``; ``schema`` describes the nested object (or the list's items)."""

    merge: bool = False
    merge_key: str | None = None
    retain_keys: bool = False
    schema: PatchMeta | None = None


@dataclass(frozen=True, slots=True)
class PatchMeta:
    fields: Mapping[str, FieldMeta] = field(default_factory=dict)

    def get(self, name: str) -> FieldMeta | None:
        return self.fields.get(name)


EMPTY = PatchMeta()


def _obj(schema: PatchMeta, *, retain_keys: bool = False) -> FieldMeta:
    return FieldMeta(schema=schema, retain_keys=retain_keys)


def _list(key: str | None, schema: PatchMeta = EMPTY, *, retain_keys: bool = False) -> FieldMeta:
    return FieldMeta(merge=True, merge_key=key, schema=schema, retain_keys=retain_keys)


# --- Merge metadata of the built-in types (from the upstream Go struct tags) -----------------

OBJECT_META = PatchMeta(
    {
        "ownerReferences": _list("uid"),
        "finalizers": _list(None),
    }
)

CONTAINER = PatchMeta(
    {
        "ports": _list("containerPort"),
        "env": _list("name"),
        "volumeMounts": _list("mountPath"),
        "volumeDevices": _list("devicePath"),
    }
)

POD_SPEC = PatchMeta(
    {
        "volumes": _list("name", retain_keys=True),
        "initContainers": _list("name", CONTAINER),
        "containers": _list("name", CONTAINER),
        "ephemeralContainers": _list("name", CONTAINER),
        "imagePullSecrets": _list("name"),
        "hostAliases": _list("ip"),
        "topologySpreadConstraints": _list("topologyKey"),
        "resourceClaims": _list("name", retain_keys=True),
        "schedulingGates": _list("name"),
    }
)

_CONDITIONS = _list("type")

POD_STATUS = PatchMeta(
    {
        "conditions": _CONDITIONS,
        "podIPs": _list("ip"),
        "hostIPs": _list("ip"),
    }
)

POD = PatchMeta({"metadata": _obj(OBJECT_META), "spec": _obj(POD_SPEC), "status": _obj(POD_STATUS)})

POD_TEMPLATE_SPEC = PatchMeta({"metadata": _obj(OBJECT_META), "spec": _obj(POD_SPEC)})

_WORKLOAD_STATUS = PatchMeta({"conditions": _CONDITIONS})

DEPLOYMENT = PatchMeta(
    {
        "metadata": _obj(OBJECT_META),
        "spec": _obj(
            PatchMeta(
                {"template": _obj(POD_TEMPLATE_SPEC), "strategy": FieldMeta(retain_keys=True)}
            )
        ),
        "status": _obj(_WORKLOAD_STATUS),
    }
)

REPLICA_SET = PatchMeta(
    {
        "metadata": _obj(OBJECT_META),
        "spec": _obj(PatchMeta({"template": _obj(POD_TEMPLATE_SPEC)})),
        "status": _obj(_WORKLOAD_STATUS),
    }
)

STATEFUL_SET = REPLICA_SET

NODE = PatchMeta(
    {
        "metadata": _obj(OBJECT_META),
        "status": _obj(
            PatchMeta(
                {
                    "conditions": _CONDITIONS,
                    "addresses": _list("type"),
                }
            )
        ),
    }
)

NAMESPACE = PatchMeta({"metadata": _obj(OBJECT_META), "status": _obj(_WORKLOAD_STATUS)})

POD_DISRUPTION_BUDGET = PatchMeta({"metadata": _obj(OBJECT_META), "status": _obj(_WORKLOAD_STATUS)})

GENERIC = PatchMeta({"metadata": _obj(OBJECT_META)})
"""For built-in kinds without list merge keys beyond metadata (ConfigMap, Secret, Lease...)."""

BY_KIND: Mapping[str, PatchMeta] = {
    "Pod": POD,
    "PodTemplate": PatchMeta({"metadata": _obj(OBJECT_META), "template": _obj(POD_TEMPLATE_SPEC)}),
    "Deployment": DEPLOYMENT,
    "ReplicaSet": REPLICA_SET,
    "StatefulSet": STATEFUL_SET,
    "DaemonSet": REPLICA_SET,
    "Node": NODE,
    "Namespace": NAMESPACE,
    "PodDisruptionBudget": POD_DISRUPTION_BUDGET,
}


def meta_for_kind(kind: str) -> PatchMeta:
    return BY_KIND.get(kind, GENERIC)


# --- Application -------------------------------------------------------------------------------


def apply(original: Mapping[str, Any] | None, patch: Mapping[str, Any], meta: PatchMeta) -> Any:
    """The result of applying ``patch`` to ``original``; ``None`` if the patch deletes it all."""
    if not isinstance(patch, Mapping):
        raise PatchError("a strategic merge patch must be a JSON object")
    return _merge_map(dict(original or {}), patch, meta)


def _merge_map(original: dict[str, Any], patch: Mapping[str, Any], meta: PatchMeta) -> Any:
    directive = patch.get(DIRECTIVE)
    if directive is not None:
        if directive == "replace":
            return _strip({k: v for k, v in patch.items() if k != DIRECTIVE}, meta)
        if directive == "delete":
            return None
        if directive != "merge":
            raise PatchError(f"Unknown patch type: {directive!r} in map: {dict(patch)!r}")

    result = dict(original)
    retain = patch.get(RETAIN_KEYS)
    if retain is not None:
        if not isinstance(retain, list):
            raise PatchError(f"$retainKeys must be a list, got {retain!r}")
        result = {k: v for k, v in result.items() if k in retain}

    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in (DIRECTIVE, RETAIN_KEYS):
            continue
        if key.startswith(SET_ELEMENT_ORDER):
            if not isinstance(value, list):
                raise PatchError(f"{key} must be a list")
            orders[key[len(SET_ELEMENT_ORDER) :]] = value
            continue
        if key.startswith(DELETE_FROM_PRIMITIVE):
            name = key[len(DELETE_FROM_PRIMITIVE) :]
            current = result.get(name)
            if not isinstance(value, list):
                raise PatchError(f"{key} must be a list")
            if isinstance(current, list):
                result[name] = [v for v in current if v not in value]
            continue
        fm = meta.get(key)
        sub = fm.schema if fm is not None and fm.schema is not None else EMPTY
        if value is None:
            result.pop(key, None)
            continue
        current = result.get(key)
        if isinstance(value, Mapping):
            if isinstance(current, dict):
                merged = _merge_map(current, value, sub)
            else:
                merged = _merge_map({}, value, sub)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            if fm is not None and fm.merge:
                result[key] = _merge_list(current if isinstance(current, list) else [], value, fm)
            else:
                result[key] = _strip_list(value, sub)
        else:
            result[key] = value

    for name, order in orders.items():
        current = result.get(name)
        if isinstance(current, list):
            fm = meta.get(name)
            result[name] = _order(current, order, fm.merge_key if fm else None)
    return result


def _merge_list(original: list[Any], patch: list[Any], fm: FieldMeta) -> list[Any]:
    sub = fm.schema or EMPTY
    for item in patch:
        if isinstance(item, Mapping) and item.get(DIRECTIVE) == "replace":
            return _strip_list([i for i in patch if i is not item], sub)
    key = fm.merge_key
    if key is None:
        # A merged list of primitives: union, keeping the original order.
        result = list(original)
        for item in patch:
            if isinstance(item, Mapping):
                if item.get(DIRECTIVE) == "delete":
                    continue
                raise PatchError("a merged primitive list cannot hold objects")
            if item not in result:
                result.append(item)
        return result
    result = list(original)
    for item in patch:
        if not isinstance(item, Mapping):
            raise PatchError(f"list items of a list merged on {key!r} must be objects")
        if key not in item:
            raise PatchError(f"map: {dict(item)!r} does not contain declared merge key: {key}")
        kv = item[key]
        if item.get(DIRECTIVE) == "delete":
            result = [o for o in result if not (isinstance(o, Mapping) and o.get(key) == kv)]
            continue
        for idx, o in enumerate(result):
            if isinstance(o, Mapping) and o.get(key) == kv:
                merged = _merge_map(dict(o), item, sub)
                if merged is None:
                    del result[idx]
                else:
                    result[idx] = merged
                break
        else:
            merged = _merge_map({}, item, sub)
            if merged is not None:
                result.append(merged)
    return result


def _order(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    """Items ranked by their position in ``order`` (by merge key for lists of maps); items
    not named in ``order`` keep their relative order after the named ones."""

    def ident(item: Any) -> Any:
        return item.get(key) if key is not None and isinstance(item, Mapping) else item

    wanted = [ident(o) for o in order]
    ranked = sorted(
        enumerate(items),
        key=lambda pair: (
            wanted.index(ident(pair[1])) if ident(pair[1]) in wanted else len(wanted),
            pair[0],
        ),
    )
    return [item for _, item in ranked]


def _strip(obj: dict[str, Any], meta: PatchMeta) -> Any:
    """Apply a patch fragment to nothing, so directives inside it take effect."""
    return _merge_map({}, obj, meta)


def _strip_list(items: list[Any], meta: PatchMeta) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if isinstance(item, Mapping):
            merged = _merge_map({}, item, meta)
            if merged is not None:
                out.append(merged)
        else:
            out.append(item)
    return out


# --- JSON merge patch (RFC 7386), for custom resources and merge-patch requests ----------------


def merge_patch(original: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, everything else replaces."""
    if not isinstance(patch, Mapping):
        return patch
    result = dict(original) if isinstance(original, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
