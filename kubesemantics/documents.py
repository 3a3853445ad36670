"""Reading the objects of a YAML or JSON document set, the way kubectl accepts them.

A file may hold one object, several YAML documents, a JSON array, or a ``kind: List`` (or any
``*List`` with ``items``), nested or not; empty documents are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml

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
