"""Reading the objects of a YAML or JSON document set, the way kubectl accepts them.

A file may hold one object, several YAML documents, a JSON array, or a ``kind: List`` (or any
``*List`` with ``items``), nested or not; empty documents are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import msgspec
import yaml

from kubesemantics.nesting import MAX_DEPTH, shorten, too_deep

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
    """Every object in ``text``, in order; one nested deeper than
    :data:`~kubesemantics.nesting.MAX_DEPTH` is refused, naming where."""
    docs: list[object]
    try:
        docs = [msgspec.json.decode(text)]
    except RecursionError:
        raise DocumentError(f"nested deeper than {MAX_DEPTH} levels") from None
    except msgspec.DecodeError:
        try:
            docs = [json.loads(text)]
        except (ValueError, RecursionError):
            try:
                docs = list(yaml.safe_load_all(text))
            except yaml.YAMLError as exc:
                raise DocumentError(f"not valid YAML or JSON: {exc}") from exc
            except RecursionError:
                raise DocumentError(f"nested deeper than {MAX_DEPTH} levels") from None
    out: list[JSON] = []
    for doc in docs:
        _flatten(doc, out)
    for index, obj in enumerate(out):
        where = too_deep(obj)
        if where is not None:
            raise DocumentError(
                f"object {index + 1} is nested deeper than {MAX_DEPTH} levels at {shorten(where)}")
    return out
