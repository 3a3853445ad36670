"""Which object governs a workload's placement, read from plain JSON.

In spreadbus a workload's placement is what a UnitedDeployment or a WorkloadSpread decides:

- a UnitedDeployment governs itself (its subset workloads are its own business, so a subset
  workload named directly is governed only if a WorkloadSpread targets it);
- any other object is governed by a WorkloadSpread of its namespace whose ``targetRef`` has the
  object's API group, kind and name (the version never matters, as for the WorkloadSpread
  webhook). When several do, which the WorkloadSpread webhook refuses, the first by name.

The other features' objects are read here as JSON: features do not import each other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Final

from kubesemantics.group_version import api_group
from kubesemantics.lenient_json import as_map, as_str
from spreadbus.features.workloadrebalancer.core.model import (
    HANDLED_ANNOTATION,
    REQUEST_ANNOTATION,
    WorkloadRef,
)
from spreadbus.features.workloadrebalancer.core.status import Placement

KRUISE_GROUP: Final = "apps.kruise.io"
UNITED_DEPLOYMENT: Final = "UnitedDeployment"
WORKLOAD_SPREAD: Final = "WorkloadSpread"

Holds = Callable[[Mapping[str, Any]], bool]
"""Whether a governing object (its annotations) already carries the request."""


def is_united_deployment(ref: WorkloadRef) -> bool:
    return api_group(ref.api_version) == KRUISE_GROUP and ref.kind == UNITED_DEPLOYMENT


def targets(spread: Mapping[str, Any], ref: WorkloadRef) -> bool:
    """Whether a WorkloadSpread's targetRef names the object (same namespace, group, kind)."""
    metadata = as_map(spread.get("metadata"))
    if (as_str(metadata.get("namespace")) or "default") != ref.namespace:
        return False
    target = as_map(as_map(spread.get("spec")).get("targetRef"))
    return (as_str(target.get("kind")) == ref.kind
            and as_str(target.get("name")) == ref.name
            and api_group(as_str(target.get("apiVersion"))) == api_group(ref.api_version))


def governing(ref: WorkloadRef, obj: Mapping[str, Any] | None,
              spreads: Iterable[Mapping[str, Any]], holds: Holds) -> Placement | None:
    """The placement of ``obj`` (the object ``ref`` names, None when absent)."""
    if obj is None or not ref.namespace:
        return None
    if is_united_deployment(ref):
        governor: Mapping[str, Any] = obj
        kind = UNITED_DEPLOYMENT
    else:
        found = sorted((s for s in spreads if targets(s, ref)),
                       key=lambda s: as_str(as_map(s.get("metadata")).get("name")))
        if not found:
            return None
        governor = found[0]
        kind = WORKLOAD_SPREAD
    metadata = as_map(governor.get("metadata"))
    return Placement(kind=kind, namespace=ref.namespace, name=as_str(metadata.get("name")),
                     delivered=holds(as_map(metadata.get("annotations"))))


def holds_request(uid: str, created: datetime | None,
                  requests: Mapping[str, tuple[datetime | None, str]]) -> Holds:
    """This rebalancer's request is carried when the governing object holds it (requested or
    already handled), or holds a newer rebalancer's request, which subsumes it: two
    rebalancers of one workload never take the annotation from each other in turn.
    ``requests``: every known rebalancer's uid -> (creation time, uid)."""
    mine = (created, uid)

    def holds(annotations: Mapping[str, Any]) -> bool:
        request = annotations.get(REQUEST_ANNOTATION)
        if uid and uid in (request, annotations.get(HANDLED_ANNOTATION)):
            return True
        other = requests.get(request) if isinstance(request, str) else None
        return other is not None and _later(other, mine)

    return holds


def _later(a: tuple[datetime | None, str], b: tuple[datetime | None, str]) -> bool:
    """Created later; in the same second (or both unknown), the greater uid; unknown is oldest."""
    if a[0] != b[0]:
        if a[0] is None or b[0] is None:
            return b[0] is None
        return a[0] > b[0]
    return a[1] > b[1]
