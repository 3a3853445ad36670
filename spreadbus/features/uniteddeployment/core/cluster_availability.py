"""Which subsets' target clusters cannot take pods, read from the cluster registry.

A subset whose ``targetCluster`` is not Ready is unschedulable, as Karmada's scheduler leaves a
cluster alone while it carries the ``cluster.karmada.io/not-ready`` or
``cluster.karmada.io/unreachable`` NoSchedule taint (:func:`~spreadbus.clusterregistry.
cluster_health.scheduling_taints` sets them from the Ready condition). A target the registry no
longer finds (its Cluster deleted, or no longer matching the query) is unschedulable too.

For a Karmada Cluster the Ready condition must be ``True`` and neither taint set; a
``clusterregistry.k8s.io`` Cluster, whose API keeps no agreed health, is unavailable only when it
carries a Ready condition that is not ``True``. Nothing is judged while the registry is not known
(no Cluster of the query's kind given): as validation, the planner does not guess.

The reconcile makes an unavailable subset ``Schedulable=False`` with reason
:data:`CLUSTER_UNAVAILABLE` and, under Adaptive, takes none of its pods as ready, so its share
goes to the next subsets; when the cluster returns, Adaptive keeps the pods where they now run
until a rebalance is asked: while the subset is still marked (its unschedulable window) the pods
its member kept running through the outage count as none, and once it is schedulable again it
never drops below its ready pods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubesemantics.lenient_json import as_map, as_str
from spreadbus.clusterregistry.cluster_health import (
    NO_SCHEDULE,
    TAINT_NOT_READY,
    TAINT_UNREACHABLE,
    TRUE,
    find_condition,
)
from spreadbus.clusterregistry.registry import KARMADA_CLUSTER, kind_of, read_query

Obj = Mapping[str, Any]

CLUSTER_UNAVAILABLE: Final = "ClusterUnavailable"
_TAINTS: Final = (TAINT_NOT_READY, TAINT_UNREACHABLE)


def why_unavailable(cluster: Obj) -> str:
    """Why a registry's Cluster takes no pods now, or ``""``."""
    name = as_str(as_map(cluster.get("metadata")).get("name"))
    for taint in as_map(cluster.get("spec")).get("taints") or ():
        if isinstance(taint, Mapping) and taint.get("key") in _TAINTS \
                and taint.get("effect") == NO_SCHEDULE:
            return f"cluster {name} is tainted {as_str(taint.get('key'))}:{NO_SCHEDULE}"
    ready = find_condition(as_map(cluster.get("status")).get("conditions"))
    if ready is None:
        return f"cluster {name} has not reported Ready" if kind_of(cluster) == KARMADA_CLUSTER \
            else ""
    status = as_str(ready.get("status"))
    if status != TRUE:
        return f"cluster {name} is Ready={status} ({as_str(ready.get('reason'))})"
    return ""


def unavailable_subsets(ud: Obj, clusters: Sequence[Obj] | None) -> dict[str, str]:
    """Subset name -> why its target cluster takes no pods, for the subsets whose does not."""
    topology = as_map(as_map(ud.get("spec")).get("topology"))
    query = read_query(topology.get("clusterRegistry"))
    if query is None or clusters is None:
        return {}
    known = [c for c in clusters if kind_of(c) == query.kind]
    if not known:
        return {}
    out: dict[str, str] = {}
    subsets = topology.get("subsets")
    for subset in subsets if isinstance(subsets, list) else ():
        target = as_map(subset).get("targetCluster") if isinstance(subset, Mapping) else None
        if not isinstance(target, Mapping) or not as_str(target.get("name")):
            continue
        found = query.find(target, known)
        name = as_str(as_map(subset).get("name"))
        if found is None:
            out[name] = (f"spec.topology.clusterRegistry no longer finds cluster "
                         f"{as_str(target.get('name'))}")
            continue
        why = why_unavailable(found)
        if why:
            out[name] = why
    return out
