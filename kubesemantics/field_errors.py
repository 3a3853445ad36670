"""Field errors shaped like Kubernetes' ``field.Error``, shared by every validation.

A validation returns a list of these and never raises. ``message`` is the detail Kubernetes puts
after the value (``field.Invalid(path, value, detail)``), so it can be compared verbatim with the
upstream text; :func:`describe` renders the whole ``"<path>: Invalid value: ...: <detail>"`` line
when a human-readable form is wanted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal

import msgspec

ErrorType = Literal[
    "Required",
    "Invalid",
    "Duplicate",
    "Forbidden",
    "NotSupported",
    "TooLong",
    "TooMany",
    "Internal",
    "NotFound",
]

# How Kubernetes names each type in an error string (field.ErrorType.String()).
_TYPE_TEXT: dict[str, str] = {
    "Required": "Required value",
    "Invalid": "Invalid value",
    "Duplicate": "Duplicate value",
    "Forbidden": "Forbidden",
    "NotSupported": "Unsupported value",
    "TooLong": "Too long",
    "TooMany": "Too many",
    "Internal": "Internal error",
    "NotFound": "Not found",
}


class FieldError(msgspec.Struct, frozen=True):
    """One problem with one field; ``field`` is a path like ``spec.subsets[1].maxReplicas``.
    ``value``, when given, is the bad value, shown where Kubernetes shows it (``Invalid value:
    -1: <detail>``); ``None`` leaves it out."""

    field: str
    type: ErrorType
    message: str
    value: Any = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form; an error whose detail is empty (Kubernetes allows one, as Kruise's
        empty subset name) says its kind of problem instead, so no message is ever empty. The
        bad value is there (``value``) only when the error carries one."""
        message = self.message or _TYPE_TEXT.get(self.type, self.type)
        out: dict[str, Any] = {"field": self.field, "type": self.type, "message": message}
        if self.value is not None:
            out["value"] = self.value
        return out


class Path(msgspec.Struct, frozen=True):
    """A field path built the way ``field.NewPath(...).Child(...).Index(i)`` builds it."""

    text: str = ""

    def child(self, *names: str) -> Path:
        text = self.text
        for name in names:
            text = f"{text}.{name}" if text else name
        return Path(text)

    def index(self, i: int | str) -> Path:
        return Path(f"{self.text}[{i}]")

    def __str__(self) -> str:
        return self.text


def required(path: Path, message: str = "") -> FieldError:
    return FieldError(str(path), "Required", message)


def invalid(path: Path, message: str, value: Any = None) -> FieldError:
    return FieldError(str(path), "Invalid", message, value)


def forbidden(path: Path, message: str) -> FieldError:
    return FieldError(str(path), "Forbidden", message)


def duplicate(path: Path, message: str = "") -> FieldError:
    return FieldError(str(path), "Duplicate", message)


def internal(path: Path, message: str) -> FieldError:
    return FieldError(str(path), "Internal", message)


def too_many(path: Path, maximum: int) -> FieldError:
    """Kubernetes' TooMany: a list longer than its limit."""
    return FieldError(str(path), "TooMany",
                      f"must have at most {maximum} {'item' if maximum == 1 else 'items'}")


def too_long(path: Path, maximum: int) -> FieldError:
    """Kubernetes' TooLong: a value of more than ``maximum`` bytes."""
    return FieldError(str(path), "TooLong",
                      f"may not be more than {maximum} {'byte' if maximum == 1 else 'bytes'}")


def not_supported(path: Path, valid_values: Iterable[str]) -> FieldError:
    """Kubernetes' NotSupported: the detail lists the valid values, each quoted."""
    quoted = ", ".join(json.dumps(v) for v in valid_values)
    return FieldError(str(path), "NotSupported", f"supported values: {quoted}")


def _go_value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, default=str, sort_keys=True)


def describe(error: FieldError, value: Any = None) -> str:
    """The one-line form Kubernetes prints, e.g. ``spec.x: Invalid value: 3: must be ...``."""
    head = f"{error.field}: {_TYPE_TEXT.get(error.type, error.type)}"
    value = error.value if value is None else value
    if error.type in ("Invalid", "NotSupported", "Duplicate", "NotFound") and value is not None:
        head = f"{head}: {_go_value(value)}"
    return f"{head}: {error.message}" if error.message else head
