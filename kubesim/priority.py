"""PriorityClasses and the Priority admission plugin.

A ``scheduling.k8s.io/v1`` PriorityClass names a ``value``; at most one is the
``globalDefault``; its ``preemptionPolicy`` (``PreemptLowerPriority`` by default, or ``Never``)
is copied into the pods that use it. As upstream's Priority admission plugin
(``plugin/pkg/admission/priority/admission.go``) a new pod's ``spec.priority`` and
``spec.preemptionPolicy`` are resolved from ``spec.priorityClassName``: an unknown class is
refused (403), a pod without a class takes the global default (the lowest valued one if several
claim it) or priority 0, and a pod that states its own priority must state the resolved one.
Upstream's two system classes (``system-node-critical``, ``system-cluster-critical``) resolve
here without being stored objects. Validation is upstream's
(``pkg/apis/scheduling/validation``): user values at most one billion, the ``system-`` prefix
reserved, ``value`` and ``preemptionPolicy`` immutable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from kubesim import errors
from kubesim.errors import FieldError

JsonObject = dict[str, Any]

PREEMPT_LOWER: Final = "PreemptLowerPriority"
NEVER: Final = "Never"
POLICIES: Final = (NEVER, PREEMPT_LOWER)
HIGHEST_USER_PRIORITY: Final = 1_000_000_000
SYSTEM_PREFIX: Final = "system-"
SYSTEM_CLASSES: Final = {"system-node-critical": 2_000_001_000,
                         "system-cluster-critical": 2_000_000_000}


def default_priority_class(obj: JsonObject) -> None:
    """An absent ``value`` decodes as 0, as upstream's int32 field does."""
    obj.setdefault("value", 0)
    obj.setdefault("preemptionPolicy", PREEMPT_LOWER)


def validate_priority_class(obj: Mapping[str, Any],
                            old: Mapping[str, Any] | None) -> list[FieldError]:
    """Field errors of a PriorityClass written over ``old`` (None: created)."""
    errs: list[FieldError] = []
    name = str((obj.get("metadata") or {}).get("name") or "")
    value = obj.get("value")
    if not isinstance(value, int) or isinstance(value, bool):
        errs.append(errors.invalid("value", value, "must be an integer"))
    elif name.startswith(SYSTEM_PREFIX):
        if SYSTEM_CLASSES.get(name) != value:
            errs.append(errors.forbidden_field(
                "metadata.name", f"priority class names with '{SYSTEM_PREFIX}' prefix are "
                                 "reserved for system use only"))
    elif value > HIGHEST_USER_PRIORITY:
        errs.append(errors.forbidden_field(
            "value", f"maximum allowed value of a user defined priority is "
                     f"{HIGHEST_USER_PRIORITY}"))
    policy = obj.get("preemptionPolicy")
    if policy not in POLICIES:
        errs.append(errors.not_supported("preemptionPolicy", policy, list(POLICIES)))
    default = obj.get("globalDefault")
    if default is not None and not isinstance(default, bool):
        errs.append(errors.invalid("globalDefault", default, "must be a boolean"))
    if old is not None:
        if obj.get("value") != old.get("value"):
            errs.append(errors.forbidden_field("value", "may not be changed in an update."))
        if obj.get("preemptionPolicy") != old.get("preemptionPolicy"):
            errs.append(errors.invalid("preemptionPolicy", policy, "field is immutable"))
    return errs


def second_default(obj: Mapping[str, Any], others: Iterable[Mapping[str, Any]]) -> str | None:
    """Why the admission plugin refuses a class marked ``globalDefault`` when another is."""
    if obj.get("globalDefault") is not True:
        return None
    name = (obj.get("metadata") or {}).get("name")
    for other in others:
        other_name = (other.get("metadata") or {}).get("name")
        if other.get("globalDefault") is True and other_name != name:
            return (f"PriorityClass {other_name} is already marked as default. Only one default "
                    "can exist")
    return None


def _global_default(classes: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    chosen: Mapping[str, Any] | None = None
    for pc in classes:
        if pc.get("globalDefault") is True and (
                chosen is None or _value(pc) < _value(chosen)):
            chosen = pc
    return chosen


def _value(pc: Mapping[str, Any]) -> int:
    value = pc.get("value")
    return value if isinstance(value, int) else 0


class PriorityRefused(Exception):
    """The admission plugin's refusal; the API server answers 403 Forbidden with it."""


def admit_pod(pod: JsonObject, lookup: Mapping[str, Mapping[str, Any]]) -> None:
    """Resolve a new pod's priority in place; ``lookup``: the stored classes by name."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return  # validation refuses it
    name = spec.get("priorityClassName")
    if not name:
        pc = _global_default(lookup.values())
        priority = _value(pc) if pc is not None else 0
        policy = (pc.get("preemptionPolicy") if pc is not None else None) or PREEMPT_LOWER
        if pc is not None:
            spec["priorityClassName"] = (pc.get("metadata") or {}).get("name")
    elif isinstance(name, str) and name in SYSTEM_CLASSES:
        priority, policy = SYSTEM_CLASSES[name], PREEMPT_LOWER
    else:
        found = lookup.get(name) if isinstance(name, str) else None
        if found is None:
            raise PriorityRefused(f"no PriorityClass with name {name} was found")
        priority = _value(found)
        policy = found.get("preemptionPolicy") or PREEMPT_LOWER
    stated = spec.get("priority")
    if stated is not None and stated != priority:
        raise PriorityRefused(
            f"the integer value of priority ({stated}) must not be provided in pod spec; "
            f"priority admission controller computed {priority} from the given PriorityClass "
            "name")
    stated_policy = spec.get("preemptionPolicy")
    if stated_policy is not None and stated_policy != policy:
        raise PriorityRefused(
            f"the string value of PreemptionPolicy ({stated_policy}) must not be provided in "
            f"pod spec; priority admission controller computed {policy} from the given "
            "PriorityClass name")
    spec["priority"] = priority
    spec["preemptionPolicy"] = policy
