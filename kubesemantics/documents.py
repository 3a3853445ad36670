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


def _where(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


def yaml_reason(exc: yaml.YAMLError) -> str:
    """The parser's reason with its line and column, and the line it points at, without the
    stream name the parser gives text (``"<unicode string>"``): the caller names the file."""
    if not isinstance(exc, yaml.MarkedYAMLError) or exc.problem_mark is None:
        return str(exc).replace(' in "<unicode string>",', "")
    mark = exc.problem_mark
    reason = f"{_where(mark)}: {exc.problem}"
    if exc.context:
        start = exc.context_mark
        reason += f" ({exc.context}" + (f" at {_where(start)}" if start is not None else "") + ")"
    snippet = mark.get_snippet() or ""
    shown = snippet.splitlines()[0].strip() if snippet.strip() else ""
    return f"{reason}\n{snippet}" if shown else reason  # no blank line under a caret


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
                raise DocumentError(f"not valid YAML or JSON: {yaml_reason(exc)}") from exc
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
