"""The HorizontalPodAutoscaler as the API serves it: defaults, validation, and its two versions.

Objects are stored as ``autoscaling/v2``; ``autoscaling/v1`` is served from the same objects by
converting on every read and write, as upstream's API server does through its internal type.
v1 knows one metric (``targetCPUUtilizationPercentage``, the first cpu Resource Utilization
metric, and ``status.currentCPUUtilizationPercentage``); everything else it cannot express
travels in upstream's round-trip annotations (``autoscaling.alpha.kubernetes.io/metrics``,
``.../current-metrics``, ``.../conditions``, ``.../behavior``), so a v1 read-modify-write keeps
the other metrics, the conditions and the behaviour. The metric lists in those annotations use
v1's own shapes (``targetAverageUtilization``, ``currentAverageValue``, ...), and the behaviour
annotation uses Go field names (``ScaleUp``, ``StabilizationWindowSeconds``), because upstream
marshals its internal type there.

Functions take JSON-shaped dicts and return new ones (defaults mutate the fresh copy given).
"""

from __future__ import annotations

import json
from typing import Any, TypeGuard

from kubesim import errors
from kubesim.errors import FieldError

JsonObject = dict[str, Any]

V1 = "autoscaling/v1"
V2 = "autoscaling/v2"

METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior"
_ROUND_TRIP = (
    METRICS_ANNOTATION,
    CURRENT_METRICS_ANNOTATION,
    CONDITIONS_ANNOTATION,
    BEHAVIOR_ANNOTATION,
)

DEFAULT_CPU_UTILIZATION = 80
MAX_STABILIZATION_WINDOW_SECONDS = 3600
MAX_PERIOD_SECONDS = 1800


# --- defaults ----------------------------------------------------------------------------------


def default_scale_up_rules() -> JsonObject:
    """Upstream's scale-up rules: the faster of +4 pods or +100% every 15 s, no stabilization."""
    return {
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15},
        ],
    }


def default_scale_down_rules() -> JsonObject:
    """Upstream's scale-down rules; the window stays unset, the controller's own applies."""
    return {
        "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
    }


def _fill_rules(rules: Any, defaults: JsonObject) -> JsonObject:
    if not isinstance(rules, dict):
        return defaults
    out = dict(rules)
    for key, value in defaults.items():
        if out.get(key) is None:
            out[key] = value
    return out


def default(obj: JsonObject) -> JsonObject:
    """autoscaling/v2 defaults: minReplicas 1, 80% cpu when no metric, behaviour completed.

    ``obj`` itself is changed (a fresh top-level copy); what it shares is replaced, not changed.
    """
    spec = obj.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        return obj
    spec = obj["spec"] = dict(spec)  # nested values may be shared with a stored object
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not spec.get("metrics"):
        spec["metrics"] = [_cpu_utilization_metric(DEFAULT_CPU_UTILIZATION)]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        spec["behavior"] = {
            **behavior,
            "scaleUp": _fill_rules(behavior.get("scaleUp"), default_scale_up_rules()),
            "scaleDown": _fill_rules(behavior.get("scaleDown"), default_scale_down_rules()),
        }
    return obj


def _cpu_utilization_metric(percent: Any) -> JsonObject:
    return {
        "type": "Resource",
        "resource": {
            "name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": percent},
        },
    }


# --- validation --------------------------------------------------------------------------------


