"""How many more replicas of a workload fit in a cluster, as Karmada's general estimator says.

Read from Karmada's ``pkg/estimator/client/general.go`` and ``pkg/util/resource.go``:

- the request of one replica is the pod template's: containers summed, each init container's
  request a floor (the larger wins), the overhead added; a limit without a request counts as the
  request; quantities are rounded up to whole units (CPU to millicores);
- from ``status.resourceSummary``: the pods left (allocatable - allocated - allocating, at
  least 0), then for each requested resource ``floor(available / request)``, the minimum of all;
  a resource the cluster does not list, or has none left of, gives 0; a template without
  requests is limited by pods alone; no summary at all gives 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Final

import msgspec

from kubesemantics.lenient_json import as_map
from kubesemantics.quantity import QuantityError, parse_quantity

CPU: Final = "cpu"
PODS: Final = "pods"


def _units(name: str, quantity: Fraction) -> int:
    """``Value()`` rounds up to a whole unit; CPU is counted in millicores (``MilliValue()``)."""
    return math.ceil(quantity * 1000) if name == CPU else math.ceil(quantity)


def _tracked(name: str) -> bool:
    """The resources Karmada's ``Resource`` keeps: the standard ones and scalar resources
    (extended resources with a domain, huge pages, attachable volumes)."""
    return (name in (CPU, "memory", "ephemeral-storage", PODS) or name.startswith("hugepages-")
            or name.startswith("attachable-volumes-")
            or ("/" in name and not name.startswith("kubernetes.io/")))


def _list(value: object) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, raw in as_map(value).items():
        if not isinstance(name, str) or not _tracked(name):
            continue
        try:
            out[name] = _units(name, parse_quantity(raw))
        except QuantityError:
            continue
    return out


def _container_requests(container: Mapping[str, Any]) -> dict[str, int]:
    resources = as_map(container.get("resources"))
    requests = _list(resources.get("limits"))
    requests.update(_list(resources.get("requests")))
    return requests


def request_list(resources: Mapping[str, Any]) -> dict[str, int]:
    """A stored ``replicaRequirements.resourceRequest`` in the same units."""
    return {name: value for name, value in _list(resources).items() if value > 0}


def replica_request(pod_spec: Mapping[str, Any]) -> dict[str, int]:
    """One replica's request (CPU in millicores, other resources in units); zero entries and
    untracked resources left out. Empty: the template requests nothing."""
    total: dict[str, int] = {}
    containers = pod_spec.get("containers")
    for container in containers if isinstance(containers, list) else ():
        for name, value in _container_requests(as_map(container)).items():
            total[name] = total.get(name, 0) + value
    inits = pod_spec.get("initContainers")
    for container in inits if isinstance(inits, list) else ():
        for name, value in _container_requests(as_map(container)).items():
            total[name] = max(total.get(name, 0), value)
    for name, value in _list(pod_spec.get("overhead")).items():
        total[name] = total.get(name, 0) + value
    return {name: value for name, value in total.items() if value > 0}


class Capacity(msgspec.Struct, frozen=True):
    """A resource summary read once: the pods left, and per allocatable resource the amount
    left (allocatable - allocated - allocating)."""

    pods: int
    left: Mapping[str, int]
    """Per allocatable resource with some left, that amount in the request's units (CPU in
    millicores); a resource with none left is absent."""


def _amount(summary: Mapping[str, Any], part: str, name: str) -> Fraction | None:
    raw = as_map(summary.get(part)).get(name)
    if raw is None:
        return None
    try:
        return parse_quantity(raw)
    except QuantityError:
        return None


def capacity_of(summary: Mapping[str, Any] | None) -> Capacity | None:
    """None when the cluster has no summary."""
    if summary is None:
        return None
    pods = 0
    for part, sign in (("allocatable", 1), ("allocated", -1), ("allocating", -1)):
        amount = _amount(summary, part, PODS)
        if amount is not None:
            pods += sign * math.ceil(amount)
    left: dict[str, int] = {}
    for name in as_map(summary.get("allocatable")):
        allocatable = _amount(summary, "allocatable", name) if isinstance(name, str) else None
        if allocatable is None or name == PODS:
            continue
        for part in ("allocated", "allocating"):
            amount = _amount(summary, part, name)
            if amount is not None:
                allocatable -= amount
        if math.ceil(allocatable) > 0:  # Karmada's "no more resource left" reads Value()
            left[name] = _units(name, allocatable)
    return Capacity(pods=max(pods, 0), left=left)


def replicas_that_fit(capacity: Capacity | None, request: Mapping[str, int]) -> int:
    """The general estimator's answer for one cluster."""
    if capacity is None or capacity.pods <= 0:
        return 0
    best = capacity.pods
    for name, wanted in request.items():
        if name == PODS:
            continue
        left = capacity.left.get(name)
        if left is None:
            return 0
        best = min(best, left // wanted)
    return best


def available_replicas(summary: Mapping[str, Any] | None, request: Mapping[str, int]) -> int:
    """The general estimator's answer for a cluster with this ``status.resourceSummary``."""
    return replicas_that_fit(capacity_of(summary), request)
