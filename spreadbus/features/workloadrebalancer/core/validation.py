"""WorkloadRebalancer validation, with field paths.

Karmada validates the kind only through its CRD schema: ``spec`` and ``spec.workloads``
required, at least one workload, each with ``apiVersion``, ``kind`` and ``name``, strings, and
``ttlSecondsAfterFinished`` an int32. spreadbus reports the same problems with the paths the API
server would name, and one more: a negative TTL, which Karmada accepts and treats as already
expired, is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubesemantics.field_errors import FieldError, Path, invalid, required

INT32_MAX: Final = 2**31 - 1
_JSON_TYPE: Final = {dict: "object", list: "array", str: "string", bool: "boolean",
                     int: "integer", float: "number"}


def _json_type(value: object) -> str:
    return "null" if value is None else _JSON_TYPE.get(type(value), type(value).__name__)


def _type_error(path: Path, value: object, want: str) -> FieldError:
    return invalid(path, f'must be of type {want}, not {_json_type(value)}')


def validate_workloadrebalancer(obj: Mapping[str, Any]) -> list[FieldError]:
    spec_path = Path("spec")
    spec = obj.get("spec")
    if spec is None:
        return [required(spec_path)]
    if not isinstance(spec, Mapping):
        return [_type_error(spec_path, spec, "object")]
    errors: list[FieldError] = []
    workloads_path = spec_path.child("workloads")
    workloads = spec.get("workloads")
    if workloads is None:
        errors.append(required(workloads_path))
    elif not isinstance(workloads, list):
        errors.append(_type_error(workloads_path, workloads, "array"))
    elif not workloads:
        errors.append(invalid(workloads_path, "must have at least 1 items"))
    else:
        for i, item in enumerate(workloads):
            errors.extend(_workload_errors(workloads_path.index(i), item))
    ttl_path = spec_path.child("ttlSecondsAfterFinished")
    ttl = spec.get("ttlSecondsAfterFinished")
    if ttl is not None:
        if not isinstance(ttl, int) or isinstance(ttl, bool):
            errors.append(_type_error(ttl_path, ttl, "integer"))
        elif ttl < 0:
            errors.append(invalid(ttl_path, "must be greater than or equal to 0"))
        elif ttl > INT32_MAX:
            errors.append(invalid(ttl_path, f"must be less than or equal to {INT32_MAX}"))
    return errors


def _workload_errors(path: Path, item: object) -> list[FieldError]:
    if not isinstance(item, Mapping):
        return [_type_error(path, item, "object")]
    errors: list[FieldError] = []
    for name in ("apiVersion", "kind", "name", "namespace"):
        value = item.get(name)
        if value is None or (value == "" and name != "namespace"):
            if name != "namespace":
                errors.append(required(path.child(name)))
        elif not isinstance(value, str):
            errors.append(_type_error(path.child(name), value, "string"))
    api_version = item.get("apiVersion")
    if isinstance(api_version, str) and api_version.count("/") > 1:
        errors.append(invalid(path.child("apiVersion"), "not a group/version"))
    return errors
