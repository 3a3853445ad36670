"""Validation of the Kubernetes scheduling fields a subset carries, with Kubernetes' own messages.

These are re-statements of ``ValidateNodeSelectorTerm``, ``ValidatePreferredSchedulingTerms``,
``ValidateTolerations`` (core/validation, Kubernetes 1.32) and of the error text of
``metav1.LabelSelectorAsSelector``. The input is decoded JSON that has not been type-checked yet,
so a value of the wrong JSON type becomes an ``Invalid`` error instead of an exception.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubesemantics.field_errors import (
    FieldError,
    Path,
    forbidden,
    invalid,
    not_supported,
    required,
)
from kubesemantics.json_type import json_type
from kubesemantics.qualified_names import (
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
)

_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def type_error(path: Path, expected: str, value: object) -> FieldError:
    """A JSON value of the wrong type, reported where Go's decoder would have failed."""
    return invalid(path, f"expected {expected}, got {json_type(value)}")


def _items(value: object, path: Path, errors: list[FieldError]) -> list[tuple[Path, object]]:
    """The items of an optional JSON array, each with its path; a non-array is reported."""
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append(type_error(path, "array", value))
        return []
    return [(path.index(i), item) for i, item in enumerate(value)]


def _objects(
    value: object, path: Path, errors: list[FieldError]
) -> list[tuple[Path, Mapping[str, Any]]]:
    """The object items of an optional JSON array; other items are reported."""
    out: list[tuple[Path, Mapping[str, Any]]] = []
    for item_path, item in _items(value, path, errors):
        if isinstance(item, Mapping):
            out.append((item_path, item))
        else:
            errors.append(type_error(item_path, "object", item))
    return out


def _strings(value: object, path: Path, errors: list[FieldError]) -> list[str]:
    out: list[str] = []
    for item_path, item in _items(value, path, errors):
        if isinstance(item, str):
            out.append(item)
        else:
            errors.append(type_error(item_path, "string", item))
    return out


def _string(value: object, path: Path, errors: list[FieldError]) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    errors.append(type_error(path, "string", value))
    return ""


def validate_label_name(key: str, path: Path) -> list[FieldError]:
    return [invalid(path, msg) for msg in is_qualified_name(key)]


def _requirement(
    requirement: Mapping[str, Any], path: Path, errors: list[FieldError]
) -> tuple[str, list[str], str]:
    """A requirement's ``operator``, ``values`` and ``key``, wrong JSON types reported."""
    operator = _string(requirement.get("operator"), path.child("operator"), errors)
    values = _strings(requirement.get("values"), path.child("values"), errors)
    key = _string(requirement.get("key"), path.child("key"), errors)
    return operator, values, key


def validate_node_selector_requirement(
    requirement: object, path: Path, *, allow_invalid_label_value: bool
) -> list[FieldError]:
    if not isinstance(requirement, Mapping):
        return [type_error(path, "object", requirement)]
    errors: list[FieldError] = []
    operator, values, key = _requirement(requirement, path, errors)
    if operator in ("In", "NotIn"):
        if not values:
            errors.append(
                required(
                    path.child("values"), "must be specified when `operator` is 'In' or 'NotIn'"
                )
            )
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errors.append(
                forbidden(
                    path.child("values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            errors.append(
                required(
                    path.child("values"),
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                )
            )
    else:
        errors.append(invalid(path.child("operator"), "not a valid selector operator"))
    errors.extend(validate_label_name(key, path.child("key")))
    if not allow_invalid_label_value:
        for i, value in enumerate(values):
            errors.extend(
                invalid(path.child("values").index(i), m) for m in is_valid_label_value(value)
            )
    return errors


def validate_node_field_selector_requirement(requirement: object, path: Path) -> list[FieldError]:
    if not isinstance(requirement, Mapping):
        return [type_error(path, "object", requirement)]
    errors: list[FieldError] = []
    operator, values, key = _requirement(requirement, path, errors)
    if operator in ("In", "NotIn"):
        if len(values) != 1:
            errors.append(
                required(
                    path.child("values"),
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field "
                    "selector",
                )
            )
    else:
        errors.append(invalid(path.child("operator"), "not a valid selector operator"))
    if key != "metadata.name":
        errors.append(invalid(path.child("key"), "not a valid field selector key"))
    else:
        for i, value in enumerate(values):
            errors.extend(
                invalid(path.child("values").index(i), m) for m in is_dns1123_subdomain(value)
            )
    return errors


def validate_node_selector_term(
    term: object, path: Path, *, allow_invalid_label_value: bool
) -> list[FieldError]:
    """``ValidateNodeSelectorTerm``: every expression and field requirement of one term."""
    if not isinstance(term, Mapping):
        return [type_error(path, "object", term)]
    errors: list[FieldError] = []
    expressions = _items(term.get("matchExpressions"), path.child("matchExpressions"), errors)
    for req_path, req in expressions:
        errors.extend(
            validate_node_selector_requirement(
                req, req_path, allow_invalid_label_value=allow_invalid_label_value
            )
        )
    for req_path, req in _items(term.get("matchFields"), path.child("matchFields"), errors):
        errors.extend(validate_node_field_selector_requirement(req, req_path))
    return errors


def validate_preferred_scheduling_terms(terms: object, path: Path) -> list[FieldError]:
    """``ValidatePreferredSchedulingTerms``: weight 1-100 and a valid preference per term."""
    errors: list[FieldError] = []
    for term_path, term in _objects(terms, path, errors):
        weight = term.get("weight", 0)
        if isinstance(weight, bool) or not isinstance(weight, int):
            errors.append(type_error(term_path.child("weight"), "integer", weight))
        elif weight <= 0 or weight > 100:
            errors.append(invalid(term_path.child("weight"), "must be in the range 1-100"))
        preference = term.get("preference", {})
        errors.extend(
            validate_node_selector_term(
                preference if preference is not None else {},
                term_path.child("preference"),
                allow_invalid_label_value=True,
            )
        )
    return errors


def validate_tolerations(tolerations: object, path: Path) -> list[FieldError]:
    """``ValidateTolerations``, message for message, field for field."""
    errors: list[FieldError] = []
    for p, toleration in _objects(tolerations, path, errors):
        key = _string(toleration.get("key"), p.child("key"), errors)
        operator = _string(toleration.get("operator"), p.child("operator"), errors)
        value = _string(toleration.get("value"), p.child("value"), errors)
        effect = _string(toleration.get("effect"), p.child("effect"), errors)
        seconds = toleration.get("tolerationSeconds")
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)):
            errors.append(type_error(p.child("tolerationSeconds"), "integer", seconds))
        if key:
            errors.extend(validate_label_name(key, p.child("key")))
        if not key and operator != "Exists":
            errors.append(
                invalid(
                    p.child("operator"),
                    'operator must be Exists when `key` is empty, which means "match all values '
                    'and all keys"',
                )
            )
        if seconds is not None and effect != "NoExecute":
            errors.append(
                invalid(
                    p.child("effect"), "effect must be 'NoExecute' when `tolerationSeconds` is set"
                )
            )
        if operator in ("Equal", ""):
            label_errors = is_valid_label_value(value)
            if label_errors:
                errors.append(invalid(p.child("operator"), ";".join(label_errors)))
        elif operator == "Exists":
            if value:
                errors.append(
                    invalid(p.child("operator"), "value must be empty when `operator` is 'Exists'")
                )
        else:
            errors.append(not_supported(p.child("operator"), ("Equal", "Exists")))
        if effect and effect not in _TAINT_EFFECTS:
            errors.append(not_supported(p.child("effect"), _TAINT_EFFECTS))
    return errors


