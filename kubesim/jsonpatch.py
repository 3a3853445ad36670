"""RFC 6902 JSON Patch (``application/json-patch+json``), with upstream's error wording.

Operations never mutate the input document: each op copies the containers on its path. The
values of ``add`` and ``replace`` become part of the result as they are, without a copy: every
caller applies operations decoded for that one call (a request body, a webhook's answer), which
nothing else holds, and a webhook's patch can carry a whole pod spec section per pod created.
"""

from __future__ import annotations

import copy
from typing import Any


class JsonPatchError(ValueError):
    pass


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _split(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise JsonPatchError(f"invalid path: {path!r}")
    return [_unescape(t) for t in path[1:].split("/")]


def _index(container: list[Any], token: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (token.startswith("0") and token != "0"):
        raise JsonPatchError(f"invalid array index: {token!r}")
    idx = int(token)
    limit = len(container) if allow_end else len(container) - 1
    if idx > limit:
        raise JsonPatchError(f"Unable to access invalid index: {idx}")
    return idx


def _get(doc: Any, tokens: list[str]) -> Any:
    cur = doc
    for t in tokens:
        if isinstance(cur, dict):
            if t not in cur:
                raise JsonPatchError(f"Unable to get value at path: missing key {t!r}")
            cur = cur[t]
        elif isinstance(cur, list):
            cur = cur[_index(cur, t, allow_end=False)]
        else:
            raise JsonPatchError("Unable to traverse a scalar value")
    return cur


def _with(doc: Any, tokens: list[str], op: str, value: Any = None) -> Any:
    """A copy of ``doc`` with ``op`` applied at ``tokens`` (copying only the path)."""
    if not tokens:
        if op in ("add", "replace"):
            return value
        raise JsonPatchError("cannot remove the document root")
    head, rest = tokens[0], tokens[1:]
    if isinstance(doc, dict):
        out = dict(doc)
        if rest:
            if head not in out:
                raise JsonPatchError(f'doc is missing path: "/{"/".join(tokens)}": missing value')
            out[head] = _with(out[head], rest, op, value)
        elif op == "add":
            out[head] = value
        elif op == "replace":
            if head not in out:
                raise JsonPatchError(
                    f"replace operation does not apply: doc is missing key: /{head}: missing value"
                )
            out[head] = value
        else:
            if head not in out:
                raise JsonPatchError(
                    "remove operation does not apply: doc is missing path: "
                    f'"/{head}": missing value'
                )
            del out[head]
        return out
    if isinstance(doc, list):
        out_list = list(doc)
        if rest:
            idx = _index(out_list, head, allow_end=False)
            out_list[idx] = _with(out_list[idx], rest, op, value)
        elif op == "add":
            out_list.insert(_index(out_list, head, allow_end=True), value)
        elif op == "replace":
            out_list[_index(out_list, head, allow_end=False)] = value
        else:
            del out_list[_index(out_list, head, allow_end=False)]
        return out_list
    raise JsonPatchError("Unable to traverse a scalar value")


def apply(doc: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise JsonPatchError("a JSON patch must be a list of operations")
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise JsonPatchError(f"invalid operation: {op!r}")
        kind = op["op"]
        if "path" not in op:
            raise JsonPatchError(f"operation missing 'path': {op!r}")
        path = _split(op["path"])
        if kind in ("add", "replace", "test") and "value" not in op:
            raise JsonPatchError(f"operation missing 'value': {op!r}")
        if kind == "add":
            doc = _with(doc, path, "add", op["value"])
        elif kind == "replace":
            doc = _with(doc, path, "replace", op["value"])
        elif kind == "remove":
            doc = _with(doc, path, "remove")
        elif kind in ("move", "copy"):
            if "from" not in op:
                raise JsonPatchError(f"operation missing 'from': {op!r}")
            src = _split(op["from"])
            value = copy.deepcopy(_get(doc, src))
            if kind == "move":
                doc = _with(doc, src, "remove")
            doc = _with(doc, path, "add", value)
        elif kind == "test":
            if _get(doc, path) != op["value"]:
                raise JsonPatchError(f"testing value {op['path']} failed: test failed")
        else:
            raise JsonPatchError(f"Unexpected kind: {kind}")
    return doc
