"""Validation of a workload's pod template and of a StatefulSet spec, with Kubernetes' messages.

A re-statement of the parts of ``ValidatePodTemplateSpecForReplicaSet``,
``ValidatePodTemplateSpecForStatefulSet`` and ``ValidateStatefulSetSpec`` (apps/validation,
Kubernetes 1.32) that a template author can get wrong: labels that the selector does not match,
label keys and values, the restart policy and ``activeDeadlineSeconds`` a workload forbids, the
pod-management and update-strategy enums, non-negative counts; and, of ``ValidatePodSpec``, the
containers (present, named as DNS labels, unique across init and regular containers, with an
image, a known pull policy, ports in range) and the pod-level enums. It is narrower than the
API server's full pod validation (volumes, resources, probes and security contexts are not
checked); what it reports, it reports at the API server's path with its message.

The templates are expected to carry the pod defaults already (the callers validate what a
defaulting webhook produced), but an unset ``restartPolicy`` is read as the default it gets,
not as an error. The input is decoded JSON of any shape: nothing here raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesemantics import label_selector
from kubesemantics.field_errors import (
    FieldError,
    Path,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)
from kubesemantics.intstr import is_int
from kubesemantics.lenient_json import as_map
from kubesemantics.qualified_names import is_dns1123_label, is_qualified_name, is_valid_label_value
from kubesemantics.scheduling_validation import type_error

SELECTOR_MISMATCH = "`selector` does not match template `labels`"
NONNEGATIVE = "must be greater than or equal to 0"
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_RETENTION = ("Retain", "Delete")


def nonnegative(value: object, path: Path) -> list[FieldError]:
    """``ValidateNonnegativeField``; an unset value is fine, a non-integer a type error."""
    if value is None:
        return []
    if not is_int(value):
        return [type_error(path, "integer", value)]
    assert isinstance(value, int)
    return [invalid(path, NONNEGATIVE)] if value < 0 else []


def validate_labels(labels: object, path: Path) -> list[FieldError]:
    """``ValidateLabels``: qualified keys and valid values, reported at the map's path."""
    if labels is None:
        return []
    if not isinstance(labels, Mapping):
        return [type_error(path, "object", labels)]
    errors: list[FieldError] = []
    for key, value in labels.items():
        errors.extend(invalid(path, message) for message in is_qualified_name(str(key)))
        if not isinstance(value, str):
            errors.append(type_error(path.child(str(key)), "string", value))
        else:
            errors.extend(invalid(path, message) for message in is_valid_label_value(value))
    return errors


def selects(selector: Mapping[str, Any] | None, labels: object) -> bool:
    """Whether a structured selector selects ``labels`` (``None`` selects nothing, a selector
    that does not compile selects nothing either: it was reported where it stands)."""
    if not isinstance(labels, Mapping) and labels is not None:
        return False
    plain = {str(k): v for k, v in (labels or {}).items() if isinstance(v, str)}
    try:
        return label_selector.matches(selector, plain)
    except (label_selector.SelectorError, AttributeError, TypeError):
        return False


def _selector_is_empty(selector: Mapping[str, Any] | None) -> bool:
    if selector is None:
        return False
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


