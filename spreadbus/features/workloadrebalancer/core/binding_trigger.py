"""A Karmada binding as the placement a WorkloadRebalancer triggers, read from plain JSON.

A workload no spreadbus UnitedDeployment or WorkloadSpread governs is rebalanced as Karmada's
controller does it: the ResourceBinding named for it (:func:`kubesemantics.karmada_binding.
binding_name`; a ClusterResourceBinding for a cluster-scoped one) gets
``spec.rescheduleTriggeredAt`` set to the rebalancer's
``creationTimestamp``, only when it has none or an older one; the entry is ``Successful`` once
the binding holds that time or a later one (Karmada: once the trigger is delivered, or found
already delivered). The propagation feature's scheduler then runs Fresh.

:func:`trigger_follows` is the check the actuator runs before it writes the trigger, on the
rebalancer as the API server holds it: the value written is that rebalancer's creation time,
and never moves a binding's trigger back.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from kubesemantics.lenient_json import as_map, as_str
from kubesemantics.timestamps import parse_time
from spreadbus.features.workloadrebalancer.core.model import format_time

RESOURCE_BINDING: Final = "ResourceBinding"
CLUSTER_RESOURCE_BINDING: Final = "ClusterResourceBinding"
"""A cluster-scoped template's binding (a ClusterRole's), triggered the same way."""
TRIGGER: Final = "rescheduleTriggeredAt"


def trigger_of(binding: Mapping[str, Any]) -> datetime | None:
    return parse_time(as_map(binding.get("spec")).get(TRIGGER))


def delivered(binding: Mapping[str, Any], created: datetime | None) -> bool:
    """The binding holds this rebalancer's trigger or a later one."""
    held = trigger_of(binding)
    return created is not None and held is not None and held >= created


def trigger_patch(created: datetime) -> dict[str, Any]:
    return {"spec": {TRIGGER: format_time(created)}}


def trigger_follows(rebalancer: Mapping[str, Any], written: Mapping[str, Any],
                    before: Mapping[str, Any] | None) -> str:
    """Why the rebalancer as read does not ask for the trigger ``written`` holds; ``""``."""
    created = parse_time(as_map(rebalancer.get("metadata")).get("creationTimestamp"))
    value = as_str(as_map(written.get("spec")).get(TRIGGER))
    if created is None or value != format_time(created):
        return (f"spec.{TRIGGER} is {value!r}, the rebalancer was created at "
                f"{format_time(created) if created else 'no time'}")
    old = trigger_of(before or {})
    if old is not None and old >= created:
        return f"the binding already holds a trigger of {format_time(old)}"
    return ""