def _int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def validate(obj: JsonObject) -> list[FieldError]:
    """The spec checks of upstream's ValidateHorizontalPodAutoscaler that clients meet."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [errors.required("spec")]
    errs: list[FieldError] = []
    minimum, maximum = spec.get("minReplicas"), spec.get("maxReplicas")
    if minimum is not None and (not _int(minimum) or minimum < 1):
        errs.append(
            errors.invalid("spec.minReplicas", minimum, "must be greater than or equal to 1")
        )
    if not _int(maximum) or maximum < 1:
        errs.append(errors.invalid("spec.maxReplicas", maximum, "must be greater than 0"))
    elif _int(minimum) and maximum < minimum:
        errs.append(
            errors.invalid(
                "spec.maxReplicas", maximum, "must be greater than or equal to `minReplicas`"
            )
        )
    ref = spec.get("scaleTargetRef")
    if not isinstance(ref, dict):
        errs.append(errors.required("spec.scaleTargetRef.kind"))
        errs.append(errors.required("spec.scaleTargetRef.name"))
    else:
        for field in ("kind", "name"):
            value = ref.get(field)
            if not value:
                errs.append(errors.required(f"spec.scaleTargetRef.{field}"))
            elif not isinstance(value, str) or "/" in value or "%" in value:
                errs.append(
                    errors.invalid(f"spec.scaleTargetRef.{field}", value, "may not contain '/'")
                )
    metrics = spec.get("metrics") or []
    if not isinstance(metrics, list):
        errs.append(errors.invalid("spec.metrics", metrics, "must be a list"))
        metrics = []
    for i, metric in enumerate(metrics):
        errs.extend(_validate_metric(metric, f"spec.metrics[{i}]"))
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        for direction in ("scaleUp", "scaleDown"):
            errs.extend(_validate_rules(behavior.get(direction), f"spec.behavior.{direction}"))
    return errs


_SOURCES = {
    "Resource": "resource",
    "ContainerResource": "containerResource",
    "Pods": "pods",
    "Object": "object",
    "External": "external",
}


def _validate_metric(metric: Any, path: str) -> list[FieldError]:
    if not isinstance(metric, dict):
        return [errors.invalid(path, metric, "must be an object")]
    kind = metric.get("type")
    if not kind:
        return [errors.required(f"{path}.type", "must specify a metric source type")]
    field = _SOURCES.get(str(kind))
    if field is None:
        return [errors.not_supported(f"{path}.type", kind, sorted(_SOURCES))]
    source = metric.get(field)
    if not isinstance(source, dict):
        return [
            errors.required(
                f"{path}.{field}", "must populate information for the given metric source"
            )
        ]
    others = [f for f in _SOURCES.values() if f != field and metric.get(f) is not None]
    if others:
        return [
            errors.forbidden_field(
                f"{path}.{others[0]}", "must populate the given metric source only"
            )
        ]
    errs: list[FieldError] = []
    target = source.get("target")
    target_path = f"{path}.{field}.target"
    if not isinstance(target, dict):
        return [errors.required(target_path)]
    target_type = target.get("type")
    if not target_type:
        errs.append(errors.required(f"{target_path}.type", "must specify a metric target type"))
    elif target_type not in ("Utilization", "Value", "AverageValue"):
        errs.append(
            errors.invalid(
                f"{target_path}.type",
                target_type,
                "must be either Utilization, Value, or AverageValue",
            )
        )
    utilization = target.get("averageUtilization")
    if utilization is not None and (not _int(utilization) or utilization < 1):
        errs.append(
            errors.invalid(
                f"{target_path}.averageUtilization", utilization, "must be greater than 0"
            )
        )
    if field in ("resource", "containerResource"):
        if not source.get("name"):
            errs.append(errors.required(f"{path}.{field}.name", "must specify a resource name"))
        if utilization is None and target.get("averageValue") is None:
            errs.append(
                errors.required(
                    f"{target_path}.averageUtilization",
                    "must set either a target raw value or a target utilization",
                )
            )
        if utilization is not None and target.get("averageValue") is not None:
            errs.append(
                errors.forbidden_field(
                    f"{target_path}.averageValue",
                    "may not set both a target raw value and a target utilization",
                )
            )
    return errs


def _validate_rules(rules: Any, path: str) -> list[FieldError]:
    if not isinstance(rules, dict):
        return []
    errs: list[FieldError] = []
    window = rules.get("stabilizationWindowSeconds")
    if window is not None:
        if not _int(window) or window < 0:
            errs.append(
                errors.invalid(
                    f"{path}.stabilizationWindowSeconds",
                    window,
                    "must be greater than or equal to zero",
                )
            )
        elif window > MAX_STABILIZATION_WINDOW_SECONDS:
            errs.append(
                errors.invalid(
                    f"{path}.stabilizationWindowSeconds",
                    window,
                    f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}",
                )
            )
    select = rules.get("selectPolicy")
    if select is not None and select not in ("Disabled", "Max", "Min"):
        errs.append(
            errors.not_supported(f"{path}.selectPolicy", select, ["Disabled", "Max", "Min"])
        )
    policies = rules.get("policies")
    if not policies:
        errs.append(errors.required(f"{path}.policies", "must specify at least one Policy"))
        return errs
    for i, policy in enumerate(policies if isinstance(policies, list) else []):
        p = f"{path}.policies[{i}]"
        if not isinstance(policy, dict):
            errs.append(errors.invalid(p, policy, "must be an object"))
            continue
        if policy.get("type") not in ("Percent", "Pods"):
            errs.append(errors.not_supported(f"{p}.type", policy.get("type"), ["Percent", "Pods"]))
        value, period = policy.get("value"), policy.get("periodSeconds")
        if not _int(value) or value <= 0:
            errs.append(errors.invalid(f"{p}.value", value, "must be greater than zero"))
        if not _int(period) or period <= 0:
            errs.append(errors.invalid(f"{p}.periodSeconds", period, "must be greater than zero"))
        elif period > MAX_PERIOD_SECONDS:
            errs.append(
                errors.invalid(
                    f"{p}.periodSeconds",
                    period,
                    f"must be less than or equal to {MAX_PERIOD_SECONDS}",
                )
            )
    return errs


# --- conversion ----------------------------------------------------------------------------------


def convert(obj: JsonObject, api_version: str) -> JsonObject:
    """``obj`` (in either version) as ``api_version``; the input is not modified."""
    source = obj.get("apiVersion") or V2
    if source == api_version:
        return obj
    if source == V1:
        obj = to_v2(obj)
    if api_version == V1:
        return to_v1(obj)
    return {**obj, "apiVersion": api_version}


def _is_cpu_utilization(metric: Any) -> bool:
    if not isinstance(metric, dict) or metric.get("type") != "Resource":
        return False
    resource = metric.get("resource") or {}
    return (
        resource.get("name") == "cpu"
        and (resource.get("target") or {}).get("averageUtilization") is not None
    )


def _without_round_trip(meta: JsonObject) -> JsonObject:
    out = dict(meta)
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in _ROUND_TRIP}
    if annotations:
        out["annotations"] = annotations
    else:
        out.pop("annotations", None)
    return out


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


def to_v1(obj: JsonObject) -> JsonObject:
    """A v2 object as autoscaling/v1 (round-trip annotations carry what v1 lacks)."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    meta = _without_round_trip(obj.get("metadata") or {})
    annotations: dict[str, str] = dict(meta.get("annotations") or {})
    metrics = [m for m in spec.get("metrics") or [] if isinstance(m, dict)]
    cpu = next((m for m in metrics if _is_cpu_utilization(m)), None)
    v1_spec: JsonObject = {}
    for key in ("scaleTargetRef", "minReplicas", "maxReplicas"):
        _put(v1_spec, key, spec.get(key))
    if cpu is not None:
        v1_spec["targetCPUUtilizationPercentage"] = cpu["resource"]["target"]["averageUtilization"]
    others = [_metric_spec_to_v1(m) for m in metrics if not _is_cpu_utilization(m)]
    if others:
        annotations[METRICS_ANNOTATION] = _json(others)
    current = [m for m in status.get("currentMetrics") or [] if isinstance(m, dict)]
    if current:
        annotations[CURRENT_METRICS_ANNOTATION] = _json([_metric_status_to_v1(m) for m in current])
    if isinstance(spec.get("behavior"), dict):
        annotations[BEHAVIOR_ANNOTATION] = _json(_go_behavior(spec["behavior"]))
    conditions = status.get("conditions") or []
    if conditions:
        annotations[CONDITIONS_ANNOTATION] = _json(conditions)
    if annotations:
        meta["annotations"] = annotations
    v1_status: JsonObject = {}
    for key in ("observedGeneration", "lastScaleTime"):
        _put(v1_status, key, status.get(key))
    v1_status["currentReplicas"] = int(status.get("currentReplicas") or 0)
    v1_status["desiredReplicas"] = int(status.get("desiredReplicas") or 0)
    for m in current:
        resource = m.get("resource") or {}
        if m.get("type") == "Resource" and resource.get("name") == "cpu":
            utilization = (resource.get("current") or {}).get("averageUtilization")
            if utilization is not None:
                v1_status["currentCPUUtilizationPercentage"] = utilization
    out = {k: v for k, v in obj.items() if k not in ("spec", "status", "metadata")}
    out.update(apiVersion=V1, kind="HorizontalPodAutoscaler", metadata=meta, spec=v1_spec)
    out["status"] = v1_status
    return out