def _containers(items: object, path: Path, names: set[str]) -> list[FieldError]:
    if items is None:
        return []
    if not isinstance(items, list):
        return [type_error(path, "array", items)]
    errors: list[FieldError] = []
    for i, container in enumerate(items):
        cp = path.index(i)
        if not isinstance(container, Mapping):
            errors.append(type_error(cp, "object", container))
            continue
        name = container.get("name")
        if name is None or name == "":
            errors.append(required(cp.child("name"), ""))
        elif not isinstance(name, str):
            errors.append(type_error(cp.child("name"), "string", name))
        else:
            errors.extend(invalid(cp.child("name"), m) for m in is_dns1123_label(name))
            if name in names:
                errors.append(duplicate(cp.child("name")))
            names.add(name)
        image = container.get("image")
        if image is not None and not isinstance(image, str):
            errors.append(type_error(cp.child("image"), "string", image))
        elif not image or not image.strip():
            errors.append(required(cp.child("image"), ""))
        policy = container.get("imagePullPolicy")
        if policy not in (None, "") and policy not in _PULL_POLICIES:
            errors.append(not_supported(cp.child("imagePullPolicy"), _PULL_POLICIES))
        ports = container.get("ports")
        if ports is not None and not isinstance(ports, list):
            errors.append(type_error(cp.child("ports"), "array", ports))
            continue
        for j, port in enumerate(ports or []):
            pp = cp.child("ports").index(j)
            if not isinstance(port, Mapping):
                errors.append(type_error(pp, "object", port))
                continue
            number = port.get("containerPort")
            if number is None or number == 0:
                errors.append(required(pp.child("containerPort"), ""))
            elif not isinstance(number, int) or isinstance(number, bool):
                errors.append(type_error(pp.child("containerPort"), "integer", number))
            elif not 1 <= number <= 65535:
                errors.append(invalid(pp.child("containerPort"),
                                      "must be between 1 and 65535, inclusive"))
            protocol = port.get("protocol")
            if protocol not in (None, "") and protocol not in _PROTOCOLS:
                errors.append(not_supported(pp.child("protocol"), _PROTOCOLS))
    return errors


def validate_pod_spec(spec: object, path: Path) -> list[FieldError]:
    """The container and pod-level checks of ``ValidatePodSpec`` listed in the module doc."""
    if spec is None:
        return [required(path.child("containers"), "")]
    if not isinstance(spec, Mapping):
        return [type_error(path, "object", spec)]
    errors: list[FieldError] = []
    names: set[str] = set()
    containers = spec.get("containers")
    if containers is None or containers == []:
        errors.append(required(path.child("containers"), ""))
    errors.extend(_containers(spec.get("initContainers"), path.child("initContainers"), names))
    errors.extend(_containers(containers, path.child("containers"), names))
    restart = spec.get("restartPolicy")
    if restart not in (None, "") and restart not in _RESTART_POLICIES:
        errors.append(not_supported(path.child("restartPolicy"), _RESTART_POLICIES))
    dns = spec.get("dnsPolicy")
    if dns not in (None, "") and dns not in _DNS_POLICIES:
        errors.append(not_supported(path.child("dnsPolicy"), _DNS_POLICIES))
    errors.extend(nonnegative(spec.get("terminationGracePeriodSeconds"),
                              path.child("terminationGracePeriodSeconds")))
    return errors


def _workload_pod_rules(spec: Mapping[str, Any], path: Path, kind: str) -> list[FieldError]:
    """Restart policy ``Always`` and no ``activeDeadlineSeconds``, as every workload requires."""
    errors: list[FieldError] = []
    restart = spec.get("restartPolicy")
    if restart not in (None, "", "Always") and restart in _RESTART_POLICIES:
        errors.append(not_supported(path.child("restartPolicy"), ("Always",)))
    if spec.get("activeDeadlineSeconds") is not None:
        errors.append(forbidden(path.child("activeDeadlineSeconds"),
                                f"activeDeadlineSeconds in {kind} is not Supported"))
    return errors


def _not_a_template(template: object, path: Path) -> list[FieldError]:
    return [required(path, "")] if template is None else [type_error(path, "object", template)]


def _selected(labels: object, selector: Mapping[str, Any] | None,
              path: Path) -> list[FieldError]:
    """A template's labels must match its workload's selector (unless that selects nothing)."""
    if not _selector_is_empty(selector) and not selects(selector, labels):
        return [invalid(path.child("metadata", "labels"), SELECTOR_MISMATCH)]
    return []


