"""Reading the objects of a YAML or JSON document set, the way kubectl accepts them.

A file may hold one object, several YAML documents, a JSON array, or a ``kind: List`` (or any
``*List`` with ``items``), nested or not; empty documents are skipped. The offline commands read
their input with this, and sort it into WorkloadSpreads, workloads, pods and nodes.

The custom workload whitelist comes from a ``kruise-configuration`` ConfigMap among the objects.
A whitelist that cannot be decoded is an error naming its ConfigMap and data key, never an empty
whitelist: silently dropping it would turn every custom-kind WorkloadSpread into a different answer
(denied targetRef, unmanaged pods) with no hint why.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec
import yaml

from kubesemantics.json_type import json_type
from spreadbus.features.workloadspread.core.custom_workloads import (
    WHITELIST_CONFIG_KEY,
    Whitelist,
    parse_whitelist,
)
from spreadbus.features.workloadspread.core.model import GROUP, KIND, api_group

JSON = dict[str, Any]

WHITELIST_CONFIGMAP = "kruise-configuration"
WHITELIST_FIELD = f"data.{WHITELIST_CONFIG_KEY}"


class DocumentError(ValueError):
    """The text is not YAML/JSON, or holds something that is not an object."""


def _flatten(doc: object, out: list[JSON]) -> None:
    if doc is None:
        return
    if isinstance(doc, list):
        for item in doc:
            _flatten(item, out)
        return
    if not isinstance(doc, Mapping):
        raise DocumentError(f"expected an object, got {type(doc).__name__}")
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
        for item in doc["items"]:
            _flatten(item, out)
        return
    out.append(dict(doc))


def parse_documents(text: str) -> list[JSON]:
    """Every object in ``text``, in order."""
    docs: list[object]
    try:
        docs = [json.loads(text)]
    except ValueError:
        try:
            docs = list(yaml.safe_load_all(text))
        except yaml.YAMLError as exc:
            raise DocumentError(f"not valid YAML or JSON: {exc}") from exc
    out: list[JSON] = []
    for doc in docs:
        _flatten(doc, out)
    return out


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
