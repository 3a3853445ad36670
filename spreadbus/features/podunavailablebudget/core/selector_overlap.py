"""Whether two PUB selectors "loosely overlap", the test Kruise's webhook uses for conflicts.

Each selector becomes one requirement per key (``matchLabels`` read as ``In [value]`` and
replacing an expression on the same key). Two selectors overlap only when they constrain exactly
the same keys and, key by key, some label value could satisfy both requirements. Selectors on
different key sets never overlap, although a pod may match both (``app=a`` and
``app=a,tier=web``): upstream accepts that, and so does this check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_Requirement = tuple[str, frozenset[str]]


def _requirements(selector: Mapping[str, Any]) -> dict[str, _Requirement]:
    out: dict[str, _Requirement] = {}
    expressions = selector.get("matchExpressions")
    for expr in expressions if isinstance(expressions, list) else ():
        if not isinstance(expr, Mapping):
            continue
        values = expr.get("values")
        strings = frozenset(v for v in values if isinstance(v, str)) if isinstance(
            values, list
        ) else frozenset()
        out[str(expr.get("key") or "")] = (str(expr.get("operator") or ""), strings)
    labels = selector.get("matchLabels")
    for key, value in (labels.items() if isinstance(labels, Mapping) else ()):
        out[str(key)] = ("In", frozenset({str(value)}))
    return out


def _pair_overlaps(a: _Requirement, b: _Requirement) -> bool:
    (op_a, values_a), (op_b, values_b) = a, b
    match op_a:
        case "In":
            if op_b == "In":
                return bool(values_a & values_b)
            if op_b == "Exists":
                return True
            if op_b == "NotIn":
                return not values_a <= values_b
            return False
        case "Exists":
            return op_b in ("In", "NotIn", "Exists")
        case "NotIn":
            if op_b in ("Exists", "DoesNotExist", "NotIn"):
                return True
            if op_b == "In":
                return not values_b <= values_a
            return False
        case "DoesNotExist":
            return op_b in ("DoesNotExist", "NotIn")
    return False


def loosely_overlap(first: Mapping[str, Any], second: Mapping[str, Any]) -> bool:
    a, b = _requirements(first), _requirements(second)
    if a.keys() != b.keys():
        return False
    return all(_pair_overlaps(a[key], b[key]) for key in a)
