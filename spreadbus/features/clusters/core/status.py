"""The status and taints a member's Cluster object should have, from its latest heartbeat.

As Karmada's two controllers do between them (:mod:`spreadbus.clusterregistry.cluster_health`):
a heartbeat younger than the grace period sets the Ready condition from the API server's health
(and, when healthy, the version, node summary and resource summary), a move between True and not
True once it has held for the success or failure threshold, as karmada-agent's condition cache
holds it back (so heartbeats flapping between healthy and not leave Ready as it was); with no
heartbeat within the
grace period Ready turns Unknown; the NoSchedule taints follow Ready. A heartbeat older than the
grace period is not applied again, so an Unknown cluster stays Unknown, with the time it turned
so, until a new one comes. The member's nodes and pods are used only once both are listed; until
then the summaries stay as they are.

Time is a parameter (seconds since the epoch); nothing here reads a clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from kubesemantics.lenient_json import as_map, as_str
from spreadbus.clusterregistry.cluster_health import (
    FAILURE_THRESHOLD,
    MONITOR_GRACE_PERIOD,
    STARTUP_GRACE_PERIOD,
    SUCCESS_THRESHOLD,
    FlapGuard,
    MemberReport,
    monitored_conditions,
    reported_status,
    scheduling_taints,
)
from spreadbus.clusterregistry.heartbeat import Heartbeat
from spreadbus.clusterregistry.resource_summary import PodRequest

Obj = Mapping[str, Any]
JSON = dict[str, Any]
_SUMMARIES = ("nodeSummary", "resourceSummary")


@dataclass(frozen=True)
class MemberInputs:
    """What the control plane holds of a member: its latest heartbeat and, once listed, its
    nodes and pods, each pod as it is or as its request (``None`` while either is not listed
    completely)."""

    heartbeat: Heartbeat | None
    nodes: Sequence[Obj] | None = None
    pods: Sequence[Obj | PodRequest] | None = None
    guard: FlapGuard | None = None
    """The Ready status its heartbeats last reported and since when (None: none seen yet), as
    the previous look left it (:attr:`ClusterState.guard`)."""


@dataclass(frozen=True)
class ClusterState:
    status: JSON
    taints: list[JSON]
    guard: FlapGuard | None = None
    """What to give the next look as :attr:`MemberInputs.guard`."""


def moment(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def created_at(cluster: Obj) -> datetime | None:
    text = as_str(as_map(cluster.get("metadata")).get("creationTimestamp"))
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None
    except ValueError:
        return None
    return stamp if stamp is None or stamp.tzinfo else stamp.replace(tzinfo=UTC)


def cluster_state(cluster: Obj, member: MemberInputs, now: float, *,
                  grace_period: timedelta = MONITOR_GRACE_PERIOD,
                  startup_grace_period: timedelta = STARTUP_GRACE_PERIOD,
                  success_threshold: timedelta = SUCCESS_THRESHOLD,
                  failure_threshold: timedelta = FAILURE_THRESHOLD) -> ClusterState:
    """The Cluster's status and ``spec.taints`` at ``now``. A heartbeat moving Ready between
    True and not True counts once the move has held for its threshold, counted from the first
    heartbeat that reported it (:func:`damped_ready`, with ``member.guard``)."""
    status: JSON = dict(as_map(cluster.get("status")))
    beat = member.heartbeat
    at = moment(now)
    guard = member.guard
    if beat is not None and not now > beat.at + grace_period.total_seconds():
        listed = member.nodes is not None and member.pods is not None
        report = MemberReport(beat.api_server, beat.kubernetesVersion,
                              member.nodes or (), member.pods or ())
        reported, guard = reported_status(status, report, guard, moment(beat.at),
                                          success_threshold=success_threshold,
                                          failure_threshold=failure_threshold)
        if not listed:
            for key in _SUMMARIES:
                reported.pop(key, None)
                if key in status:
                    reported[key] = status[key]
        status = reported
    created = created_at(cluster) or at
    conditions = monitored_conditions(
        status.get("conditions"), created=created,
        last_heartbeat=None if beat is None else moment(beat.at), now=at,
        grace_period=grace_period, startup_grace_period=startup_grace_period)
    if conditions or "conditions" in status:
        status["conditions"] = conditions
    taints = scheduling_taints(as_map(cluster.get("spec")).get("taints"), conditions, at)
    return ClusterState(status, taints, guard)


def next_look(cluster: Obj, beat: Heartbeat | None, *, grace_period: timedelta,
              startup_grace_period: timedelta) -> float | None:
    """When the cluster's Ready may turn Unknown without any new event (just after its grace
    period ends), or None when there is nothing to wait for."""
    if beat is not None:
        return beat.at + grace_period.total_seconds() + 0.001
    created = created_at(cluster)
    if created is None:
        return None
    return created.timestamp() + startup_grace_period.total_seconds() + 0.001
