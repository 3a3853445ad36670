"""A member's ``status.resourceSummary`` and ``status.nodeSummary``, as Karmada's cluster-status
controller computes them from the member's nodes and pods
(``pkg/controllers/status/cluster_status_controller.go``, ``getResourceSummary``,
``getNodeSummary``; the arithmetic is ``pkg/util/resource.go``).

- ``allocatable``: every node's ``status.allocatable`` summed, resource by resource, every name
  kept, each sum in the format of its first term.
- ``allocating``: what pods without a node request, plus their number as ``pods``.
- ``allocated``: what pods bound to a node and neither Succeeded nor Failed request, plus
  their number as ``pods``.

A pod's request is what its containers request (cpu in millicores, rounded up; memory,
ephemeral storage and the scalar resources in whole units, rounded up), raised to its init
containers' where one asks more, plus its overhead. As in Karmada, the raise to the init
containers' compares with the running total of every pod summed so far, not with the pod's own
sum, so an init container only counts when it asks more than all the pods before it together.
Of the other names only scalar resources count: extended resources (a domain other than
``kubernetes.io``), ``hugepages-*``, ``attachable-volumes-*`` and ``*kubernetes.io/*`` names.
A total of zero is left out, and a list left empty is absent, as Karmada writes it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final

from kubesemantics.lenient_json import as_map, as_str
from kubesemantics.qualified_names import is_qualified_name
from kubesemantics.quantity import QuantityError, parse_quantity
from kubesemantics.quantity_format import (
    QuantityFormat,
    canonical,
    format_of,
    milli_quantity,
    whole_quantity,
)

Obj = Mapping[str, Any]
Units = tuple[tuple[str, int], ...]
"""Resource names that count, each with its units (millicores for cpu, else whole units)."""

CPU: Final = "cpu"
MEMORY: Final = "memory"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"
PODS: Final = "pods"
_HUGE_PAGES: Final = "hugepages-"
_ATTACHABLE_VOLUMES: Final = "attachable-volumes-"
_NATIVE_DOMAIN: Final = "kubernetes.io/"
_REQUESTS_PREFIX: Final = "requests."
_FINISHED: Final = ("Succeeded", "Failed")


def is_scalar_resource(name: str) -> bool:
    """Kubernetes' ``IsScalarResourceName`` (extended, huge pages, prefixed native, attachable
    volumes)."""
    native = "/" not in name or _NATIVE_DOMAIN in name
    extended = (not native and not name.startswith(_REQUESTS_PREFIX)
                and not is_qualified_name(_REQUESTS_PREFIX + name))
    return (extended or name.startswith(_HUGE_PAGES) or _NATIVE_DOMAIN in name
            or name.startswith(_ATTACHABLE_VOLUMES))


@functools.lru_cache(maxsize=4096)
def _parsed_text(text: str) -> Fraction:
    return parse_quantity(text)


def _parsed(quantity: object) -> Fraction:
    """A quantity's value; a text is parsed once: a member's nodes and pods repeat a few (``4``,
    ``8Gi``, ``100m``) thousands of times, and its summary is written on every heartbeat."""
    return _parsed_text(quantity) if isinstance(quantity, str) else parse_quantity(quantity)


def _ceil(value: Fraction) -> int:
    return math.ceil(value)


@dataclass
class _Resource:
    """Karmada's ``util.Resource``: millicores, bytes, pod count and scalar units."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    pods: int = 0
    scalars: dict[str, int] = field(default_factory=dict)

    def _value(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.pods
        return self.scalars.get(name, 0)

    def _set(self, name: str, value: int) -> None:
        if name == CPU:
            self.milli_cpu = value
        elif name == MEMORY:
            self.memory = value
        elif name == EPHEMERAL_STORAGE:
            self.ephemeral_storage = value
        elif name == PODS:
            self.pods = value
        else:
            self.scalars[name] = value

    @staticmethod
    def _units(name: str, quantity: object) -> int | None:
        """The quantity in the unit this resource is counted in; None when it does not count or
        does not parse."""
        if name not in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS) and not is_scalar_resource(name):
            return None
        try:
            value = _parsed(quantity)
        except QuantityError:
            return None
        return _ceil(value * 1000) if name == CPU else _ceil(value)

    @classmethod
    def units_of(cls, resources: object) -> Units:
        """The names that count and their units, in the list's order."""
        return tuple((str(name), units) for name, quantity in as_map(resources).items()
                     if (units := cls._units(str(name), quantity)) is not None)

    def add(self, units: Units) -> None:
        for name, value in units:
            self._set(name, self._value(name) + value)

    def raise_to(self, units: Units) -> None:
        for name, value in units:
            if value > self._value(name):
                self._set(name, value)

    def add_pod_request(self, request: PodRequest) -> None:
        for container in request.containers:
            self.add(container)
        for container in request.init_containers:
            self.raise_to(container)
        self.add(request.overhead)

    def resource_list(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.milli_cpu > 0:
            out[CPU] = milli_quantity(self.milli_cpu)
        if self.memory > 0:
            out[MEMORY] = whole_quantity(self.memory, QuantityFormat.BINARY_SI)
        if self.ephemeral_storage > 0:
            out[EPHEMERAL_STORAGE] = whole_quantity(self.ephemeral_storage,
                                                    QuantityFormat.BINARY_SI)
        if self.pods > 0:
            out[PODS] = whole_quantity(self.pods, QuantityFormat.DECIMAL_SI)
        for name, units in sorted(self.scalars.items()):
            if units > 0:
                fmt = (QuantityFormat.BINARY_SI if name.startswith(_HUGE_PAGES)
                       else QuantityFormat.DECIMAL_SI)
                out[name] = whole_quantity(units, fmt)
        return out


def _containers(pod_spec: Obj, key: str) -> list[Obj]:
    value = pod_spec.get(key)
    return [as_map(c) for c in value] if isinstance(value, list) else []


@dataclass(frozen=True)
class PodRequest:
    """What one pod counts for in the summary, its quantities parsed: a member's summary is
    written on every heartbeat from all its pods, and a pod's request does not change between
    two of its observations, so a caller may keep this per observation and parse each once.
    The units stay per container, as Karmada adds and raises them one by one."""

    bound: bool
    """A node is named for it."""
    finished: bool
    """Succeeded or Failed."""
    containers: tuple[Units, ...] = ()
    init_containers: tuple[Units, ...] = ()
    overhead: Units = ()


def _requests_of(pod_spec: Obj, key: str) -> tuple[Units, ...]:
    return tuple(_Resource.units_of(as_map(c.get("resources")).get("requests"))
                 for c in _containers(pod_spec, key))


def pod_request(pod: Obj) -> PodRequest:
    spec = as_map(pod.get("spec"))
    return PodRequest(
        bound=bool(as_str(spec.get("nodeName"))),
        finished=as_str(as_map(pod.get("status")).get("phase")) in _FINISHED,
        containers=_requests_of(spec, "containers"),
        init_containers=_requests_of(spec, "initContainers"),
        overhead=_Resource.units_of(spec.get("overhead")))


def _request(pod: Obj | PodRequest) -> PodRequest:
    return pod if isinstance(pod, PodRequest) else pod_request(pod)


def allocatable(nodes: Iterable[Obj]) -> dict[str, str]:
    """Every node's allocatable summed per resource name (a value that does not parse is
    skipped), each sum in the format of its first term, as ``Quantity.Add`` leaves it."""
    terms: dict[str, tuple[Fraction, object]] = {}
    for node in nodes:
        for name, quantity in as_map(as_map(node.get("status")).get("allocatable")).items():
            try:
                value = _parsed(quantity)
            except QuantityError:
                continue
            total, first = terms.get(str(name), (Fraction(0), quantity))
            terms[str(name)] = (total + value, first)
    return {name: canonical(total, format_of(first))
            for name, (total, first) in sorted(terms.items())}


def _requested(requests: Iterable[PodRequest]) -> dict[str, str]:
    total, count = _Resource(), 0
    for request in requests:
        total.add_pod_request(request)
        count += 1
    total.pods += count
    return total.resource_list()


def allocating(pods: Iterable[Obj | PodRequest]) -> dict[str, str]:
    """What pods no node is named for request (each a pod, or its :func:`pod_request`)."""
    return _requested(r for r in map(_request, pods) if not r.bound)


def allocated(pods: Iterable[Obj | PodRequest]) -> dict[str, str]:
    """What pods bound to a node, and not finished, request."""
    return _requested(r for r in map(_request, pods) if r.bound and not r.finished)


def resource_summary(nodes: Iterable[Obj],
                     pods: Iterable[Obj | PodRequest]) -> dict[str, dict[str, str]]:
    """``status.resourceSummary`` with its empty lists left out; each pod may be given as its
    :func:`pod_request`."""
    pod_list = [_request(p) for p in pods]
    parts = {"allocatable": allocatable(nodes), "allocating": allocating(pod_list),
             "allocated": allocated(pod_list)}
    return {key: value for key, value in parts.items() if value}


def node_ready(node: Obj) -> bool:
    conditions = as_map(node.get("status")).get("conditions")
    return any(as_map(c).get("type") == "Ready" and as_map(c).get("status") == "True"
               for c in (conditions if isinstance(conditions, list) else ()))


def node_summary(nodes: Iterable[Obj]) -> dict[str, int]:
    """``status.nodeSummary``: how many nodes, how many Ready (zero counts left out)."""
    listed = list(nodes)
    counts = {"totalNum": len(listed), "readyNum": sum(1 for n in listed if node_ready(n))}
    return {key: value for key, value in counts.items() if value}


__all__ = ["PodRequest", "allocatable", "allocated", "allocating", "is_scalar_resource",
           "node_summary", "pod_request", "resource_summary"]
