"""RFC 6902 JSON Patch between two JSON documents, and its application.

An admission webhook answers with a JSON Patch against the object it was sent, so the mutation is
computed on plain JSON and then expressed as the difference. The diff is minimal where it is cheap
to be: maps are compared key by key, a list that only grew gets ``add`` operations for its new
items, a list of the same length is compared item by item, anything else is replaced whole.

:func:`diff` does not copy: the operations' values are the objects of the new document, and both
are read-only from then on (an admission answer only serialises them). Copying them would copy
again what the mutation has just built. :func:`apply` copies, since it must not change ``doc``.
"""

from __future__ import annotations

import copy
from typing import Any

JSON = dict[str, Any]


class JsonPatchError(ValueError):
    """A patch operation that does not apply to the document."""


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def diff(old: Any, new: Any, path: str = "") -> list[JSON]:
    """Operations that turn ``old`` into ``new``; their values are ``new``'s own objects."""
    if isinstance(old, dict) and isinstance(new, dict):
        ops: list[JSON] = []
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": f"{path}/{_escape(key)}"})
        for key, value in new.items():
            if key not in old:
                ops.append({"op": "add", "path": f"{path}/{_escape(key)}", "value": value})
                continue
            before = old[key]
            # An object shared with ``old`` (copy-on-write results share what they keep) is
            # unchanged without comparing its contents.
            if before is not value and (before != value or type(before) is not type(value)):
                ops.extend(diff(before, value, f"{path}/{_escape(key)}"))
        return ops
    if isinstance(old, list) and isinstance(new, list):
        if len(new) >= len(old) and new[: len(old)] == old:
            return [
                {"op": "add", "path": f"{path}/{i}", "value": new[i]}
                for i in range(len(old), len(new))
            ]
        if len(new) == len(old):
            ops = []
            for i, (a, b) in enumerate(zip(old, new, strict=True)):
                if a is not b and (a != b or type(a) is not type(b)):
                    ops.extend(diff(a, b, f"{path}/{i}"))
            return ops
    if old == new and type(old) is type(new):
        return []
    return [{"op": "replace", "path": path, "value": new}]


def _parent(doc: Any, path: str) -> tuple[Any, str]:
    if not path.startswith("/"):
        raise JsonPatchError(f"path {path!r} must start with '/'")
    tokens = [_unescape(t) for t in path[1:].split("/")]
    target = doc
    for token in tokens[:-1]:
        if isinstance(target, dict) and token in target:
            target = target[token]
        elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
            target = target[int(token)]
        else:
            raise JsonPatchError(f"path {path!r} does not exist")
    return target, tokens[-1]


def apply(doc: Any, ops: list[JSON]) -> Any:
    """Apply ``add``/``remove``/``replace`` operations; returns a new document."""
    result = copy.deepcopy(doc)
    for op in ops:
        kind, path = op.get("op"), str(op.get("path", ""))
        if path == "":
            if kind in ("add", "replace"):
                result = copy.deepcopy(op.get("value"))
                continue
            raise JsonPatchError("cannot remove the whole document")
        parent, token = _parent(result, path)
        value = copy.deepcopy(op.get("value"))
        if isinstance(parent, dict):
            if kind in ("add", "replace"):
                if kind == "replace" and token not in parent:
                    raise JsonPatchError(f"path {path!r} does not exist")
                parent[token] = value
            elif kind == "remove":
                if token not in parent:
                    raise JsonPatchError(f"path {path!r} does not exist")
                del parent[token]
            else:
                raise JsonPatchError(f"unsupported op {kind!r}")
        elif isinstance(parent, list):
            index = len(parent) if token == "-" else int(token) if token.isdigit() else -1
            if index < 0 or index > len(parent) or (kind != "add" and index == len(parent)):
                raise JsonPatchError(f"path {path!r} does not exist")
            if kind == "add":
                parent.insert(index, value)
            elif kind == "replace":
                parent[index] = value
            elif kind == "remove":
                del parent[index]
            else:
                raise JsonPatchError(f"unsupported op {kind!r}")
        else:
            raise JsonPatchError(f"path {path!r} does not exist")
    return result
