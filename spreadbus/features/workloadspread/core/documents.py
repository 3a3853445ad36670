"""The offline commands' objects sorted for the WorkloadSpread rules, with their whitelist.

The objects (read by :mod:`kubesemantics.documents`) are sorted into WorkloadSpreads, workloads,
pods and nodes.

The custom workload whitelist comes from a ``kruise-configuration`` ConfigMap among the objects.
A whitelist that cannot be decoded is an error naming its ConfigMap and data key, never an empty
whitelist: silently dropping it would turn every custom-kind WorkloadSpread into a different answer
(denied targetRef, unmanaged pods) with no hint why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from kubesemantics.documents import JSON, DocumentError, parse_documents
from kubesemantics.json_type import json_type
from spreadbus.features.workloadspread.core.custom_workloads import (
    WHITELIST_CONFIG_KEY,
    Whitelist,
    parse_whitelist,
)
from spreadbus.features.workloadspread.core.model import GROUP, KIND, api_group

WHITELIST_CONFIGMAP = "kruise-configuration"
WHITELIST_FIELD = f"data.{WHITELIST_CONFIG_KEY}"


class ObjectSet(msgspec.Struct, frozen=True):
    """Input objects sorted by what the rules use them for."""

    workloadspreads: list[JSON]
    pods: list[JSON]
    nodes: list[JSON]
    others: list[JSON]  # workloads, ReplicaSets, ConfigMaps, ...
    whitelist: Whitelist = Whitelist()  # from a kruise-configuration ConfigMap, if any


def whitelist_from_configmap(configmap: Mapping[str, Any]) -> Whitelist:
    """The whitelist a ``kruise-configuration`` ConfigMap holds; raises DocumentError if bad.

    An absent or empty key is an empty whitelist, as in Kruise; anything Go's ``json.Unmarshal``
    would reject (:func:`parse_whitelist` says what) is an error naming the ConfigMap and the
    field.
    """
    meta = configmap.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    where = f"ConfigMap {meta.get('namespace') or 'default'}/{meta.get('name')}"
    data = configmap.get("data")
    if data is None:
        return Whitelist()
    if not isinstance(data, Mapping):
        raise DocumentError(f"{where}: data: expected object, got {json_type(data)}")
    raw = data.get(WHITELIST_CONFIG_KEY)
    if raw is None or raw == "":
        return Whitelist()
    if not isinstance(raw, str):
        raise DocumentError(f"{where}: {WHITELIST_FIELD}: expected string, got {json_type(raw)}")
    try:
        return parse_whitelist(raw)
    except ValueError as exc:
        raise DocumentError(f"{where}: {WHITELIST_FIELD}: {exc}") from exc


def _is_whitelist_configmap(obj: Mapping[str, Any]) -> bool:
    meta = obj.get("metadata")
    return (
        obj.get("kind") == "ConfigMap"
        and isinstance(meta, Mapping)
        and meta.get("name") == WHITELIST_CONFIGMAP
    )


def is_workloadspread(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == KIND and api_group(str(obj.get("apiVersion") or "")) == GROUP


def sort_objects(objects: Iterable[JSON]) -> ObjectSet:
    """Sort by kind and read the whitelist; raises DocumentError for a whitelist that is bad."""
    spreads, pods, nodes, others = [], [], [], []
    for obj in objects:
        kind = obj.get("kind")
        if is_workloadspread(obj):
            spreads.append(obj)
        elif kind == "Pod":
            pods.append(obj)
        elif kind == "Node":
            nodes.append(obj)
        else:
            others.append(obj)
    configmap = next((o for o in others if _is_whitelist_configmap(o)), None)
    whitelist = whitelist_from_configmap(configmap) if configmap is not None else Whitelist()
    return ObjectSet(spreads, pods, nodes, others, whitelist)


__all__ = ["JSON", "DocumentError", "ObjectSet", "parse_documents", "sort_objects"]