def _go_strings(values: list[str] | None) -> str:
    """Go's ``%#v`` of a ``[]string``."""
    if values is None:
        return "[]string(nil)"
    return "[]string{" + ", ".join(json.dumps(v) for v in values) + "}"


def _requirement_errors(key: str, operator: str, values: list[str] | None) -> list[str]:
    """The messages of ``labels.NewRequirement`` for one requirement."""
    messages: list[str] = []
    key_errors = is_qualified_name(key)
    if key_errors:
        messages.append(f"key: Invalid value: {json.dumps(key)}: {'; '.join(key_errors)}")
    count = len(values or [])
    if operator in ("in", "notin") and count == 0:
        messages.append(
            f"values: Invalid value: {_go_strings(values)}: "
            "for 'in', 'notin' operators, values set can't be empty"
        )
    if operator == "=" and count != 1:
        messages.append(
            f"values: Invalid value: {_go_strings(values)}: exact-match compatibility requires one "
            "single value"
        )
    if operator in ("exists", "!") and count != 0:
        messages.append(
            f"values: Invalid value: {_go_strings(values)}: "
            "values set must be empty for exists and does not exist"
        )
    for i, value in enumerate(values or []):
        value_errors = is_valid_label_value(value)
        if value_errors:
            messages.append(
                f"values[{i}][{key}]: Invalid value: {json.dumps(value)}: {'; '.join(value_errors)}"
            )
    return messages


def label_selector_error(selector: object) -> str | None:
    """The error text of ``metav1.LabelSelectorAsSelector`` (first failing requirement), or None."""
    if selector is None:
        return None
    if not isinstance(selector, Mapping):
        return f"selector: expected object, got {json_type(selector)}"
    labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(labels, Mapping):
        return f"matchLabels: expected object, got {json_type(labels)}"
    if not isinstance(expressions, list):
        return f"matchExpressions: expected array, got {json_type(expressions)}"
    for key in sorted(labels, key=str):
        value = labels[key]
        if not isinstance(key, str) or not isinstance(value, str):
            return "matchLabels: keys and values must be strings"
        messages = _requirement_errors(key, "=", [value])
        if messages:
            return _aggregate(messages)
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expr in expressions:
        if not isinstance(expr, Mapping):
            return f"matchExpressions: expected object, got {json_type(expr)}"
        operator = expr.get("operator")
        if operator not in ops:
            shown = json.dumps(operator if isinstance(operator, str) else "")
            return f"{shown} is not a valid label selector operator"
        key = expr.get("key")
        raw_values = expr.get("values")
        if not isinstance(key, str):
            return f"key: expected string, got {json_type(key)}"
        if raw_values is not None and (
            not isinstance(raw_values, list) or not all(isinstance(v, str) for v in raw_values)
        ):
            return "values: expected array of strings"
        values = list(raw_values) if raw_values else None
        messages = _requirement_errors(key, ops[str(operator)], values)
        if messages:
            return _aggregate(messages)
    return None


def _aggregate(messages: list[str]) -> str:
    """``utilerrors.Aggregate.Error()``: one message as is, several in brackets."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
