"""How deep a request body nests objects and arrays, bounded before anything recurses into it.

Decoding, defaulting, merging, converting and encoding an object all recurse once per level, so
a body nested thousands deep would end in a ``RecursionError`` somewhere past the decoder. The
API server's JSON decoder stops at 10,000 levels; Python's default recursion limit (1,000 frames
for the whole call stack) cannot reach that, so kubesim refuses a body deeper than
:data:`MAX_DEPTH`, far beyond any real object and well inside what every step handles, with a
400 that says so (:func:`kubesim.errors.too_deep`).

Signature::

    deeper_than(value: object, limit: int) -> bool
"""

from __future__ import annotations

from typing import Final

from kubesemantics.nesting import too_deep

MAX_DEPTH: Final = 256
"""Objects and arrays inside one another a request body may hold (``{}`` alone is 1)."""


def deeper_than(value: object, limit: int) -> bool:
    """Whether ``value`` (decoded JSON or YAML) nests objects and arrays more than ``limit``
    deep, measured without recursing (:func:`kubesemantics.nesting.too_deep`)."""
    return too_deep(value, limit=limit) is not None


def may_be_deeper_than(raw: bytes, limit: int) -> bool:
    """Whether a JSON text could nest deeper than ``limit``: not when it opens no more objects
    and arrays than that in all (counted in C, so a small body is never walked)."""
    return raw.count(b"{") + raw.count(b"[") > limit
