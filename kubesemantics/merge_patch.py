"""JSON merge patches (RFC 7386) computed as the difference between two documents.

A controller that wants an object to equal a rendered one sends the difference, not the whole
object: fields it has no opinion about are not part of either document and stay as they are.
Objects are compared key by key; a key of ``old`` missing from ``new`` becomes ``null`` (removed);
anything else that differs, lists included (a merge patch replaces lists whole), is ``new``'s
value. Applying ``diff(old, new)`` to ``old`` gives ``new`` exactly, except where ``new`` itself
holds a ``null``, which a merge patch cannot write.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch turning ``old`` into ``new``; ``{}`` when they are equal."""
    patch: dict[str, Any] = {}
    for key, value in new.items():
        if key not in old:
            patch[key] = value
            continue
        before = old[key]
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            nested = diff(before, value)
            if nested:
                patch[key] = nested
        elif not same_json(before, value):
            patch[key] = value
    for key in old:
        if key not in new:
            patch[key] = None
    return patch


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON values: unlike Python's ``==``, ``0`` is not ``false`` (nor ``1`` ``1.0``),
    in lists and objects too."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def apply(doc: Any, patch: Any) -> Any:
    """``patch`` applied to ``doc`` (RFC 7386); neither argument is changed."""
    if not isinstance(patch, Mapping):
        return patch
    out = dict(doc) if isinstance(doc, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = apply(out.get(key), value)
    return out
