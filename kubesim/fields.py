"""Field selectors (``?fieldSelector=spec.nodeName=n1,status.phase!=Running``).

Upstream supports only ``=``, ``==`` and ``!=`` on a per-resource list of field labels;
anything else is a 400 ``field label not supported``. Every resource supports
``metadata.name`` and ``metadata.namespace``; CRDs add their ``selectableFields``.
Missing fields compare as the empty string, as upstream's field sets do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kubesim import errors

Predicate = Callable[[dict[str, Any]], bool]


def _lookup(obj: dict[str, Any], path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
        if cur is None:
            return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if isinstance(cur, dict):
        # ``source`` on events is an object; upstream selects on its component.
        return str(cur.get("component", ""))
    return str(cur)


def parse(text: str | None, supported: Sequence[str]) -> Predicate | None:
    """A predicate for ``text``; raises a 400 ApiError for syntax or unsupported fields."""
    if text is None or not text.strip():
        return None
    terms: list[tuple[str, bool, str]] = []
    for raw in _split(text):
        raw = raw.strip()
        if not raw:
            continue
        if "!=" in raw:
            name, value = raw.split("!=", 1)
            negate = True
        elif "==" in raw:
            name, value = raw.split("==", 1)
            negate = False
        elif "=" in raw:
            name, value = raw.split("=", 1)
            negate = False
        else:
            raise errors.bad_request(
                f"invalid field selector: invalid selector: '{text}'; can't understand '{raw}'"
            )
        name = name.strip()
        if name not in ("metadata.name", "metadata.namespace") and name not in supported:
            raise errors.bad_request(f"field label not supported: {name}")
        terms.append((name, negate, value.strip().replace("\\,", ",").replace("\\=", "=")))

    def predicate(obj: dict[str, Any]) -> bool:
        return all((_lookup(obj, name) == value) != negate for name, negate, value in terms)

    return predicate


def _split(text: str) -> list[str]:
    parts: list[str] = []
    cur = []
    escaped = False
    for ch in text:
        if escaped:
            cur.append("\\" + ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts
