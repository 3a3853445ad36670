"""Validation of Karmada's propagation kinds, with field paths; never raises.

What Karmada's CRD schemas refuse (required fields, types, enums) and what its validating
webhooks refuse (``pkg/util/validation/validation.go``: ``clusterAffinity`` beside
``clusterAffinities``; overflow affinities only with dynamic weights or Aggregated, only beside
an inline affinity, with unique names; affinity names that are label keys and unique; field
selectors on provider, region or zone with In or NotIn; spread constraints by field or label,
not both, groups not negative, ``maxGroups`` not below ``minGroups``, one per field and a
cluster one whenever a field is used; no ``Gt``/``Lt`` cluster tolerations; application
failover needing ``propagateDeps``, its grace period only when purged gracefully; a
PropagationPolicy selecting only its own namespace; named selectors under ``preemption:
Always``). Bindings and Clusters are checked for what the scheduler reads of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubesemantics.field_errors import FieldError, Path, invalid, not_supported, required
from kubesemantics.label_selector import label_key_errors, validate_label_selector
from kubesemantics.lenient_json import as_map, as_str
from kubesemantics.quantity import QuantityError, parse_quantity
from kubesemantics.timestamps import parse_time
from spreadbus.features.propagation.core.policy import defaulted_spec

_JSON_TYPE: Final = {dict: "object", list: "array", str: "string", bool: "boolean",
                     int: "integer", float: "number"}
_SCHEDULING_TYPES: Final = ("Duplicated", "Divided")
_PREFERENCES: Final = ("Aggregated", "Weighted")
_SPREAD_FIELDS: Final = ("cluster", "region", "zone", "provider")
_PURGE_APPLICATION: Final = ("Directly", "Gracefully", "Never")
_PURGE_CLUSTER: Final = ("Directly", "Gracefully")
_TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_SYNC_MODES: Final = ("Push", "Pull")


def _json_type(value: object) -> str:
    return "null" if value is None else _JSON_TYPE.get(type(value), type(value).__name__)


def _type(path: Path, value: object, want: str) -> FieldError:
    return invalid(path, f"must be of type {want}, not {_json_type(value)}")


def _object(path: Path, value: object, errors: list[FieldError]) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        errors.append(_type(path, value, "object"))
        return None
    return value


def _list(path: Path, value: object, errors: list[FieldError]) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append(_type(path, value, "array"))
        return []
    return value


def _string(path: Path, value: object, errors: list[FieldError], *,
            need: bool = False) -> str:
    if value is None or value == "":
        if need:
            errors.append(required(path))
        return ""
    if not isinstance(value, str):
        errors.append(_type(path, value, "string"))
        return ""
    return value


def _integer(path: Path, value: object, errors: list[FieldError]) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        errors.append(_type(path, value, "integer"))
        return None
    return value


def _count(path: Path, value: object, errors: list[FieldError]) -> int | None:
    """An integer that may not be negative (replicas, seconds)."""
    number = _integer(path, value, errors)
    if number is not None and number < 0:
        errors.append(invalid(path, "must be greater than or equal to 0", number))
    return number


def _time(path: Path, value: object, errors: list[FieldError]) -> None:
    if value is not None and parse_time(value) is None:
        errors.append(invalid(path, "not an RFC 3339 time", value))


def _spec(obj: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, list[FieldError]]:
    """The object's ``spec``, or the one error that stops its validation."""
    spec = obj.get("spec")
    if spec is None:
        return None, [required(Path("spec"))]
    if not isinstance(spec, Mapping):
        return None, [_type(Path("spec"), spec, "object")]
    return spec, []


def _enum(path: Path, value: object, allowed: tuple[str, ...], errors: list[FieldError]) -> str:
    text = _string(path, value, errors)
    if text and text not in allowed:
        errors.append(not_supported(path, allowed))
    return text


def _affinity(path: Path, value: object, errors: list[FieldError]) -> bool:
    """One ClusterAffinity; whether it is non-empty."""
    affinity = _object(path, value, errors)
    if affinity is None:
        return False
    selector = affinity.get("labelSelector")
    if selector is not None:
        for field, detail in validate_label_selector(selector, str(path.child("labelSelector"))):
            errors.append(invalid(Path(field), detail))
    fields = _object(path.child("fieldSelector"), affinity.get("fieldSelector"), errors)
    if fields is not None:
        expressions_path = path.child("fieldSelector", "matchExpressions")
        expressions = _list(expressions_path, fields.get("matchExpressions"), errors)
        for i, expression in enumerate(expressions):
            expression_map = as_map(expression)
            key = as_str(expression_map.get("key"))
            operator = as_str(expression_map.get("operator"))
            if key not in ("provider", "region", "zone"):
                errors.append(invalid(path.child("fieldSelector"),
                                      f'unsupported key "{key}", must be provider, region, '
                                      "or zone"))
            elif operator not in ("In", "NotIn"):
                errors.append(invalid(path.child("fieldSelector"),
                                      f'unsupported operator "{operator}", must be In or NotIn'))
            del i
    for name in ("clusterNames", "exclude"):
        for i, item in enumerate(_list(path.child(name), affinity.get(name), errors)):
            if not isinstance(item, str):
                errors.append(_type(path.child(name).index(i), item, "string"))
    return any(affinity.get(k) for k in ("labelSelector", "fieldSelector", "clusterNames",
                                         "exclude"))


def _placement(path: Path, value: object, errors: list[FieldError]) -> None:
    placement = _object(path, value, errors)
    if placement is None:
        return
    if placement.get("clusterAffinity") is not None and placement.get(
            "clusterAffinities") is not None:
        errors.append(invalid(path, "clusterAffinities cannot co-exist with clusterAffinity"))
    scheduling = _object(path.child("replicaScheduling"), placement.get("replicaScheduling"),
                         errors)
    dynamic = False
    if scheduling is not None:
        s_path = path.child("replicaScheduling")
        kind = _enum(s_path.child("replicaSchedulingType"),
                     scheduling.get("replicaSchedulingType"), _SCHEDULING_TYPES, errors)
        preference = _enum(s_path.child("replicaDivisionPreference"),
                           scheduling.get("replicaDivisionPreference"), _PREFERENCES, errors)
        weights = _object(s_path.child("weightPreference"), scheduling.get("weightPreference"),
                          errors)
        dynamic_weight = ""
        if weights is not None:
            w_path = s_path.child("weightPreference")
            dynamic_weight = _enum(w_path.child("dynamicWeight"), weights.get("dynamicWeight"),
                                   ("AvailableReplicas",), errors)
            rules = _list(w_path.child("staticWeightList"), weights.get("staticWeightList"),
                          errors)
            for i, rule in enumerate(rules):
                r_path = w_path.child("staticWeightList").index(i)
                rule_map = _object(r_path, rule, errors)
                if rule_map is None:
                    continue
                if rule_map.get("targetCluster") is None:
                    errors.append(required(r_path.child("targetCluster")))
                _affinity(r_path.child("targetCluster"), rule_map.get("targetCluster"), errors)
                weight = rule_map.get("weight")
                if weight is None:
                    errors.append(required(r_path.child("weight")))
                else:
                    number = _integer(r_path.child("weight"), weight, errors)
                    if number is not None and number < 1:
                        errors.append(invalid(r_path.child("weight"),
                                              "must be greater than or equal to 1"))
        dynamic = (kind or "Divided") == "Divided" and (
            preference == "Aggregated" or (preference == "Weighted" and bool(dynamic_weight)))
    single = placement.get("clusterAffinity")
    if single is not None:
        _affinity(path.child("clusterAffinity"), single, errors)
    terms_path = path.child("clusterAffinities")
    names: set[str] = set()
    for i, term in enumerate(_list(terms_path, placement.get("clusterAffinities"), errors)):
        t_path = terms_path.index(i)
        term_map = _object(t_path, term, errors)
        if term_map is None:
            continue
        name = _string(t_path.child("affinityName"), term_map.get("affinityName"), errors,
                       need=True)
        for detail in label_key_errors(name) if name else ():
            errors.append(invalid(t_path, detail, name))
        if name in names:
            errors.append(invalid(terms_path, "each affinity term in a policy must have a "
                                              "unique name"))
        names.add(name)
        inline = _affinity(t_path, term_map, errors)
        overflow = term_map.get("overflowAffinities")
        if overflow is None:
            continue
        o_path = t_path.child("overflowAffinities")
        if not dynamic:
            errors.append(invalid(o_path, "overflowAffinities can only be used together with "
                                          "dynamic weight or aggregated scheduling"))
        if not inline:
            errors.append(invalid(o_path, "overflowAffinities can only be used together with "
                                          "the inline ClusterAffinity"))
        seen = {name}
        for j, item in enumerate(_list(o_path, overflow, errors)):
            item_map = as_map(item)
            n_path = o_path.index(j).child("affinityName")
            other = _string(n_path, item_map.get("affinityName"), errors, need=True)
            for detail in label_key_errors(other) if other else ():
                errors.append(invalid(n_path, detail, other))
            if other in seen:
                errors.append(invalid(n_path, "overflow affinity name must be unique and must "
                                              "not duplicate the primary group's affinityName"))
            seen.add(other)
            _affinity(o_path.index(j), item, errors)
    _spread(path.child("spreadConstraints"), placement.get("spreadConstraints"), errors)
    tolerations_path = path.child("clusterTolerations")
    for i, toleration in enumerate(_list(tolerations_path, placement.get("clusterTolerations"),
                                         errors)):
        operator = as_str(as_map(toleration).get("operator"))
        if operator in ("Gt", "Lt"):
            errors.append(not_supported(tolerations_path.index(i).child("operator"),
                                        ("", "Exists", "Equal")))