def to_v2(obj: JsonObject) -> JsonObject:
    """A v1 object as autoscaling/v2, reading the round-trip annotations back."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    v2_spec: JsonObject = {}
    for key in ("scaleTargetRef", "minReplicas", "maxReplicas"):
        _put(v2_spec, key, spec.get(key))
    metrics: list[JsonObject] = []
    others = _annotation(annotations, METRICS_ANNOTATION)
    if isinstance(others, list):
        metrics.extend(_metric_spec_to_v2(m) for m in others if isinstance(m, dict))
    if spec.get("targetCPUUtilizationPercentage") is not None:
        metrics.append(_cpu_utilization_metric(spec["targetCPUUtilizationPercentage"]))
    if not metrics:
        metrics.append(_cpu_utilization_metric(DEFAULT_CPU_UTILIZATION))
    v2_spec["metrics"] = metrics
    behavior = _annotation(annotations, BEHAVIOR_ANNOTATION)
    if isinstance(behavior, dict) and any(behavior.values()):
        v2_spec["behavior"] = _json_behavior(behavior)
    v2_status: JsonObject = {}
    for key in ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas"):
        _put(v2_status, key, status.get(key))
    current = _annotation(annotations, CURRENT_METRICS_ANNOTATION)
    if isinstance(current, list):
        v2_status["currentMetrics"] = [
            _metric_status_to_v2(m) for m in current if isinstance(m, dict)
        ]
    elif status.get("currentCPUUtilizationPercentage") is not None:
        v2_status["currentMetrics"] = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "current": {"averageUtilization": status["currentCPUUtilizationPercentage"]},
                },
            }
        ]
    conditions = _annotation(annotations, CONDITIONS_ANNOTATION)
    if isinstance(conditions, list):
        v2_status["conditions"] = conditions
    v2_status.setdefault("desiredReplicas", 0)
    out = {k: v for k, v in obj.items() if k not in ("spec", "status", "metadata")}
    out.update(
        apiVersion=V2,
        kind="HorizontalPodAutoscaler",
        metadata=_without_round_trip(obj.get("metadata") or {}),
        spec=v2_spec,
        status=v2_status,
    )
    return out


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _annotation(annotations: JsonObject, key: str) -> Any:
    """A round-trip annotation's value; a malformed one is ignored, as upstream ignores it."""
    text = annotations.get(key)
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