def validate_template_for_replicaset(
    template: object, selector: Mapping[str, Any] | None, path: Path
) -> list[FieldError]:
    """``ValidatePodTemplateSpecForReplicaSet`` (what a Deployment's template must satisfy)."""
    if not isinstance(template, Mapping):
        return _not_a_template(template, path)
    labels = as_map(template.get("metadata")).get("labels")
    errors = _selected(labels, selector, path)
    errors.extend(validate_labels(labels, path.child("metadata", "labels")))
    spec = template.get("spec")
    errors.extend(validate_pod_spec(spec, path.child("spec")))
    if isinstance(spec, Mapping):
        errors.extend(_workload_pod_rules(spec, path.child("spec"), "ReplicaSet"))
    return errors


def validate_template_for_statefulset(
    template: object, selector: Mapping[str, Any] | None, path: Path
) -> list[FieldError]:
    """``ValidatePodTemplateSpecForStatefulSet``, plus the pod-spec checks of this module
    (which Kubernetes leaves to the pods' own creation)."""
    if not isinstance(template, Mapping):
        return _not_a_template(template, path)
    labels = as_map(template.get("metadata")).get("labels")
    errors = _selected(labels, selector, path)
    # Kubernetes reports a template's bad labels under ``<template>.labels`` here.
    errors.extend(validate_labels(labels, path.child("labels")))
    errors.extend(validate_pod_spec(template.get("spec"), path.child("spec")))
    return errors


def _strategy(strategy: object, path: Path) -> list[FieldError]:
    if strategy is None:
        return []
    if not isinstance(strategy, Mapping):
        return [type_error(path, "object", strategy)]
    type_ = strategy.get("type") or "RollingUpdate"
    rolling = strategy.get("rollingUpdate")
    if type_ == "OnDelete":
        if rolling is not None:
            return [invalid(path.child("rollingUpdate"),
                            "only allowed for updateStrategy 'RollingUpdate'")]
        return []
    if type_ != "RollingUpdate":
        return [invalid(path, "must be 'RollingUpdate' or 'OnDelete'")]
    if rolling is None:
        return []
    if not isinstance(rolling, Mapping):
        return [type_error(path.child("rollingUpdate"), "object", rolling)]
    return nonnegative(rolling.get("partition"), path.child("rollingUpdate", "partition"))


def validate_statefulset_spec(
    spec: object, selector: Mapping[str, Any] | None, path: Path
) -> list[FieldError]:
    """``ValidateStatefulSetSpec`` of a template's spec, read with ``selector`` as its selector
    (a UnitedDeployment gives its subsets its own) and unset enums at their defaults."""
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        return [type_error(path, "object", spec)]
    errors: list[FieldError] = []
    policy = spec.get("podManagementPolicy") or "OrderedReady"
    if policy not in ("OrderedReady", "Parallel"):
        errors.append(invalid(path.child("podManagementPolicy"),
                              "must be 'OrderedReady' or 'Parallel'"))
    errors.extend(_strategy(spec.get("updateStrategy"), path.child("updateStrategy")))
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    if retention is not None:
        if not isinstance(retention, Mapping):
            errors.append(type_error(path.child("persistentVolumeClaimRetentionPolicy"),
                                     "object", retention))
        else:
            for name in ("whenDeleted", "whenScaled"):
                value = retention.get(name)
                if value not in (None, "") and value not in _RETENTION:
                    errors.append(not_supported(
                        path.child("persistentVolumeClaimRetentionPolicy", name), _RETENTION))
    errors.extend(nonnegative(spec.get("minReadySeconds"), path.child("minReadySeconds")))
    ordinals = spec.get("ordinals")
    if isinstance(ordinals, Mapping):
        errors.extend(nonnegative(ordinals.get("start"), path.child("ordinals", "start")))
    template = spec.get("template")
    errors.extend(validate_template_for_statefulset(template, selector, path.child("template")))
    pod_spec = as_map(template.get("spec")) if isinstance(template, Mapping) else {}
    errors.extend(_workload_pod_rules(pod_spec, path.child("template", "spec"), "StatefulSet"))
    return errors
