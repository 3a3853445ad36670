"""A Karmada ``cluster.karmada.io/v1alpha1`` Cluster as the scheduler reads it.

Decoding is lenient (a field of the wrong type reads as absent): the scheduler decides on
whatever is stored, and validation is where a wrong type becomes an error. Only ``zones`` places
a cluster in zones: Karmada never reads the deprecated ``zone``. The scheduler itself never
reads ``Ready``: the cluster controller turns it into NoSchedule taints
(:func:`with_health_taints`), which the scheduler filters by.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

import msgspec

from kubesemantics.lenient_json import as_map, as_str, conditions
from spreadbus.clusterregistry.cluster_health import READY, scheduling_taints
from spreadbus.features.propagation.core.estimator import Capacity, capacity_of

GROUP: Final = "cluster.karmada.io"
KIND: Final = "Cluster"


class Cluster(msgspec.Struct, frozen=True):
    name: str
    labels: Mapping[str, str] = msgspec.field(default_factory=dict)
    provider: str = ""
    region: str = ""
    zones: tuple[str, ...] = ()
    taints: tuple[Mapping[str, Any], ...] = ()
    deleting: bool = False
    ready: str = ""
    """The ``Ready`` condition's status (``True``, ``False``, ``Unknown``); empty without one."""
    api_enablements: Mapping[str, frozenset[str]] = msgspec.field(default_factory=dict)
    """groupVersion -> the kinds served."""
    summary: Mapping[str, Any] | None = None
    """``status.resourceSummary`` as stored; None when absent."""
    capacity: Capacity | None = None
    """The summary read once (:func:`from_object` fills it); None: read ``summary``."""

    def room(self) -> Capacity | None:
        return self.capacity if self.capacity is not None else capacity_of(self.summary)

    def serves(self, api_version: str, kind: str) -> bool:
        return kind in self.api_enablements.get(api_version, frozenset())


def from_object(obj: Mapping[str, Any]) -> Cluster:
    metadata = as_map(obj.get("metadata"))
    spec = as_map(obj.get("spec"))
    status = as_map(obj.get("status"))
    labels = {k: v for k, v in as_map(metadata.get("labels")).items()
              if isinstance(k, str) and isinstance(v, str)}
    zones_value = spec.get("zones")
    zones = tuple(z for z in zones_value if isinstance(z, str)) if isinstance(
        zones_value, list) else ()
    taints_value = spec.get("taints")
    taints = tuple(t for t in taints_value if isinstance(t, Mapping)) if isinstance(
        taints_value, list) else ()
    ready = next((c.status for c in conditions(status.get("conditions")) if c.type == "Ready"),
                 "")
    enabled: dict[str, frozenset[str]] = {}
    enablements = status.get("apiEnablements")
    for entry in enablements if isinstance(enablements, list) else ():
        entry_map = as_map(entry)
        resources = entry_map.get("resources")
        kinds = frozenset(as_str(as_map(r).get("kind")) for r in resources) if isinstance(
            resources, list) else frozenset()
        version = as_str(entry_map.get("groupVersion"))
        enabled[version] = enabled.get(version, frozenset()) | kinds
    summary = status.get("resourceSummary")
    return Cluster(
        name=as_str(metadata.get("name")), labels=labels, provider=as_str(spec.get("provider")),
        region=as_str(spec.get("region")), zones=zones, taints=taints,
        deleting=bool(metadata.get("deletionTimestamp")), ready=ready,
        api_enablements=enabled,
        summary=summary if isinstance(summary, Mapping) else None,
        capacity=capacity_of(summary) if isinstance(summary, Mapping) else None)


def with_health_taints(cluster: Cluster, now: datetime) -> Cluster:
    """The cluster as Karmada's cluster controller leaves its taints for its ``Ready``
    condition (:func:`spreadbus.clusterregistry.cluster_health.scheduling_taints`, the rule the
    planner keeps live Clusters by); a cluster without the condition gets ``not-ready``."""
    ready = [{"type": READY, "status": cluster.ready}] if cluster.ready else []
    taints = scheduling_taints(list(cluster.taints), ready, now)
    return msgspec.structs.replace(cluster, taints=tuple(taints))


def is_cluster(obj: Mapping[str, Any]) -> bool:
    return (as_str(obj.get("kind")) == KIND
            and as_str(obj.get("apiVersion")).split("/", 1)[0] == GROUP)
