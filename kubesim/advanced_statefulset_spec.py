"""What Kruise's webhooks do to an Advanced StatefulSet (``statefulsets.apps.kruise.io``).

On a cluster with Kruise, a mutating webhook defaults the spec (``SetDefaultsStatefulSet``) and a
validating one refuses what the controller cannot run. kubesim serves the kind itself, so it does
both in its own admission path: defaults where built-in kinds get their version defaults,
validation where they are validated (a refusal is a 422 Invalid naming the fields, where Kruise's
webhook denial carries the same field errors). v1alpha1 and v1beta1 are one object here:
kubesim does not drop the fields v1alpha1 lacks (``scaleStrategy``, ``reserveOrdinals``, ...).
"""

from __future__ import annotations

import re
from typing import Any

from kubesim import errors, kinds
from kubesim.errors import FieldError
from kubesim.registry import ResourceType

JsonObject = dict[str, Any]

GROUP = "apps.kruise.io"
MAX_MIN_READY_SECONDS = 300
_RANGE = re.compile(r"^(\d+)-(\d+)$")
_PERCENT = re.compile(r"^[0-9]+%$")
# spec fields an update may change (Kruise's ValidateStatefulSetUpdate)
_MUTABLE = (
    "replicas",
    "ordinals",
    "template",
    "reserveOrdinals",
    "lifecycle",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "volumeClaimTemplates",
    "volumeClaimUpdateStrategy",
    "updateStrategy",
    "scaleStrategy",
)


def is_advanced_statefulset(rt: ResourceType) -> bool:
    """Whether ``rt`` is one of the Advanced StatefulSet's served versions."""
    return rt.group == GROUP and rt.plural == "statefulsets"


