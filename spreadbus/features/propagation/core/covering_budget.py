"""The PodUnavailableBudget in the host that covers a propagated workload, as the propagation
planner reads it: the minimum of available replicas it keeps across every member cluster, and
the disruptions its status allows now.

A budget in the host covers a template when its ``targetRef`` names the template (the group of
its apiVersion, its kind and name) or its ``selector`` matches the labels of the template's pod
template. Its minimum is computed as Kruise's controller computes ``desiredAvailable``, over the
template's replicas (the workload's replicas over all clusters): ``maxUnavailable`` off the
replicas, or ``minAvailable``, a percentage of the replicas rounded up either way. The status
the host's budget holds (computed over the pods of every member copy) caps the disruptions
further: what the members' webhooks have let go counts there. Several budgets covering one
template: the strictest. A budget that cannot be read (a bad percentage) covers nothing; its
validation refuses it before it is stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import msgspec

from kubesemantics.group_version import api_group
from kubesemantics.intstr import IntOrStrError, scaled_value
from kubesemantics.label_selector import SelectorError, from_label_selector
from kubesemantics.lenient_json import as_int, as_map, as_str
from spreadbus.features.propagation.core.interpreter import replicas_of

BUDGET_GROUP: Final = "policy.kruise.io"
BUDGET_RESOURCE: Final = "podunavailablebudgets"


class Covering(msgspec.Struct, frozen=True):
    minimum: int
    """The available replicas, summed over the clusters, the budget keeps."""
    allowed: int | None = None
    """The disruptions the budget's status allows now (None: it has no status yet)."""


def covers(budget: Mapping[str, Any], template: Mapping[str, Any]) -> bool:
    spec = as_map(budget.get("spec"))
    metadata = as_map(template.get("metadata"))
    if as_str(as_map(budget.get("metadata")).get("namespace")) != as_str(
            metadata.get("namespace")):
        return False
    ref = spec.get("targetRef")
    if isinstance(ref, Mapping):
        return (api_group(as_str(ref.get("apiVersion"))) == api_group(
                    as_str(template.get("apiVersion")))
                and as_str(ref.get("kind")) == as_str(template.get("kind"))
                and as_str(ref.get("name")) == as_str(metadata.get("name")))
    selector = spec.get("selector")
    if not isinstance(selector, Mapping):
        return False
    labels = as_map(as_map(as_map(as_map(template.get("spec")).get("template")).get(
        "metadata")).get("labels"))
    try:
        return from_label_selector(selector).matches(
            {str(k): str(v) for k, v in labels.items()})
    except SelectorError:
        return False


def minimum_of(budget: Mapping[str, Any], replicas: int) -> int | None:
    """Kruise's ``desiredAvailable`` of ``budget`` for ``replicas`` (None: it cannot be read)."""
    spec = as_map(budget.get("spec"))
    try:
        if spec.get("maxUnavailable") is not None:
            return max(0, replicas - scaled_value(spec.get("maxUnavailable"), replicas,
                                                  round_up=True))
        if spec.get("minAvailable") is not None:
            return max(0, scaled_value(spec.get("minAvailable"), replicas, round_up=True))
    except IntOrStrError:
        return None
    return None


def covering(budgets: Iterable[Mapping[str, Any]],
             template: Mapping[str, Any]) -> Covering | None:
    """The strictest of the ``budgets`` that cover ``template``; None when none does."""
    replicas = replicas_of(template)
    found: Covering | None = None
    for budget in budgets:
        if as_map(budget.get("metadata")).get("deletionTimestamp") or not covers(
                budget, template):
            continue
        minimum = minimum_of(budget, replicas)
        if minimum is None:
            continue
        status = budget.get("status")
        allowed = (as_int(as_map(status).get("unavailableAllowed"))
                   if isinstance(status, Mapping) else None)
        if found is None:
            found = Covering(minimum=minimum, allowed=allowed)
            continue
        both = [a for a in (found.allowed, allowed) if a is not None]
        found = Covering(minimum=max(found.minimum, minimum),
                         allowed=min(both) if both else None)
    return found