def _spread(path: Path, value: object, errors: list[FieldError]) -> None:
    fields: list[str] = []
    for i, constraint in enumerate(_list(path, value, errors)):
        c_path = path.index(i)
        constraint_map = _object(c_path, constraint, errors)
        if constraint_map is None:
            continue
        field = _enum(c_path.child("spreadByField"), constraint_map.get("spreadByField"),
                      _SPREAD_FIELDS, errors)
        label = _string(c_path.child("spreadByLabel"), constraint_map.get("spreadByLabel"),
                        errors)
        if field and label:
            errors.append(invalid(c_path, "spreadByLabel should not co-exist with spreadByField"))
        low = _integer(c_path.child("minGroups"), constraint_map.get("minGroups"), errors) or 0
        high = _integer(c_path.child("maxGroups"), constraint_map.get("maxGroups"), errors) or 0
        if low < 0:
            errors.append(invalid(c_path, "minGroups lower than 0 is not allowed"))
        if high < 0:
            errors.append(invalid(c_path, "maxGroups lower than 0 is not allowed"))
        if high > 0 and high < low:
            errors.append(invalid(c_path, "maxGroups lower than minGroups is not allowed"))
        if field:
            if field in fields:
                errors.append(invalid(path, f"multiple {field} spread constraints are not "
                                            "allowed"))
            fields.append(field)
    if fields and "cluster" not in fields:
        errors.append(invalid(path, "the cluster spread constraint must be enabled in one of the "
                                    "constraints in case of SpreadByField is enabled"))


