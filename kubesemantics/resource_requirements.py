"""A container's ``resources`` judged as the API server judges them when a pod is created.

The checks of ``ValidateResourceRequirements``: every quantity parses and is not negative,
resource names are standard or qualified extended names, extended resources are whole numbers,
requests are at most the limits (equal to them for resources that cannot be overcommitted:
extended resources and huge pages), a request for such a resource has a limit, and huge pages
come with cpu or memory. Quantities are quoted as written rather than in Kubernetes' canonical
form. Names are visited in sorted order so the errors come out the same every time.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Final

from kubesemantics.field_errors import FieldError, Path, forbidden, invalid, required
from kubesemantics.qualified_names import is_qualified_name
from kubesemantics.quantity import QuantityError, parse_quantity, quantity_text

_CONTAINER_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})
_QUOTA_INTEGER_RESOURCES: Final = frozenset({
    "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
    "persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
})
_STANDARD_RESOURCES: Final = _CONTAINER_RESOURCES | _QUOTA_INTEGER_RESOURCES | frozenset({
    "requests.cpu", "requests.memory", "requests.ephemeral-storage", "limits.cpu",
    "limits.memory", "limits.ephemeral-storage", "storage", "requests.storage",
})
_HUGE_PAGES: Final = "hugepages-"
_NATIVE_PREFIX: Final = "kubernetes.io/"
_REQUESTS_PREFIX: Final = "requests."


def _huge_pages(name: str) -> bool:
    return name.startswith(_HUGE_PAGES)


def _native(name: str) -> bool:
    return "/" not in name or _NATIVE_PREFIX in name


def _extended(name: str) -> bool:
    if _native(name) or name.startswith(_REQUESTS_PREFIX):
        return False
    return not is_qualified_name(_REQUESTS_PREFIX + name)


def _overcommit_allowed(name: str) -> bool:
    return _native(name) and not _huge_pages(name)


def _name_errors(name: str, path: Path) -> list[FieldError]:
    errors = [invalid(path, f"{name}: {message}") for message in is_qualified_name(name)]
    if errors:
        return errors
    if "/" not in name:
        standard = name in _STANDARD_RESOURCES or _huge_pages(name) or name.startswith(
            _REQUESTS_PREFIX + _HUGE_PAGES
        )
        if not standard:
            errors.append(invalid(path, f"{name}: must be a standard resource type or fully "
                                        "qualified"))
        if name not in _CONTAINER_RESOURCES and not _huge_pages(name):
            errors.append(invalid(path, f"{name}: must be a standard resource for containers"))
    elif not _native(name) and not _extended(name):
        errors.append(invalid(path, f"{name}: doesn't follow extended resource name standard"))
    return errors


def _quantities(
    value: object, path: Path, errors: list[FieldError]
) -> dict[str, tuple[Fraction, str]]:
    """Each named quantity that parses, with its text; errors for those that do not."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        errors.append(invalid(path, "must be an object of resource names to quantities"))
        return {}
    out: dict[str, tuple[Fraction, str]] = {}
    for name in sorted(value, key=str):
        key = str(name)
        at = path.index(key)
        errors.extend(_name_errors(key, at))
        try:
            amount = parse_quantity(value[name])
        except QuantityError as exc:
            errors.append(invalid(at, f"{quantity_text(value[name])}: {exc}"))
            continue
        text = quantity_text(value[name])
        if amount < 0:
            errors.append(invalid(at, f"{text}: must be greater than or equal to 0"))
        if (key in _QUOTA_INTEGER_RESOURCES or _extended(key)) and amount.denominator != 1:
            errors.append(invalid(at, f"{text}: must be an integer"))
        out[key] = (amount, text)
    return out


def validate_resource_requirements(resources: object, path: Path) -> list[FieldError]:
    """Every error the API server reports for one container's ``resources``; never raises."""
    if resources is None:
        return []
    if not isinstance(resources, Mapping):
        return [invalid(path, "must be an object")]
    errors: list[FieldError] = []
    limits_path, requests_path = path.child("limits"), path.child("requests")
    limits = _quantities(resources.get("limits"), limits_path, errors)
    requests = _quantities(resources.get("requests"), requests_path, errors)
    for name, (amount, text) in requests.items():
        if name in limits:
            limit, limit_text = limits[name]
            if amount != limit and not _overcommit_allowed(name):
                errors.append(invalid(requests_path,
                                      f"{text}: must be equal to {name} limit of {limit_text}"))
            elif amount > limit:
                errors.append(invalid(
                    requests_path, f"{text}: must be less than or equal to {name} limit of "
                                   f"{limit_text}"))
        elif not _overcommit_allowed(name):
            errors.append(required(limits_path,
                                   "Limit must be set for non overcommitable resources"))
    named = set(limits) | set(requests)
    if any(_huge_pages(n) for n in named) and not named & {"cpu", "memory"}:
        errors.append(forbidden(path, "HugePages require cpu or memory"))
    return errors
