"""Label selectors (``matchLabels`` plus ``matchExpressions``) evaluated against label maps.

An empty selector matches everything; a None selector matches nothing, as upstream's
``LabelSelectorAsSelector`` does for workload selectors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    if selector is None:
        return False
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or ():
        key = expression.get("key") or ""
        operator = expression.get("operator")
        values = expression.get("values") or ()
        if operator == "In":
            if labels.get(key) not in values:
                return False
        elif operator == "NotIn":
            if key in labels and labels[key] in values:
                return False
        elif operator == "Exists":
            if key not in labels:
                return False
        elif operator == "DoesNotExist":
            if key in labels:
                return False
        else:
            return False
    return True


def is_empty_selector(selector: Mapping[str, Any] | None) -> bool:
    return (
        selector is not None
        and not selector.get("matchLabels")
        and not selector.get("matchExpressions")
    )