def default_advanced_statefulset(obj: JsonObject) -> None:
    """Kruise's defaults (feature gates at their defaults: PVC retention on, resize off)."""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = spec.setdefault("updateStrategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                rolling.setdefault("partition", 0)
                rolling.setdefault("maxUnavailable", 1)
                rolling.setdefault("podUpdatePolicy", "ReCreate")
                rolling.setdefault("minReadySeconds", 0)
    retention = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
    if isinstance(retention, dict):
        retention.setdefault("whenDeleted", "Retain")
        retention.setdefault("whenScaled", "Retain")
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        # Kruise's SetDefaultPodSpec pulls every container "Always" unless it says otherwise,
        # before the usual container defaults would pick IfNotPresent for a tagged image.
        for container in template["spec"].get("containers") or ():
            if isinstance(container, dict):
                container.setdefault("imagePullPolicy", "Always")
        kinds.default_pod_spec(template["spec"], for_pod=False)
        template.setdefault("metadata", {})


def validate_advanced_statefulset(obj: JsonObject, old: JsonObject | None) -> list[FieldError]:
    """Kruise's validating webhook: the spec on create and update, changed fields on update."""
    errs = kinds.validate_workload("StatefulSet", obj)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return errs
    shape_errors = _structure(spec)
    if shape_errors:
        return errs + shape_errors
    policy = spec.get("podManagementPolicy")
    if policy not in ("OrderedReady", "Parallel"):
        errs.append(
            errors.invalid(
                "spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"
            )
        )
    for i, entry in enumerate(spec.get("reserveOrdinals") or ()):
        if isinstance(entry, str):
            match = _RANGE.match(entry)
            if match is None or int(match.group(1)) > int(match.group(2)):
                errs.append(
                    errors.invalid(
                        "spec",
                        spec.get("reserveOrdinals"),
                        f"{i} th reserve ordinal is not a valid range: {entry}",
                    )
                )
        elif not isinstance(entry, int) or isinstance(entry, bool) or entry < 0:
            errs.append(
                errors.invalid(
                    "spec",
                    spec.get("reserveOrdinals"),
                    f"{i} th reserve ordinal is negative: {entry}",
                )
            )
    scale = spec.get("scaleStrategy") or {}
    if isinstance(scale, dict) and scale.get("maxUnavailable") is not None:
        errs.extend(
            _max_unavailable(scale["maxUnavailable"], policy, "spec.scaleStrategy.maxUnavailable")
        )
    errs.extend(_update_strategy(spec, policy))
    if ((spec.get("template") or {}).get("spec") or {}).get("activeDeadlineSeconds") is not None:
        errs.append(
            errors.forbidden_field(
                "spec.template.spec.activeDeadlineSeconds",
                "activeDeadlineSeconds in StatefulSet is not Supported",
            )
        )
    if old is not None:
        fixed = {k: v for k, v in spec.items() if k not in _MUTABLE}
        old_fixed = {k: v for k, v in (old.get("spec") or {}).items() if k not in _MUTABLE}
        if fixed != old_fixed:
            errs.append(
                errors.forbidden_field(
                    "spec",
                    "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                    "'template', 'reserveOrdinals', 'lifecycle', 'revisionHistoryLimit', "
                    "'persistentVolumeClaimRetentionPolicy', `volumeClaimTemplates`, "
                    "`VolumeClaimUpdateStrategy` and 'updateStrategy' are forbidden",
                )
            )
    return errs


# Fields Kruise's CRD schema types; a value of another type is refused before its webhook runs.
_TYPED: tuple[tuple[tuple[str, ...], type, str], ...] = (
    (("podManagementPolicy",), str, "string"),
    (("updateStrategy",), dict, "object"),
    (("updateStrategy", "rollingUpdate"), dict, "object"),
    (("scaleStrategy",), dict, "object"),
    (("reserveOrdinals",), list, "array"),
    (("persistentVolumeClaimRetentionPolicy",), dict, "object"),
)


def _structure(spec: JsonObject) -> list[FieldError]:
    """The schema's type errors, in its words, for the fields the webhook then reads."""
    errs: list[FieldError] = []
    for path, expected, word in _TYPED:
        value: Any = spec
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None and not isinstance(value, expected):
            name = "spec." + ".".join(path)
            found = _json_type(value)
            errs.append(
                errors.invalid(name, found, f'{name} in body must be of type {word}: "{found}"')
            )
    return errs


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _update_strategy(spec: JsonObject, policy: Any) -> list[FieldError]:
    strategy = spec.get("updateStrategy") or {}
    kind = strategy.get("type") if isinstance(strategy, dict) else None
    if kind == "OnDelete":
        return []
    if kind != "RollingUpdate":
        return [
            errors.invalid("spec.updateStrategy", strategy, "must be 'RollingUpdate' or 'OnDelete'")
        ]
    rolling = strategy.get("rollingUpdate")
    if not isinstance(rolling, dict):
        return []
    errs: list[FieldError] = []
    path = "spec.updateStrategy.rollingUpdate"
    for name in ("partition", "minReadySeconds"):
        value = rolling.get(name, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            errs.append(
                errors.invalid(f"{path}.{name}", value, "must be greater than or equal to 0")
            )
    ready = rolling.get("minReadySeconds", 0)
    if isinstance(ready, int) and ready > MAX_MIN_READY_SECONDS:
        errs.append(
            errors.invalid(f"{path}.minReadySeconds", ready, "must be no more than 300 seconds")
        )
    if rolling.get("maxUnavailable") is None:
        errs.append(errors.required(f"{path}.maxUnavailable"))
    else:
        errs.extend(_max_unavailable(rolling["maxUnavailable"], policy, f"{path}.maxUnavailable"))
    update_policy = rolling.get("podUpdatePolicy")
    if update_policy not in ("ReCreate", "InPlaceIfPossible", "InPlaceOnly"):
        errs.append(
            errors.invalid(
                f"{path}.podUpdatePolicy",
                update_policy,
                "must be 'ReCreate', InPlaceIfPossible or 'InPlaceOnly'",
            )
        )
    return errs


def _max_unavailable(value: Any, policy: Any, path: str) -> list[FieldError]:
    """A positive int or percentage, and other than 1 only with Parallel pod management."""
    errs: list[FieldError] = []
    if isinstance(value, str):
        if not _PERCENT.match(value):
            errs.append(
                errors.invalid(
                    path,
                    value,
                    "a valid percent string must be a numeric string followed by an ending '%' "
                    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                )
            )
        elif int(value[:-1]) == 0:
            errs.append(errors.invalid(path, value, "should not be less than 1"))
    elif not isinstance(value, int) or isinstance(value, bool):
        errs.append(errors.invalid(path, value, "must be an integer or percentage (e.g '5%')"))
    elif value < 0:
        errs.append(errors.invalid(path, value, "must be greater than or equal to 0"))
    elif value < 1:
        errs.append(errors.invalid(path, value, "should not be less than 1"))
    if policy != "Parallel" and value != 1:
        errs.append(
            errors.invalid(path, value, "can only work with Parallel PodManagementPolicyType")
        )
    return errs
