"""Strategic merge patch, as the Kubernetes API server applies it to built-in types.

A strategic merge patch is a JSON merge patch (RFC 7386) with two additions: lists whose
field carries ``patchStrategy: merge`` are merged item by item on a merge key (containers by
``name``, ports by ``containerPort``, ownerReferences by ``uid``) or as a set of scalars
(finalizers) instead of being replaced, and ``$``-directives steer the merge:

- ``{"$patch": "replace"}`` in a map replaces the whole map; as a list item it replaces the
  whole list with the other items;
- ``{"$patch": "delete"}`` in a map leaves an empty map (and adds nothing where there was no
  map); as a list item it deletes every original item with the same merge key;
- ``$retainKeys: [...]`` keeps only the listed keys, and a patch setting a key outside the list
  is refused;
- ``$deleteFromPrimitiveList/<field>: [...]`` removes values from a primitive list;
- ``$setElementOrder/<field>: [...]`` gives the order of a list, and must agree with the order
  of the patch's own items.

Order follows upstream's ``mergeSlice``: the items a patch names keep the patch's order, the
live-only items keep theirs, and each live-only item goes before a named item only when it came
before it in the live list, so an item the live list lacks goes before the live-only items
after the last named one. ``$setElementOrder`` orders the same way, against the live list as
upstream's in-place deletes and appends leave it.

The merge metadata is not a schema: it only records, per field, the strategy and merge key the
upstream Go types declare (``patchStrategy``/``patchMergeKey`` struct tags). Fields with no
entry are replaced, which is also what upstream does for atomic lists such as pod
``tolerations``. The module is pure: it never mutates its inputs and shares unchanged
sub-objects of ``original`` with the result (callers treat results as immutable or copy).

Not supported, deliberately: ``patchStrategy: replace`` on a map field (no built-in kind this
package describes has one); and where upstream keeps a patch value verbatim (a new field, a
replaced list, a ``$patch: replace`` map), directive keys and nulls inside it are dropped here,
where upstream leaves them for the typed decoder of the API server to drop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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

_DROP = object()
"""What a patch value with a ``$patch`` directive becomes where nothing is there to merge into."""


def apply(original: Mapping[str, Any] | None, patch: Mapping[str, Any], meta: PatchMeta) -> Any:
    """The result of applying ``patch`` to ``original`` (``{}`` if the patch deletes it all)."""
    if not isinstance(patch, Mapping):
        raise PatchError("a strategic merge patch must be a JSON object")
    return _merge_map(dict(original or {}), patch, meta)


def _is_directive_key(key: str) -> bool:
    return key in (DIRECTIVE, RETAIN_KEYS) or key.startswith(
        (SET_ELEMENT_ORDER, DELETE_FROM_PRIMITIVE)
    )


def _plain(value: Any) -> Any:
    """A patch value taken as it is, where nothing is there to merge it into.

    A map carrying ``$patch`` disappears (upstream's ``removeDirectives``), nulls are discarded
    (``IgnoreUnmatchedNulls``), and so are the other directive keys, which upstream would leave
    in the object for a typed decoder to drop.
    """
    if isinstance(value, Mapping):
        if DIRECTIVE in value:
            return _DROP
        out: dict[str, Any] = {}
        for k, v in value.items():
            if v is None or _is_directive_key(k):
                continue
            kept = _plain(v)
            if kept is not _DROP:
                out[k] = kept
        return out
    if isinstance(value, list):
        return [kept for kept in (_plain(v) for v in value) if kept is not _DROP]
    return value


def _merge_map(original: dict[str, Any], patch: Mapping[str, Any], meta: PatchMeta) -> Any:
    directive = patch.get(DIRECTIVE)
    if directive is not None:
        if directive == "replace":
            return _plain({k: v for k, v in patch.items() if k != DIRECTIVE})
        if directive == "delete":
            return {}
        raise PatchError(f"unknown patch type: {directive} in map: {dict(patch)!r}")

    result = dict(original)
    retain = patch.get(RETAIN_KEYS)
    if retain is not None:
        _check_retain_keys(patch, retain)
        result = {k: v for k, v in result.items() if k in retain}

    handled: set[str] = set()
    for key, order in patch.items():
        if key.startswith(SET_ELEMENT_ORDER):
            name = key[len(SET_ELEMENT_ORDER) :]
            if _set_element_order(result, patch, name, order, meta.get(name)):
                handled.add(name)

    for key, value in patch.items():
        if key in handled or key in (RETAIN_KEYS,) or key.startswith(SET_ELEMENT_ORDER):
            continue
        if key.startswith(DELETE_FROM_PRIMITIVE):
            name = key[len(DELETE_FROM_PRIMITIVE) :]
            current = result.get(name)
            if not isinstance(value, list):
                raise PatchError(f"{key} must be a list")
            if isinstance(current, list):
                result[name] = [v for v in current if v not in value]
            continue
        if value is None:
            result.pop(key, None)
            continue
        current = result.get(key)
        fm = meta.get(key)
        sub = fm.schema if fm is not None and fm.schema is not None else EMPTY
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            result[key] = _merge_map(dict(current), value, sub)
        elif isinstance(current, list) and isinstance(value, list) and fm is not None and fm.merge:
            result[key] = _merge_list(current, value, fm)
        else:
            kept = _plain(value)
            if kept is _DROP:
                result.pop(key, None)
            else:
                result[key] = kept
    return result


def _check_retain_keys(patch: Mapping[str, Any], retain: Any) -> None:
    """Every field a patch sets must be among its ``$retainKeys``."""
    if not isinstance(retain, list):
        raise PatchError("invalid patch format of retainKeys")
    for key, value in patch.items():
        if value is None or _is_directive_key(key):
            continue
        if key not in retain:
            raise PatchError("invalid patch format of retainKeys")


def _kind(items: list[Any]) -> str:
    """``map`` or ``scalar`` for the items of merged lists, which may not mix the two."""
    kinds = {
        "map" if isinstance(i, Mapping) else "list" if isinstance(i, list) else "scalar"
        for i in items
    }
    if "list" in kinds:
        raise PatchError("lists of lists are not supported")
    if len(kinds) > 1:
        raise PatchError(f"list element types are not identical: {items!r}")
    return kinds.pop() if kinds else "scalar"


def _ident(item: Any, key: str | None) -> Any:
    return item.get(key) if key is not None and isinstance(item, Mapping) else item


def _position(items: list[Any], item: Any, key: str | None) -> int:
    wanted = _ident(item, key)
    return next((i for i, o in enumerate(items) if _ident(o, key) == wanted), -1)


def _merge_list(
    original: list[Any], patch: list[Any], fm: FieldMeta, live: list[Any] | None = None
) -> list[Any]:
    """A list merged on its key (maps) or as a set (scalars), then put in upstream's order.

    ``live``, when given, receives the live list as upstream's ``$setElementOrder`` sees it
    after this merge: upstream deletes and appends in the live list's own storage, so deleted
    items leave their slots to the items after them and appended items fill the freed slots.
    """
    if live is not None:
        live[:] = original
    if not original and not patch:
        return list(original)
    sub = fm.schema or EMPTY
    key = fm.merge_key
    if _kind(original + patch) == "scalar":
        merged: list[Any] = []
        for item in original + patch:
            if item not in merged:
                merged.append(item)
        return _in_patch_order(merged, patch, original, None)
    if key is None:
        raise PatchError("cannot merge lists without merge key")
    base = list(original)
    plain: list[Mapping[str, Any]] = []
    replace = False
    for item in patch:
        directive = item.get(DIRECTIVE)
        if directive is None:
            plain.append(item)
        elif directive == "delete":
            if key not in item:
                raise PatchError(f"map: {dict(item)!r} does not contain declared merge key: {key}")
            kept = [o for o in base if not (isinstance(o, Mapping) and o.get(key) == item[key])]
            if live is not None:
                for _ in range(len(base) - len(kept)):
                    at = next(
                        i for i, o in enumerate(live[: len(base)]) if _ident(o, key) == item[key]
                    )
                    live[at : len(base) - 1] = live[at + 1 : len(base)]
                    base = base[:-1]
            base = kept
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise PatchError("merging lists cannot yet be specified in the patch")
        else:
            raise PatchError(f"unknown patch type: {directive} in map: {dict(item)!r}")
    if replace:
        base = [kept for kept in (_plain(i) for i in plain) if kept is not _DROP]
        plain = []
    merged = list(base)
    for item in plain:
        if key not in item:
            raise PatchError(f"map: {dict(item)!r} does not contain declared merge key: {key}")
        at = _position(merged, item, key)
        if at >= 0:
            merged[at] = _merge_map(dict(merged[at]), item, sub)
        else:
            merged.append(_merge_map({}, item, sub))
            if live is not None and len(merged) <= len(live):
                live[len(merged) - 1] = merged[-1]
    return _in_patch_order(merged, plain, base, key)


def _in_patch_order(
    merged: list[Any], order: list[Any], server_order: list[Any], key: str | None
) -> list[Any]:
    """Upstream's ordering of a merged list: the items the patch names (or ``order`` names) in
    that order, the others in the order of the live list, the two interleaved so that each
    keeps its place relative to the live list where both are in it."""

    def rank(items: list[Any]) -> Callable[[Any], int]:
        return lambda item: _position(items, item, key) % (len(items) + 1)  # absent: last

    named = sorted((i for i in merged if _position(order, i, key) >= 0), key=rank(order))
    others = sorted((i for i in merged if _position(order, i, key) < 0), key=rank(server_order))
    out: list[Any] = []
    i = j = 0
    while i < len(others) or j < len(named):
        if j >= len(named):
            out.append(others[i])
            i += 1
            continue
        if i < len(others):
            left = _position(server_order, others[i], key)
            right = _position(server_order, named[j], key)
            if left >= 0 and right >= 0 and left < right:
                out.append(others[i])
                i += 1
                continue
        out.append(named[j])
        j += 1
    return out


def _set_element_order(
    result: dict[str, Any],
    patch: Mapping[str, Any],
    name: str,
    order: Any,
    fm: FieldMeta | None,
) -> bool:
    """Merge the list ``name`` and give it the order of ``$setElementOrder/name``; False when
    neither the object nor the patch has the list."""
    if not isinstance(order, list):
        raise PatchError("invalid patch format of setElementOrder list")
    key = fm.merge_key if fm is not None else None
    if name not in result and name not in patch:
        return False
    original, patched = result.get(name, []), patch.get(name)
    if not isinstance(original, list):
        raise PatchError(f"{name} is not a list")
    if patched is not None and not isinstance(patched, list):
        raise PatchError(f"{name} in the patch is not a list")
    live = list(original)
    if patched is None:
        merged = list(original)
    else:
        _check_order(patched, order, key)
        if name in result and fm is not None and fm.merge:
            merged = _merge_list(original, patched, fm, live)
        else:
            merged = _plain(patched)
    result[name] = _in_patch_order(merged, order, live, key)
    return True


def _check_order(patched: list[Any], order: list[Any], key: str | None) -> None:
    """The patch's items (deletions aside) must appear in ``order`` in the same relative order."""
    if not patched or not order:
        return
    items = [
        i for i in patched if not (key is not None and isinstance(i, Mapping) and DIRECTIVE in i)
    ]
    p = s = 0
    while p < len(items) and s < len(order):
        if isinstance(items[p], Mapping) and DIRECTIVE in items[p]:
            p += 1
            continue
        if key is not None and not (isinstance(items[p], Mapping) and key in items[p]):
            raise PatchError(f"map: {items[p]!r} does not contain declared merge key: {key}")
        if _ident(items[p], key) == _ident(order[s], key):
            p += 1
        s += 1
    if p < len(items):
        raise PatchError(
            f"The order in patch list: {patched!r} doesn't match $setElementOrder list: {order!r}"
        )


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
