"""Constructors for the ``Status`` failures a real API server sends, with its exact wording.

Every error kubesim raises is an :class:`~kubesim.interface.ApiError`; these functions only
fill in the code, reason, message and details the way ``k8s.io/apimachinery/pkg/api/errors``
does, so clients that branch on ``reason`` or parse ``details.causes`` behave as on a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubesim.interface import ApiError


def qualified(resource: str, group: str) -> str:
    """``pods`` or ``deployments.apps``: how upstream names a resource in messages."""
    return f"{resource}.{group}" if group else resource


def _details(name: str, resource: str, group: str) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name, "kind": resource}
    if group:
        d["group"] = group
    return d


def not_found(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{qualified(resource, group)} "{name}" not found',
        details=_details(name, resource, group),
    )


def already_exists(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified(resource, group)} "{name}" already exists',
        details=_details(name, resource, group),
    )


def conflict(resource: str, group: str, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {why}',
        details=_details(name, resource, group),
    )


def uid_precondition_failed(
    resource: str, group: str, namespace: str, name: str, wanted: str, actual: str, *, custom: bool
) -> ApiError:
    """409 for an update whose ``metadata.uid`` is not the stored object's (empty: no object).

    Upstream takes a non-empty uid in an update's body as a storage precondition; its failure
    reaches the client in the storage layer's words, key included.
    """
    key = storage_key(resource, group, namespace, name, custom=custom)
    return conflict(
        resource,
        group,
        name,
        f"StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, "
        f"AdditionalErrorMsg: Precondition failed: UID in precondition: {wanted}, "
        f"UID in object meta: {actual}",
    )


_STORAGE_PREFIXES = {("", "nodes"): "minions", ("", "services"): "services/specs"}


def storage_key(resource: str, group: str, namespace: str, name: str, *, custom: bool) -> str:
    """Where upstream's etcd keeps an object (``/registry/pods/ns/name``), for error messages."""
    prefix = f"{group}/{resource}" if custom else _STORAGE_PREFIXES.get((group, resource), resource)
    return f"/registry/{prefix}/{namespace}/{name}" if namespace else f"/registry/{prefix}/{name}"


STALE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def too_deep(limit: int) -> ApiError:
    """A body nesting objects and arrays beyond ``limit`` (:mod:`kubesim.nesting`)."""
    return bad_request(f"the request body nests objects and arrays more than {limit} levels "
                       "deep: exceeded max depth")


def method_not_allowed(message: str) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def forbidden(resource: str, group: str, name: str, why: str) -> ApiError:
    return ApiError(
        403,
        "Forbidden",
        f'{qualified(resource, group)} "{name}" is forbidden: {why}',
        details=_details(name, resource, group),
    )


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def unsupported_media_type(content_type: str, accepted: list[str]) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{', '.join(accepted)}",
    )


def too_large(message: str = "Request entity too large: limit is 3145728") -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", message)


def internal(message: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {message}")


def too_many_requests(message: str, causes: list[dict[str, str]] | None = None) -> ApiError:
    details: dict[str, Any] = {"causes": causes} if causes else {}
    return ApiError(429, "TooManyRequests", message, details=details)


@dataclass(frozen=True, slots=True)
class FieldError:
    """One field problem; ``kind`` is the upstream ``field.ErrorType`` name."""

    path: str
    kind: str
    detail: str = ""
    value: Any = None
    has_value: bool = False

    @property
    def reason(self) -> str:
        return _REASONS[self.kind]

    def message(self) -> str:
        text = self.kind
        if self.has_value:
            text += f": {_render(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        return text


_REASONS = {
    "Required value": "FieldValueRequired",
    "Invalid value": "FieldValueInvalid",
    "Unsupported value": "FieldValueNotSupported",
    "Forbidden": "FieldValueForbidden",
    "Duplicate value": "FieldValueDuplicate",
    "Too long": "FieldValueTooLong",
    "Too many": "FieldValueTooMany",
    "Not found": "FieldValueNotFound",
}


def _render(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, int | float) else repr(value)


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(path, "Required value", detail)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(path, "Invalid value", detail, value, True)


def not_supported(path: str, value: Any, supported: list[str]) -> FieldError:
    detail = "supported values: " + ", ".join(f'"{s}"' for s in supported)
    return FieldError(path, "Unsupported value", detail, value, True)


def forbidden_field(path: str, detail: str) -> FieldError:
    return FieldError(path, "Forbidden", detail)


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError(path, "Duplicate value", "", value, True)


def invalid_object(kind: str, group: str, name: str, errors: list[FieldError]) -> ApiError:
    """422 Invalid, listing every field error as upstream's ``NewInvalid`` does."""
    parts = [f"{e.path}: {e.message()}" for e in errors]
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    details: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "causes": [{"reason": e.reason, "message": e.message(), "field": e.path} for e in errors],
    }
    if group:
        details["group"] = group
    return ApiError(
        422,
        "Invalid",
        f'{kind}{"." + group if group else ""} "{name}" is invalid: {summary}',
        details=details,
    )
