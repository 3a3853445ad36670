"""Karmada's application failover, as a pure function of the binding, its copies' health and the
time.

Read from Karmada's ``pkg/controllers/applicationfailover/`` (``rb_application_failover_
controller.go`` and its ClusterResourceBinding twin: ``detectFailure``, ``syncBinding``;
``common.go``: ``distinguishUnhealthyClustersWithOthers``, ``buildTaskOptions``) and
``GracefulEvictCluster`` (``pkg/apis/work/v1alpha2/binding_types_helper.go``). For a binding
whose policy sets ``failover.application`` and whose ``status.aggregatedStatus`` is not empty:

- a cluster whose copy is ``Unhealthy`` (:func:`~..core.aggregation.health`, Karmada's
  ``healthy.go``) and that no graceful eviction task holds starts a timer when first seen so;
  it is evicted when it is still unhealthy strictly after ``decisionConditions.
  tolerationSeconds`` from then (never in the round that started the timer);
- evicting removes the cluster from ``spec.clusters`` and adds a graceful eviction task
  (reason ``ApplicationFailure``, the controller's name as producer, the policy's
  ``purgeMode``; ``gracePeriodSeconds`` when it is ``Gracefully`` or its older spelling
  ``Graciously``; ``suppressDeletion: true`` when it is ``Never``) unless one for that cluster
  is pending;
- timers end for clusters reported ``Healthy`` and for clusters no longer in ``spec.clusters``
  (evicted ones included); a cluster whose copy reports no health keeps its timer.

Karmada keeps the timers in the controller's memory; here they are the binding's
:data:`UNHEALTHY_SINCE` annotation, so a plan is the same whoever runs it and a restart loses
nothing (a binding without it starts its timers, as a freshly started Karmada controller does).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

import msgspec

from kubesemantics.lenient_json import as_int, as_map, as_str
from kubesemantics.timestamps import format_time, time_map
from spreadbus.features.propagation.core.aggregation import HEALTHY, UNHEALTHY
from spreadbus.features.propagation.core.deadline import after
from spreadbus.features.propagation.core.division import Target
from spreadbus.features.propagation.core.policy import DEFAULT_TOLERATION_SECONDS

UNHEALTHY_SINCE: Final = "propagation.spreadbus.io/unhealthy-since"
"""On a binding: cluster -> when its copy was first seen unhealthy, as compact JSON."""
REASON: Final = "ApplicationFailure"
RB_PRODUCER: Final = "resource-binding-application-failover-controller"
CRB_PRODUCER: Final = "cluster-resource-binding-application-failover-controller"
GRACEFUL: Final = ("Gracefully", "Graciously")
NEVER: Final = "Never"


class Failover(msgspec.Struct, frozen=True):
    clusters: tuple[Target, ...]
    tasks: tuple[Mapping[str, Any], ...]
    """Every task after this pass: the pending ones, then the new ones."""
    since: Mapping[str, datetime]
    """The timers still running."""
    evicted: tuple[str, ...] = ()


def unhealthy_since(annotations: Mapping[str, Any]) -> dict[str, datetime]:
    """The timers a binding's annotation holds (unreadable entries are dropped)."""
    text = annotations.get(UNHEALTHY_SINCE)
    if not isinstance(text, str):
        return {}
    try:
        return time_map(json.loads(text))
    except ValueError:
        return {}


def since_text(since: Mapping[str, datetime]) -> str | None:
    """The annotation's value (None: no timer, the annotation goes)."""
    if not since:
        return None
    return json.dumps({c: format_time(t) for c, t in sorted(since.items())}, separators=(",", ":"))


def task(cluster: str, replicas: int, application: Mapping[str, Any], producer: str) -> dict[
        str, Any]:
    """``buildTaskOptions`` then ``GracefulEvictCluster``'s task."""
    purge = as_str(application.get("purgeMode")) or GRACEFUL[0]
    out: dict[str, Any] = {"fromCluster": cluster, "purgeMode": purge, "reason": REASON,
                           "producer": producer}
    if replicas > 0:
        out["replicas"] = replicas
    if purge in GRACEFUL:
        seconds = as_int(application.get("gracePeriodSeconds"))
        if seconds is not None:
            out["gracePeriodSeconds"] = seconds
    elif purge == NEVER:
        out["suppressDeletion"] = True
    return out


def fail_over(targets: Sequence[Target], tasks: Sequence[Mapping[str, Any]],
              health: Mapping[str, str], since: Mapping[str, datetime],
              application: Mapping[str, Any] | None, now: datetime, *,
              producer: str = RB_PRODUCER) -> Failover:
    """One pass of the controller over a binding at ``now``; ``health``: cluster -> the
    health ``status.aggregatedStatus`` reports, in its order."""
    if application is None or not health:
        return Failover(clusters=tuple(targets), tasks=tuple(tasks), since={})
    conditions = as_map(application.get("decisionConditions"))
    toleration = as_int(conditions.get("tolerationSeconds"))
    if toleration is None:
        toleration = DEFAULT_TOLERATION_SECONDS
    pending = {as_str(t.get("fromCluster")) for t in tasks}
    timers = dict(since)
    due: list[str] = []
    for cluster, state in health.items():
        if state != UNHEALTHY or cluster in pending:
            continue
        started = timers.get(cluster)
        if started is None:
            timers[cluster] = now
        elif now > after(started, toleration):
            due.append(cluster)
    kept: list[Target] = []
    added: list[Mapping[str, Any]] = []
    for target in targets:
        if target.name not in due:
            kept.append(target)
            continue
        if target.name not in pending:
            added.append(task(target.name, target.replicas, application, producer))
            pending.add(target.name)
    remaining = {t.name for t in kept}
    timers = {c: t for c, t in timers.items()
              if c in remaining and health.get(c) != HEALTHY}
    evicted = tuple(t.name for t in targets if t.name in due)
    return Failover(clusters=tuple(kept), tasks=(*tasks, *added), since=timers, evicted=evicted)


def next_due(since: Mapping[str, datetime],
             application: Mapping[str, Any] | None) -> datetime | None:
    """When the first running timer reaches ``decisionConditions.tolerationSeconds`` (the
    copy is evicted once the time is strictly past it)."""
    if application is None or not since:
        return None
    toleration = as_int(as_map(application.get("decisionConditions")).get("tolerationSeconds"))
    seconds = DEFAULT_TOLERATION_SECONDS if toleration is None else toleration
    return min(after(started, seconds) for started in since.values())
