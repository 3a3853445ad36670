"""Reading the objects of a YAML or JSON document set, the way kubectl accepts them.

A file may hold one object, several YAML documents, a JSON array, or a ``kind: List`` (or any
``*List`` with ``items``), nested or not; empty documents are skipped. The offline commands read
their input with this, and sort it into WorkloadSpreads, workloads, pods and nodes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec
import yaml

from spreadbus.core.workloadspread.custom_workloads import (
    WHITELIST_CONFIG_KEY,
    Whitelist,
    parse_whitelist,
)
from spreadbus.core.workloadspread.model import GROUP, KIND, api_group

JSON = dict[str, Any]


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

    @property
    def whitelist(self) -> Whitelist:
        """From a ``kruise-configuration`` ConfigMap in the set, if there is one."""
        for obj in self.others:
            meta = obj.get("metadata") or {}
            if obj.get("kind") == "ConfigMap" and meta.get("name") == "kruise-configuration":
                raw = (obj.get("data") or {}).get(WHITELIST_CONFIG_KEY)
                try:
                    return parse_whitelist(raw)
                except ValueError:
                    return Whitelist()
        return Whitelist()


def is_workloadspread(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == KIND and api_group(str(obj.get("apiVersion") or "")) == GROUP


def sort_objects(objects: Iterable[JSON]) -> ObjectSet:
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
    return ObjectSet(spreads, pods, nodes, others)
