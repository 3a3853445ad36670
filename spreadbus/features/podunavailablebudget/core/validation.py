"""PodUnavailableBudget validation with Kruise v1.9.0's field paths, types and error count.

Kruise reports a few paths that are not field paths at all (``spec.selector, targetRef``,
``spec.maxUnavailable, minAvailable``, ``spec.TargetReference`` beside ``spec.targetReference``);
they are reproduced verbatim so that tools comparing error text keep working. The checks:

- annotations: one Internal error at ``metadata`` per protect-operations item that is not exactly
  DELETE, UPDATE, EVICT or RESIZE; one for a protect-total-replicas value that is not an int32;
- exactly one of selector and targetRef (targetRef: no empty field, a parsable apiVersion;
  selector: a valid, non-empty label selector);
- exactly one of maxUnavailable and minAvailable, a non-negative int or an ``N%`` up to 100%;
- on UPDATE, selector and targetRef unchanged;
- no conflict with another budget of the namespace (same target, or loosely overlapping
  selectors; the first conflict only). A budget of the same name is the stored version of this
  one and is skipped.

The checks read the JSON as given, so a value of the wrong type is an error rather than absent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubesemantics.field_errors import FieldError, Path, internal, invalid, required
from kubesemantics.group_version import api_group, api_version_valid
from kubesemantics.intstr import is_int
from kubesemantics.label_selector import validate_label_selector
from kubesemantics.lenient_json import as_map, as_str
from kubesemantics.scheduling_validation import label_selector_error
from spreadbus.features.podunavailablebudget.core.model import (
    OPERATIONS,
    PROTECT_OPERATIONS_ANNOTATION,
    PROTECT_TOTAL_REPLICAS_ANNOTATION,
    is_budget,
    parse_int32,
)
from spreadbus.features.podunavailablebudget.core.selector_overlap import loosely_overlap

SPEC = Path("spec")
SELECTOR_OR_TARGET = SPEC.child("selector, targetRef")
MAX_OR_MIN = SPEC.child("maxUnavailable, minAvailable")

PERCENT_MESSAGE = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)


def _annotation_errors(meta: Mapping[str, Any]) -> list[FieldError]:
    annotations = as_map(meta.get("annotations"))
    errors: list[FieldError] = []
    operations = annotations.get(PROTECT_OPERATIONS_ANNOTATION)
    if operations is not None:
        items = as_str(operations).split(",")
        errors.extend(
            internal(Path("metadata"), f"annotation[{PROTECT_OPERATIONS_ANNOTATION}] is invalid")
            for item in items
            if item not in OPERATIONS
        )
    total = annotations.get(PROTECT_TOTAL_REPLICAS_ANNOTATION)
    if total is not None and parse_int32(as_str(total)) is None:
        message = f"annotation[{PROTECT_TOTAL_REPLICAS_ANNOTATION}] is invalid"
        errors.append(internal(Path("metadata"), message))
    return errors


def _target_ref_errors(ref: object) -> list[FieldError]:
    path = SPEC.child("TargetReference")
    if not isinstance(ref, Mapping):
        return [invalid(path, "must be an object with apiVersion, kind and name")]
    errors: list[FieldError] = []
    api_version, kind, name = (ref.get(k) for k in ("apiVersion", "kind", "name"))
    if not all(isinstance(v, str) and v for v in (api_version, kind, name)):
        errors.append(invalid(path, "empty TargetReference is not valid for PodUnavailableBudget."))
    if isinstance(api_version, str) and not api_version_valid(api_version):
        errors.append(invalid(path, f"unexpected GroupVersion string: {api_version}"))
    return errors


def _selector_requirement_error(field: str, message: str) -> FieldError:
    """``ValidateLabelSelector``'s type for each of its messages."""
    if message.startswith("must be specified"):
        return FieldError(field, "Required", message)
    if message.startswith("may not be specified"):
        return FieldError(field, "Forbidden", message)
    return FieldError(field, "Invalid", message)


def _selector_errors(selector: object) -> list[FieldError]:
    path = SPEC.child("selector")
    if not isinstance(selector, Mapping):
        return [invalid(path, "must be an object")]
    errors = [
        _selector_requirement_error(field, message)
        for field, message in validate_label_selector(selector, str(path))
    ]
    labels, expressions = selector.get("matchLabels"), selector.get("matchExpressions")
    count = (len(labels) if isinstance(labels, Mapping) else 0) + (
        len(expressions) if isinstance(expressions, list) else 0
    )
    if count == 0:
        errors.append(invalid(path, "empty selector is not valid for PodUnavailableBudget."))
    if label_selector_error(selector) is not None:
        errors.append(invalid(path, ""))
    return errors