def _failover(path: Path, value: object, propagate_deps: bool,
              errors: list[FieldError]) -> None:
    failover = _object(path, value, errors)
    if failover is None:
        return
    application = _object(path.child("application"), failover.get("application"), errors)
    if application is not None:
        a_path = path.child("application")
        if not propagate_deps:
            errors.append(invalid(Path("spec").child("propagateDeps"),
                                  "application failover is set, propagateDeps must be true",
                                  False))
        mode = _enum(a_path.child("purgeMode"), application.get("purgeMode"),
                     _PURGE_APPLICATION, errors) or "Gracefully"
        conditions = _object(a_path.child("decisionConditions"),
                             application.get("decisionConditions"), errors)
        _count(a_path.child("decisionConditions", "tolerationSeconds"),
               (conditions or {}).get("tolerationSeconds"), errors)
        grace = _integer(a_path.child("gracePeriodSeconds"),
                         application.get("gracePeriodSeconds"), errors)
        if mode != "Gracefully" and grace is not None:
            errors.append(invalid(a_path.child("gracePeriodSeconds"),
                                  "only takes effect when purgeMode is gracefully", grace))
        if grace is not None and grace <= 0:
            errors.append(invalid(a_path.child("gracePeriodSeconds"), "must be greater than 0",
                                  grace))
    cluster = _object(path.child("cluster"), failover.get("cluster"), errors)
    if cluster is not None:
        _enum(path.child("cluster", "purgeMode"), cluster.get("purgeMode"), _PURGE_CLUSTER,
              errors)


def validate_policy(obj: Mapping[str, Any]) -> list[FieldError]:
    """A PropagationPolicy or ClusterPropagationPolicy, as it is after Karmada's defaulting."""
    raw, errors = _spec(obj)
    if raw is None:
        return errors
    spec_path = Path("spec")
    namespaced = as_str(obj.get("kind")) == "PropagationPolicy"
    namespace = (as_str(as_map(obj.get("metadata")).get("namespace")) or "default"
                 if namespaced else "")
    spec = defaulted_spec(raw, namespace)
    selectors_path = spec_path.child("resourceSelectors")
    selectors = spec.get("resourceSelectors")
    if selectors is None:
        errors.append(required(selectors_path))
    for i, selector in enumerate(_list(selectors_path, selectors, errors)):
        s_path = selectors_path.index(i)
        selector_map = _object(s_path, selector, errors)
        if selector_map is None:
            continue
        _string(s_path.child("apiVersion"), selector_map.get("apiVersion"), errors, need=True)
        _string(s_path.child("kind"), selector_map.get("kind"), errors, need=True)
        name = _string(s_path.child("name"), selector_map.get("name"), errors)
        selector_namespace = _string(s_path.child("namespace"), selector_map.get("namespace"),
                                     errors)
        if namespaced and selector_namespace != namespace:
            errors.append(invalid(s_path.child("namespace"), "namespace of resource selector "
                                  "must be the same as the namespace of the policy",
                                  selector_namespace))
        label_selector = selector_map.get("labelSelector")
        if label_selector is not None:
            for field, detail in validate_label_selector(label_selector,
                                                         str(s_path.child("labelSelector"))):
                errors.append(invalid(Path(field), detail))
        if spec.get("preemption") == "Always" and not name:
            errors.append(invalid(s_path.child("name"), "name cannot be empty if preemption is "
                                  "Always, the empty name may cause unexpected resources "
                                  "preemption", name))
    priority = _integer(spec_path.child("priority"), spec.get("priority"), errors)
    if priority is not None and not -2**31 <= priority < 2**31:
        errors.append(invalid(spec_path.child("priority"), "must be an int32", priority))
    _enum(spec_path.child("preemption"), spec.get("preemption"), ("Always", "Never"), errors)
    deps = spec.get("propagateDeps")
    if deps is not None and not isinstance(deps, bool):
        errors.append(_type(spec_path.child("propagateDeps"), deps, "boolean"))
    _placement(spec_path.child("placement"), spec.get("placement"), errors)
    _failover(spec_path.child("failover"), spec.get("failover"), deps is True, errors)
    return errors