# v1's metric shapes: each source's v2 target/current fields and their v1 names.
_TARGET_V1 = {
    "resource": {
        "averageUtilization": "targetAverageUtilization",
        "averageValue": "targetAverageValue",
    },
    "containerResource": {
        "averageUtilization": "targetAverageUtilization",
        "averageValue": "targetAverageValue",
    },
    "pods": {"averageValue": "targetAverageValue"},
    "object": {"value": "targetValue", "averageValue": "averageValue"},
    "external": {"value": "targetValue", "averageValue": "targetAverageValue"},
}
_CURRENT_V1 = {
    "resource": {
        "averageUtilization": "currentAverageUtilization",
        "averageValue": "currentAverageValue",
    },
    "containerResource": {
        "averageUtilization": "currentAverageUtilization",
        "averageValue": "currentAverageValue",
    },
    "pods": {"averageValue": "currentAverageValue"},
    "object": {"value": "currentValue", "averageValue": "averageValue"},
    "external": {"value": "currentValue", "averageValue": "currentAverageValue"},
}


def _identity_to_v1(field: str, source: JsonObject, out: JsonObject) -> None:
    """Name, container, metric identifier and described object in v1's flat form."""
    if field in ("resource", "containerResource"):
        _put(out, "name", source.get("name"))
        _put(out, "container", source.get("container"))
        return
    metric = source.get("metric") or {}
    _put(out, "metricName", metric.get("name"))
    _put(out, "metricSelector" if field == "external" else "selector", metric.get("selector"))
    if field == "object":
        _put(out, "target", source.get("describedObject"))


