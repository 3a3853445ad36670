"""A budget's selector compiled as Kruise's controller and pod webhook compile it.

Kruise trusts that its validating webhook checked the selector and builds the requirements
without validating them again: only an unknown operator fails (the budget then selects nothing).
A requirement that validation would have refused still selects as written: ``In`` with no values
selects nothing, ``NotIn`` with none selects every pod, ``Exists`` with values ignores them. A
missing selector selects nothing; an empty one selects every pod of the namespace (the pod
webhook refuses to match an empty one; the controller lists with it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubesemantics.label_selector import MATCH_NOTHING, Operator, Requirement, Selector

_OPERATORS: Final[dict[str, Operator]] = {
    "In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!",
}


def compile_selector(selector: Mapping[str, Any] | None) -> Selector | None:
    """The selector, or None when an operator is unknown; a missing one selects nothing."""
    if selector is None:
        return MATCH_NOTHING
    labels = selector.get("matchLabels")
    expressions = selector.get("matchExpressions")
    requirements = [
        Requirement(str(key), "in", frozenset({value}))
        for key, value in (labels.items() if isinstance(labels, Mapping) else ())
        if isinstance(value, str)
    ]
    for expr in expressions if isinstance(expressions, list) else ():
        if not isinstance(expr, Mapping):
            continue
        operator = _OPERATORS.get(str(expr.get("operator")))
        if operator is None:
            return None
        values = expr.get("values")
        strings = frozenset(v for v in values if isinstance(v, str)) if isinstance(
            values, list) else frozenset()
        requirements.append(Requirement(str(expr.get("key") or ""), operator, strings))
    return Selector(tuple(requirements))


def string_labels(obj: Mapping[str, Any]) -> dict[str, str]:
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    if not isinstance(labels, Mapping):
        return {}
    return {str(k): v for k, v in labels.items() if isinstance(v, str)}