def validate_binding(obj: Mapping[str, Any]) -> list[FieldError]:
    """A ResourceBinding or ClusterResourceBinding: what the scheduler reads of it."""
    spec, errors = _spec(obj)
    if spec is None:
        return errors
    spec_path = Path("spec")
    resource = spec.get("resource")
    if resource is None:
        errors.append(required(spec_path.child("resource")))
    else:
        resource_map = _object(spec_path.child("resource"), resource, errors)
        for name in ("apiVersion", "kind", "name"):
            _string(spec_path.child("resource", name), (resource_map or {}).get(name), errors,
                    need=resource_map is not None)
    _count(spec_path.child("replicas"), spec.get("replicas"), errors)
    clusters_path = spec_path.child("clusters")
    for i, target in enumerate(_list(clusters_path, spec.get("clusters"), errors)):
        t_path = clusters_path.index(i)
        target_map = _object(t_path, target, errors)
        if target_map is None:
            continue
        _string(t_path.child("name"), target_map.get("name"), errors, need=True)
        _count(t_path.child("replicas"), target_map.get("replicas"), errors)
    _time(spec_path.child("rescheduleTriggeredAt"), spec.get("rescheduleTriggeredAt"), errors)
    tasks_path = spec_path.child("gracefulEvictionTasks")
    for i, task in enumerate(_list(tasks_path, spec.get("gracefulEvictionTasks"), errors)):
        t_path = tasks_path.index(i)
        task_map = _object(t_path, task, errors)
        if task_map is None:
            continue
        for name in ("fromCluster", "reason", "producer"):
            _string(t_path.child(name), task_map.get(name), errors, need=True)
        _enum(t_path.child("purgeMode"), task_map.get("purgeMode"), _PURGE_APPLICATION, errors)
    if spec.get("placement") is not None:
        _placement(spec_path.child("placement"), spec.get("placement"), errors)
    status = _object(Path("status"), obj.get("status"), errors) or {}
    _time(Path("status").child("lastScheduledTime"), status.get("lastScheduledTime"), errors)
    return errors


def validate_cluster(obj: Mapping[str, Any]) -> list[FieldError]:
    """A Karmada Cluster: the fields the scheduler reads, and the required ``syncMode``."""
    spec, errors = _spec(obj)
    if spec is None:
        return errors
    spec_path = Path("spec")
    if spec.get("syncMode") is None:
        errors.append(required(spec_path.child("syncMode")))
    else:
        _enum(spec_path.child("syncMode"), spec.get("syncMode"), _SYNC_MODES, errors)
    for name in ("provider", "region", "zone"):
        _string(spec_path.child(name), spec.get(name), errors)
    for i, zone in enumerate(_list(spec_path.child("zones"), spec.get("zones"), errors)):
        if not isinstance(zone, str):
            errors.append(_type(spec_path.child("zones").index(i), zone, "string"))
    for i, taint in enumerate(_list(spec_path.child("taints"), spec.get("taints"), errors)):
        t_path = spec_path.child("taints").index(i)
        taint_map = _object(t_path, taint, errors)
        if taint_map is None:
            continue
        _string(t_path.child("key"), taint_map.get("key"), errors, need=True)
        if taint_map.get("effect") is None:
            errors.append(required(t_path.child("effect")))
        else:
            _enum(t_path.child("effect"), taint_map.get("effect"), _TAINT_EFFECTS, errors)
        _time(t_path.child("timeAdded"), taint_map.get("timeAdded"), errors)
    status = _object(Path("status"), obj.get("status"), errors) or {}
    summary = _object(Path("status").child("resourceSummary"), status.get("resourceSummary"),
                      errors)
    for part in ("allocatable", "allocated", "allocating"):
        p_path = Path("status").child("resourceSummary", part)
        quantities = _object(p_path, (summary or {}).get(part), errors) or {}
        for name, value in quantities.items():
            try:
                parse_quantity(value)
            except QuantityError as exc:
                errors.append(invalid(p_path.child(str(name)), str(exc), value))
    for i, entry in enumerate(_list(Path("status").child("apiEnablements"),
                                    status.get("apiEnablements"), errors)):
        e_path = Path("status").child("apiEnablements").index(i)
        entry_map = _object(e_path, entry, errors)
        if entry_map is not None:
            _string(e_path.child("groupVersion"), entry_map.get("groupVersion"), errors,
                    need=True)
    return errors
