"""Structural-schema handling for custom resources: defaulting, pruning and validation.

A real API server prunes fields a CRD's ``openAPIV3Schema`` does not declare (unless
``x-kubernetes-preserve-unknown-fields``), applies ``default`` values, then validates. kubesim
implements the parts clients notice: types (with ``x-kubernetes-int-or-string`` and
``nullable``), ``required``, ``enum``, numeric and length bounds, ``pattern``, item counts,
``additionalProperties`` maps, defaults, and pruning. CEL rules (``x-kubernetes-validations``)
are not evaluated. ``apiVersion``, ``kind`` and ``metadata`` at the root are left alone, as
upstream validates them separately.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kubesemantics import structural_schema
from kubesim import errors
from kubesim.errors import FieldError

Schema = Mapping[str, Any]

_ROOT_KEEP = ("apiVersion", "kind", "metadata")


def _type_ok(t: str, v: Any) -> bool:
    if t == "object":
        return isinstance(v, dict)
    if t == "array":
        return isinstance(v, list)
    if t == "string":
        return isinstance(v, str)
    if t == "integer":
        return (isinstance(v, int) and not isinstance(v, bool)) or (
            isinstance(v, float) and v.is_integer()
        )
    if t == "number":
        return isinstance(v, int | float) and not isinstance(v, bool)
    if t == "boolean":
        return isinstance(v, bool)
    return True


def _json_type(v: Any) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return "null"


def default_and_prune(schema: Schema, value: Any, *, root: bool = False) -> Any:
    """``value`` with defaults applied and undeclared fields removed (returns a new value)."""
    if isinstance(value, dict):
        props: Mapping[str, Any] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        out: dict[str, Any] = {}
        for k, v in value.items():
            if root and k in _ROOT_KEEP:
                out[k] = v
            elif k in props:
                out[k] = default_and_prune(props[k], v)
            elif isinstance(extra, Mapping):
                out[k] = default_and_prune(extra, v)
            elif (
                preserve
                or extra is True
                or (not props and schema.get("type") != "object" and not extra)
            ):
                out[k] = v
            # otherwise: pruned
        for k, sub in props.items():
            if k not in out and isinstance(sub, Mapping) and "default" in sub:
                out[k] = default_and_prune(sub, _copy(sub["default"]))
        return out
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            return [default_and_prune(items, v) for v in value]
        return value
    return value


def _copy(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy(x) for x in v]
    return v


def unknown_fields(schema: Schema, value: Any, path: str = "", *, root: bool = False) -> list[str]:
    """Paths of fields that pruning would drop (for ``fieldValidation=Strict``), ``metadata``
    included; shared with ``spreadbus validate`` so both refuse the same objects."""
    return structural_schema.unknown_fields(schema, value, path, root=root)


def validate(schema: Schema, value: Any, path: str = "", *, root: bool = False) -> list[FieldError]:
    errs: list[FieldError] = []
    _validate(schema, value, path, errs, root)
    return errs


def _validate(schema: Schema, value: Any, path: str, errs: list[FieldError], root: bool) -> None:
    name = path or "<root>"
    if value is None:
        if schema.get("nullable"):
            return
        if schema.get("type"):
            errs.append(
                errors.invalid(
                    name, "null", f'{name} in body must be of type {schema["type"]}: "null"'
                )
            )
        return
    t = schema.get("type")
    if schema.get("x-kubernetes-int-or-string"):
        if not (isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))):
            errs.append(
                errors.invalid(
                    name,
                    _json_type(value),
                    f'{name} in body must be of type integer,string: "{_json_type(value)}"',
                )
            )
            return
    elif isinstance(t, str) and not _type_ok(t, value):
        errs.append(
            errors.invalid(
                name,
                _json_type(value),
                f'{name} in body must be of type {t}: "{_json_type(value)}"',
            )
        )
        return
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        errs.append(errors.not_supported(name, value, [str(e) for e in enum]))
    if isinstance(value, int | float) and not isinstance(value, bool):
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if lo is not None and (value < lo or (schema.get("exclusiveMinimum") and value == lo)):
            errs.append(
                errors.invalid(
                    name, value, f"{name} in body should be greater than or equal to {lo}"
                )
            )
        if hi is not None and (value > hi or (schema.get("exclusiveMaximum") and value == hi)):
            errs.append(
                errors.invalid(name, value, f"{name} in body should be less than or equal to {hi}")
            )
    if isinstance(value, str):
        if schema.get("maxLength") is not None and len(value) > schema["maxLength"]:
            errs.append(
                FieldError(
                    name,
                    "Too long",
                    f"may not be more than {schema['maxLength']} bytes",
                    value,
                    True,
                )
            )
        if schema.get("minLength") is not None and len(value) < schema["minLength"]:
            errs.append(
                errors.invalid(
                    name,
                    value,
                    f"{name} in body should be at least {schema['minLength']} chars long",
                )
            )
        pattern = schema.get("pattern")
        if pattern and not re.search(pattern, value):
            errs.append(errors.invalid(name, value, f"{name} in body should match '{pattern}'"))
    if isinstance(value, list):
        if schema.get("maxItems") is not None and len(value) > schema["maxItems"]:
            errs.append(
                FieldError(
                    name,
                    "Too many",
                    f"must have at most {schema['maxItems']} items",
                    len(value),
                    True,
                )
            )
        if schema.get("minItems") is not None and len(value) < schema["minItems"]:
            errs.append(
                errors.invalid(
                    name,
                    len(value),
                    f"{name} in body should have at least {schema['minItems']} items",
                )
            )
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, v in enumerate(value):
                _validate(items, v, f"{path}[{i}]", errs, False)
    if isinstance(value, dict):
        props: Mapping[str, Any] = schema.get("properties") or {}
        for req in schema.get("required") or ():
            if req not in value:
                errs.append(errors.required(f"{path}.{req}" if path else req))
        extra = schema.get("additionalProperties")
        for k, v in value.items():
            if root and k in _ROOT_KEEP:
                continue
            p = f"{path}.{k}" if path else k
            if k in props:
                _validate(props[k], v, p, errs, False)
            elif isinstance(extra, Mapping):
                _validate(extra, v, p, errs, False)


_TYPES = ("object", "array", "string", "integer", "number", "boolean")
_SCHEMA_MAPS = ("properties",)
_NUMBERS = (
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "multipleOf",
)


def validate_schema(schema: Any, path: str, *, root: bool = True) -> list[FieldError]:
    """Checks a CRD's ``openAPIV3Schema`` is structural, as the v1 API requires."""
    errs: list[FieldError] = []
    if not isinstance(schema, Mapping):
        return [errors.invalid(path, schema, "must be an object")]
    t = schema.get("type")
    special = schema.get("x-kubernetes-int-or-string") or schema.get(
        "x-kubernetes-preserve-unknown-fields"
    )
    if t is None:
        if root:
            errs.append(errors.required(f"{path}.type", "must not be empty at the root"))
        elif not special:
            errs.append(
                errors.required(f"{path}.type", "must not be empty for specified object fields")
            )
    elif t not in _TYPES:
        errs.append(errors.not_supported(f"{path}.type", t, list(_TYPES)))
    elif root and t != "object":
        errs.append(errors.invalid(f"{path}.type", t, "must be object at the root"))
    props = schema.get("properties")
    if props is not None:
        if not isinstance(props, Mapping):
            errs.append(errors.invalid(f"{path}.properties", props, "must be an object"))
        else:
            for k, sub in props.items():
                errs.extend(validate_schema(sub, f"{path}.properties[{k}]", root=False))
    items = schema.get("items")
    if items is not None:
        errs.extend(validate_schema(items, f"{path}.items", root=False))
    elif t == "array":
        errs.append(errors.required(f"{path}.items", "must be specified"))
    extra = schema.get("additionalProperties")
    if extra is not None and not isinstance(extra, bool):
        errs.extend(validate_schema(extra, f"{path}.additionalProperties", root=False))
    required = schema.get("required")
    if required is not None and (
        not isinstance(required, list) or not all(isinstance(r, str) for r in required)
    ):
        errs.append(errors.invalid(f"{path}.required", required, "must be a list of strings"))
    enum = schema.get("enum")
    if enum is not None and not isinstance(enum, list):
        errs.append(errors.invalid(f"{path}.enum", enum, "must be a list"))
    for key in _NUMBERS:
        value = schema.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            errs.append(errors.invalid(f"{path}.{key}", value, "must be a number"))
    pattern = schema.get("pattern")
    if pattern is not None:
        try:
            re.compile(pattern)
        except (re.error, TypeError) as e:
            errs.append(
                errors.invalid(
                    f"{path}.pattern", pattern, f"must be a valid regular expression: {e}"
                )
            )
    for key in ("nullable", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string"):
        value = schema.get(key)
        if value is not None and not isinstance(value, bool):
            errs.append(errors.invalid(f"{path}.{key}", value, "must be a boolean"))
    return errs
