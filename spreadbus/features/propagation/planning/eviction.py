"""The taint manager's eviction of a binding from clusters tainted ``NoExecute``, as a pure
function of the binding, the clusters and the time.

Read from Karmada's ``pkg/controllers/cluster/taint_manager.go``, ``pkg/util/helper/taint.go``
and ``GracefulEvictCluster`` (``pkg/apis/work/v1alpha2/binding_types_helper.go``): for each
cluster the binding is on, its NoExecute taints are compared with the tolerations of the
placement the scheduler last applied; a taint no toleration tolerates evicts at once, and
tolerated taints evict when the earliest ``timeAdded + tolerationSeconds`` has come (a taint
tolerated without seconds, or without ``timeAdded``, never). Evicting removes the cluster from
``spec.clusters`` and adds a graceful eviction task (reason ``TaintUntolerated``, producer
``TaintManager``, the policy's ``failover.cluster.purgeMode``, ``Gracefully`` by default)
unless one for that cluster is pending. NoSchedule taints (not-ready, unreachable) evict
nothing.

spreadbus runs it as Karmada's e2e environment does, with ``--enable-no-execute-taint-eviction``
on; offline, every eviction due at the time is made at once (Karmada rate-limits them, 0.5/s by
default).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

import msgspec

from kubesemantics.lenient_json import as_int, as_map, as_str
from kubesemantics.timestamps import parse_time
from kubesemantics.tolerations import NO_EXECUTE, tolerates
from spreadbus.features.propagation.core.cluster import Cluster
from spreadbus.features.propagation.core.deadline import EARLIEST, after
from spreadbus.features.propagation.core.division import Target

REASON: Final = "TaintUntolerated"
PRODUCER: Final = "TaintManager"


class Eviction(msgspec.Struct, frozen=True):
    clusters: tuple[Target, ...]
    tasks: tuple[Mapping[str, Any], ...]
    """Every task after this pass: the pending ones, then the new ones."""


def expiry(cluster: Cluster, tolerations: Sequence[Mapping[str, Any]]) -> datetime | None:
    """When the taint manager evicts from ``cluster``: at once (:data:`EARLIEST`) for a
    NoExecute taint no toleration tolerates, else the earliest ``timeAdded + tolerationSeconds``
    of the tolerated ones; None: never."""
    taints = [t for t in cluster.taints if as_str(t.get("effect")) == NO_EXECUTE]
    if not taints:
        return None
    used = []
    for taint in taints:
        match = next((t for t in tolerations if tolerates(t, taint)), None)
        if match is None:
            return EARLIEST
        used.append(match)
    triggers = []
    for toleration in used:
        seconds = as_int(toleration.get("tolerationSeconds"))
        if seconds is None:
            continue
        for taint in taints:
            added = parse_time(taint.get("timeAdded"))
            if added is not None and tolerates(toleration, taint):
                triggers.append(after(added, seconds))
    return min(triggers) if triggers else None


def due(cluster: Cluster, tolerations: Sequence[Mapping[str, Any]], now: datetime) -> bool:
    """Whether the taint manager evicts from ``cluster`` at ``now``."""
    at = expiry(cluster, tolerations)
    return at is not None and at <= now


def next_eviction(targets: Sequence[Target], clusters: Sequence[Cluster],
                  applied: Mapping[str, Any] | None, now: datetime) -> datetime | None:
    """The earliest time after ``now`` at which a toleration of the binding on ``targets``
    runs out, so the taint manager evicts it from one of them (None: none ahead): when the
    planner must look again, with no event to wake it."""
    if applied is None:
        return None
    raw = applied.get("clusterTolerations")
    tolerations = [as_map(t) for t in raw] if isinstance(raw, list) else []
    by_name = {c.name: c for c in clusters}
    ahead = [at for target in targets if (cluster := by_name.get(target.name)) is not None
             and (at := expiry(cluster, tolerations)) is not None and at > now]
    return min(ahead) if ahead else None


def evict(targets: Sequence[Target], tasks: Sequence[Mapping[str, Any]],
          clusters: Sequence[Cluster], applied: Mapping[str, Any] | None,
          failover: Mapping[str, Any] | None, now: datetime) -> Eviction:
    """``applied``: the placement the scheduler last applied (None: never scheduled, which
    the taint manager refuses to judge)."""
    if applied is None:
        return Eviction(clusters=tuple(targets), tasks=tuple(tasks))
    raw = applied.get("clusterTolerations")
    tolerations = [as_map(t) for t in raw] if isinstance(raw, list) else []
    purge = as_str(as_map(as_map(failover).get("cluster")).get("purgeMode")) or "Gracefully"
    by_name = {c.name: c for c in clusters}
    kept: list[Target] = []
    added: list[Mapping[str, Any]] = []
    pending = {as_str(t.get("fromCluster")) for t in tasks}
    for target in targets:
        cluster = by_name.get(target.name)
        if cluster is None or not due(cluster, tolerations, now):
            kept.append(target)
            continue
        if target.name in pending:
            continue
        task: dict[str, Any] = {"fromCluster": target.name, "purgeMode": purge,
                                "reason": REASON, "producer": PRODUCER}
        if target.replicas > 0:
            task["replicas"] = target.replicas
        added.append(task)
        pending.add(target.name)
    return Eviction(clusters=tuple(kept), tasks=(*tasks, *added))
