"""How many ready pods of a UnitedDeployment a voluntary move may take away right now.

A rebalance (the only voluntary disruption the UD makes) honours every PodDisruptionBudget
(``policy``, ``status.disruptionsAllowed``) and PodUnavailableBudget (``apps.kruise.io``,
``status.unavailableAllowed``) in the UD's namespace that covers one of its pods: by
``spec.selector`` matching the pod's labels, or for a PodUnavailableBudget by a ``targetRef``
naming the UD or one of its subset workloads. The smallest allowance wins; ``None`` when no
budget covers the UD (the rebalance's own bound then applies alone).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubesemantics import label_selector
from kubesemantics.group_version import api_group
from kubesemantics.lenient_json import as_int, as_map, as_str
from spreadbus.features.uniteddeployment.core.model import KIND, UnitedDeployment
from spreadbus.features.uniteddeployment.core.subset_workloads import (
    labels_of,
    name_of,
    namespace_of,
)

JSON = Mapping[str, Any]

_BUDGETS = {
    ("policy", "PodDisruptionBudget"): "disruptionsAllowed",
    ("apps.kruise.io", "PodUnavailableBudget"): "unavailableAllowed",
}


def _selects(selector: object, pods: Sequence[JSON]) -> bool:
    if not isinstance(selector, Mapping):
        return False
    try:
        compiled = label_selector.from_label_selector(selector)
    except label_selector.SelectorError:
        return False
    return any(compiled.matches(labels_of(p)) for p in pods)


def _targets(ref: object, ud: UnitedDeployment, workloads: Mapping[str, JSON]) -> bool:
    ref = as_map(ref)
    kind, name = as_str(ref.get("kind")), as_str(ref.get("name"))
    if kind == KIND and name == ud.name:
        return True
    return any(as_str(w.get("kind")) == kind and name_of(w) == name for w in workloads.values())


def disruption_allowance(
    ud: UnitedDeployment,
    objects: Sequence[JSON],
    workloads: Mapping[str, JSON],
    pods_by_subset: Mapping[str, Sequence[JSON]],
) -> int | None:
    """The smallest allowance of the budgets covering the UD's pods, or None."""
    pods = [p for found in pods_by_subset.values() for p in found]
    allowance: int | None = None
    for obj in objects:
        key = (api_group(as_str(obj.get("apiVersion"))), as_str(obj.get("kind")))
        field = _BUDGETS.get(key)
        if field is None or namespace_of(obj) != ud.namespace:
            continue
        spec = as_map(obj.get("spec"))
        covers = _selects(spec.get("selector"), pods) or (
            key[1] == "PodUnavailableBudget" and _targets(spec.get("targetRef"), ud, workloads)
        )
        allowed = as_int(as_map(obj.get("status")).get(field))
        if covers and allowed is not None:
            allowance = allowed if allowance is None else min(allowance, allowed)
    return allowance