def _identity_to_v2(field: str, source: JsonObject, out: JsonObject) -> None:
    if field in ("resource", "containerResource"):
        _put(out, "name", source.get("name"))
        _put(out, "container", source.get("container"))
        return
    metric: JsonObject = {}
    _put(metric, "name", source.get("metricName"))
    _put(metric, "selector", source.get("metricSelector" if field == "external" else "selector"))
    out["metric"] = metric
    if field == "object":
        _put(out, "describedObject", source.get("target"))


def _metric_to_v1(metric: JsonObject, section: str, names: dict[str, dict[str, str]]
                  ) -> tuple[str, str, JsonObject] | JsonObject:
    """A v2 metric's identity and its ``section`` (target or current) flattened into v1 names;
    a metric of an unknown type, or without its source, is its type alone."""
    kind = str(metric.get("type") or "")
    field = _SOURCES.get(kind)
    if field is None or not isinstance(metric.get(field), dict):
        return {"type": kind}
    source = metric[field]
    out: JsonObject = {}
    _identity_to_v1(field, source, out)
    values = source.get(section) or {}
    for v2_name, v1_name in names[field].items():
        _put(out, v1_name, values.get(v2_name))
    return kind, field, out


def _metric_to_v2(metric: JsonObject, names: dict[str, dict[str, str]]
                  ) -> tuple[str, str, JsonObject, JsonObject] | JsonObject:
    """A v1 metric's identity, and its v1 values gathered under their v2 names."""
    kind = str(metric.get("type") or "")
    field = _SOURCES.get(kind)
    if field is None or not isinstance(metric.get(field), dict):
        return {"type": kind}
    source = metric[field]
    out: JsonObject = {}
    _identity_to_v2(field, source, out)
    values: JsonObject = {}
    for v2_name, v1_name in names[field].items():
        _put(values, v2_name, source.get(v1_name))
    return kind, field, out, values


def _metric_spec_to_v1(metric: JsonObject) -> JsonObject:
    parts = _metric_to_v1(metric, "target", _TARGET_V1)
    if isinstance(parts, dict):
        return parts
    kind, field, out = parts
    return {"type": kind, field: out}


def _metric_spec_to_v2(metric: JsonObject) -> JsonObject:
    parts = _metric_to_v2(metric, _TARGET_V1)
    if isinstance(parts, dict):
        return parts
    kind, field, out, target = parts
    if field in ("resource", "containerResource"):
        target["type"] = (
            "AverageValue" if target.get("averageUtilization") is None else "Utilization"
        )
    elif field == "pods":
        target["type"] = "AverageValue"
    elif field == "object":
        target["type"] = "Value" if target.get("averageValue") is None else "AverageValue"
    else:
        target["type"] = "AverageValue" if target.get("value") is None else "Value"
    out["target"] = target
    return {"type": kind, field: out}


def _metric_status_to_v1(metric: JsonObject) -> JsonObject:
    parts = _metric_to_v1(metric, "current", _CURRENT_V1)
    if isinstance(parts, dict):
        return parts
    kind, field, out = parts
    if field in ("resource", "containerResource"):
        out.setdefault("currentAverageValue", "0")
    return {"type": kind, field: out}