def int_or_percent_errors(value: object, path: Path) -> list[FieldError]:
    """``ValidatePositiveIntOrPercent`` then ``IsNotMoreThan100Percent``."""
    if isinstance(value, str):
        digits = value[:-1]
        if not (value.endswith("%") and digits.isascii() and digits.isdigit()):
            return [invalid(path, PERCENT_MESSAGE)]
        if int(digits) > 100:
            return [invalid(path, "must not be greater than 100%")]
        return []
    if is_int(value):
        assert isinstance(value, int)
        return [invalid(path, "must be greater than or equal to 0")] if value < 0 else []
    return [invalid(path, "must be an integer or percentage (e.g '5%')")]


def _budget_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    max_unavailable, min_available = spec.get("maxUnavailable"), spec.get("minAvailable")
    if max_unavailable is None and min_available is None:
        return [required(MAX_OR_MIN, "no maxUnavailable or minAvailable defined in "
                                     "PodUnavailableBudget")]
    if max_unavailable is not None and min_available is not None:
        return [required(MAX_OR_MIN, "maxUnavailable and minAvailable are mutually exclusive")]
    if max_unavailable is not None:
        return int_or_percent_errors(max_unavailable, SPEC.child("maxUnavailable"))
    return int_or_percent_errors(min_available, SPEC.child("minAvailable"))


def validate_spec(spec: Mapping[str, Any]) -> list[FieldError]:
    selector, ref = spec.get("selector"), spec.get("targetRef")
    errors: list[FieldError] = []
    if selector is None and ref is None:
        errors.append(required(SELECTOR_OR_TARGET,
                               "no selector or targetRef defined in PodUnavailableBudget"))
    elif selector is not None and ref is not None:
        errors.append(required(SELECTOR_OR_TARGET,
                               "selector and targetRef are mutually exclusive"))
    elif ref is not None:
        errors.extend(_target_ref_errors(ref))
    else:
        errors.extend(_selector_errors(selector))
    return errors + _budget_errors(spec)


def update_errors(spec: Mapping[str, Any], old_spec: Mapping[str, Any]) -> list[FieldError]:
    if spec.get("selector") != old_spec.get("selector") or spec.get("targetRef") != old_spec.get(
        "targetRef"
    ):
        return [required(SELECTOR_OR_TARGET, "selector and targetRef cannot be modified")]
    return []


def _ref_key(ref: object) -> tuple[str, str, str] | None:
    if not isinstance(ref, Mapping):
        return None
    api_version = as_str(ref.get("apiVersion"))
    # A version Go cannot parse leaves the group empty.
    group = api_group(api_version) if api_version_valid(api_version) else ""
    return (group, as_str(ref.get("kind")), as_str(ref.get("name")))


def conflict_errors(
    obj: Mapping[str, Any], others: Sequence[Mapping[str, Any]]
) -> list[FieldError]:
    """The first conflict with another budget of the same namespace, if any."""
    meta = as_map(obj.get("metadata"))
    name = as_str(meta.get("name"))
    namespace = as_str(meta.get("namespace")) or "default"
    spec = as_map(obj.get("spec"))
    ref, selector = _ref_key(spec.get("targetRef")), spec.get("selector")
    for other in others:
        other_meta = as_map(other.get("metadata"))
        other_name = as_str(other_meta.get("name"))
        if not is_budget(other) or other_name == name:
            continue
        if (as_str(other_meta.get("namespace")) or "default") != namespace:
            continue
        other_spec = as_map(other.get("spec"))
        other_ref, other_selector = _ref_key(other_spec.get("targetRef")), other_spec.get(
            "selector"
        )
        if ref is not None and other_ref is not None:
            if ref == other_ref:
                return [invalid(SPEC.child("targetReference"),
                                "pub.spec.targetReference is in conflict with other "
                                f"PodUnavailableBudget {other_name}")]
        elif (
            isinstance(selector, Mapping)
            and isinstance(other_selector, Mapping)
            and loosely_overlap(selector, other_selector)
        ):
            return [invalid(SPEC.child("selector"),
                            "pub.spec.selector is in conflict with other "
                            f"PodUnavailableBudget {other_name}")]
    return []


def validate_budget(
    obj: Mapping[str, Any],
    *,
    old: Mapping[str, Any] | None = None,
    others: Sequence[Mapping[str, Any]] = (),
) -> list[FieldError]:
    """Every error the validating webhook reports for a CREATE (an UPDATE with ``old``)."""
    spec = as_map(obj.get("spec"))
    errors = _annotation_errors(as_map(obj.get("metadata")))
    errors.extend(validate_spec(spec))
    if old is not None:
        errors.extend(update_errors(spec, as_map(old.get("spec"))))
    errors.extend(conflict_errors(obj, others))
    return errors


__all__ = [
    "conflict_errors",
    "int_or_percent_errors",
    "update_errors",
    "validate_budget",
    "validate_spec",
]