def _metric_status_to_v2(metric: JsonObject) -> JsonObject:
    parts = _metric_to_v2(metric, _CURRENT_V1)
    if isinstance(parts, dict):
        return parts
    kind, field, out, current = parts
    out["current"] = current
    return {"type": kind, field: out}


_GO_RULES = {
    "stabilizationWindowSeconds": "StabilizationWindowSeconds",
    "selectPolicy": "SelectPolicy",
    "policies": "Policies",
}
_GO_POLICY = {"type": "Type", "value": "Value", "periodSeconds": "PeriodSeconds"}


def _go_behavior(behavior: JsonObject) -> JsonObject:
    """The behaviour as upstream's internal type marshals it: Go field names, nil as null."""

    def rules(r: Any) -> JsonObject | None:
        if not isinstance(r, dict):
            return None
        out: JsonObject = {go: r.get(name) for name, go in _GO_RULES.items()}
        out["Policies"] = [
            {go: p.get(name) for name, go in _GO_POLICY.items()}
            for p in r.get("policies") or []
            if isinstance(p, dict)
        ] or None
        return out

    return {
        "ScaleUp": rules(behavior.get("scaleUp")),
        "ScaleDown": rules(behavior.get("scaleDown")),
    }


def _json_behavior(go: JsonObject) -> JsonObject:
    def rules(r: Any) -> JsonObject | None:
        if not isinstance(r, dict):
            return None
        out: JsonObject = {}
        for name, go_name in _GO_RULES.items():
            if name != "policies":
                _put(out, name, r.get(go_name))
        policies = r.get("Policies")
        if isinstance(policies, list):
            out["policies"] = [
                {name: p.get(go_name) for name, go_name in _GO_POLICY.items()}
                for p in policies
                if isinstance(p, dict)
            ]
        return out

    out: JsonObject = {}
    for name, go_name in (("scaleUp", "ScaleUp"), ("scaleDown", "ScaleDown")):
        converted = rules(go.get(go_name))
        if converted is not None:
            out[name] = converted
    return out


# --- printing ------------------------------------------------------------------------------------


def format_targets(specs: list[Any], statuses: list[Any]) -> str:
    """The TARGETS column: ``cpu: 50%/80%``, ``memory: 100Mi/200Mi``, two metrics at most."""
    if not specs:
        return "<none>"
    cells: list[str] = []
    for i, spec in enumerate(specs):
        spec = spec if isinstance(spec, dict) else {}
        kind = spec.get("type")
        field = _SOURCES.get(str(kind))
        status = statuses[i] if i < len(statuses) and isinstance(statuses[i], dict) else {}
        source = spec.get(field) if field else None
        if field is None or not isinstance(source, dict):
            cells.append("<unknown type>")
            continue
        target = source.get("target") or {}
        current_source = status.get(field)
        current = (current_source or {}).get("current") or {}
        shown = "<unknown>"
        if field in ("resource", "containerResource"):
            name = source.get("name", "")
            if target.get("averageValue") is not None:
                if current_source is not None:
                    shown = str(current.get("averageValue", "0"))
                cells.append(f"{name}: {shown}/{target['averageValue']}")
            else:
                if current.get("averageUtilization") is not None:
                    shown = f"{current['averageUtilization']}%"
                wanted = target.get("averageUtilization")
                cells.append(f"{name}: {shown}/{'<auto>' if wanted is None else f'{wanted}%'}")
        elif field == "pods":
            if current_source is not None:
                shown = str(current.get("averageValue", "0"))
            cells.append(f"{shown}/{target.get('averageValue', '0')}")
        elif target.get("averageValue") is not None:
            if current.get("averageValue") is not None:
                shown = str(current["averageValue"])
            cells.append(f"{shown}/{target['averageValue']} (avg)")
        else:
            if current_source is not None:
                shown = str(current.get("value", "0"))
            cells.append(f"{shown}/{target.get('value', '0')}")
    if len(cells) > 2:
        return f"{', '.join(cells[:2])} + {len(cells) - 2} more..."
    return ", ".join(cells)
