"""A member cluster's ``Ready`` condition and scheduling taints, decided as Karmada decides them.

Karmada splits it in two, and so does this module:

- The member's side (karmada-agent's cluster-status controller,
  ``pkg/controllers/status/cluster_status_controller.go`` and ``cluster_condition_cache.go``):
  the agent probes its own API server and reports Ready ``True`` (``ClusterReady``), ``False``
  when the server answers but not healthy (``ClusterNotReady``), ``False`` when it does not
  answer (``ClusterNotReachable``). A change between True and not-True is only reported once
  it has held for the success (recovery) or failure threshold, 30 s each by default, so one
  failed probe does not flap the cluster (:func:`damped_ready`). Only a Ready, healthy member
  reports its version and resource summary; otherwise the previous ones stay
  (:func:`reported_status`).
- The control plane's side (the cluster controller's health monitor,
  ``pkg/controllers/cluster/cluster_controller.go``, ``tryUpdateClusterHealth`` and
  ``taintClusterByCondition``): a member whose last heartbeat (a status report or a lease
  renewal) is older than ``cluster-monitor-grace-period`` (40 s) is set Ready ``Unknown``
  (``ClusterStatusUnknown``); one that never reported a condition gets
  ``cluster-startup-grace-period`` (60 s) from its creation before it is set ``Unknown``
  (``ClusterStatusNeverUpdated``) (:func:`monitored_conditions`). The taints follow the
  condition: ``False`` (or no condition yet) → ``cluster.karmada.io/not-ready:NoSchedule``,
  ``Unknown`` → ``cluster.karmada.io/unreachable:NoSchedule``, ``True`` → neither
  (:func:`scheduling_taints`).

Karmada measures the heartbeat by the time its monitor noticed it; here it is the time the
heartbeat carries (its time on the bus), so replaying the same heartbeats gives the same status.
Time is always a parameter; nothing here reads a clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any, Final

from kubesemantics.lenient_json import as_map, as_str
from spreadbus.clusterregistry.resource_summary import PodRequest, node_summary, resource_summary

Obj = Mapping[str, Any]
JSON = dict[str, Any]

READY: Final = "Ready"
TRUE: Final = "True"
FALSE: Final = "False"
UNKNOWN: Final = "Unknown"

CLUSTER_READY: Final = "ClusterReady"
CLUSTER_NOT_READY: Final = "ClusterNotReady"
CLUSTER_NOT_REACHABLE: Final = "ClusterNotReachable"
STATUS_UNKNOWN: Final = "ClusterStatusUnknown"
STATUS_NEVER_UPDATED: Final = "ClusterStatusNeverUpdated"

TAINT_NOT_READY: Final = "cluster.karmada.io/not-ready"
TAINT_UNREACHABLE: Final = "cluster.karmada.io/unreachable"
NO_SCHEDULE: Final = "NoSchedule"

MONITOR_GRACE_PERIOD: Final = timedelta(seconds=40)
"""karmada-controller-manager's ``--cluster-monitor-grace-period`` default."""
STARTUP_GRACE_PERIOD: Final = timedelta(seconds=60)
"""karmada-controller-manager's ``--cluster-startup-grace-period`` default."""
SUCCESS_THRESHOLD: Final = timedelta(seconds=30)
FAILURE_THRESHOLD: Final = timedelta(seconds=30)
"""karmada-agent's ``--cluster-success-threshold`` and ``--cluster-failure-threshold``."""


class ApiServerHealth(Enum):
    """What a member's agent found when it probed its API server (``/readyz``)."""

    HEALTHY = "Healthy"
    UNHEALTHY = "Unhealthy"
    """It answered, but not ok."""
    UNREACHABLE = "Unreachable"


def format_time(moment: datetime) -> str:
    """``metav1.Time`` as serialized: UTC, whole seconds."""
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def find_condition(conditions: object, type_: str = READY) -> JSON | None:
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, Mapping) and condition.get("type") == type_:
            return dict(condition)
    return None


def set_condition(conditions: object, new: Obj, now: datetime) -> list[JSON]:
    """``meta.SetStatusCondition``: replace the condition of that type (its transition time
    kept unless the status changed) or append it."""
    out = [dict(c) for c in (conditions if isinstance(conditions, list) else ())
           if isinstance(c, Mapping)]
    for i, old in enumerate(out):
        if old.get("type") != new.get("type"):
            continue
        updated = dict(old)
        if old.get("status") != new.get("status"):
            updated["status"] = new.get("status")
            updated["lastTransitionTime"] = new.get("lastTransitionTime") or format_time(now)
        for key in ("reason", "message", "observedGeneration"):
            if key in new:
                updated[key] = new[key]
        out[i] = updated
        return out
    added = dict(new)
    added.setdefault("lastTransitionTime", format_time(now))
    out.append(added)
    return out


# -- the member's side ---------------------------------------------------------------------------

def observed_ready(health: ApiServerHealth) -> JSON:
    """The Ready condition one probe gives (no transition time: it is set when written)."""
    if health is ApiServerHealth.UNREACHABLE:
        return {"type": READY, "status": FALSE, "reason": CLUSTER_NOT_REACHABLE,
                "message": "the member's API server did not answer"}
    if health is ApiServerHealth.UNHEALTHY:
        return {"type": READY, "status": FALSE, "reason": CLUSTER_NOT_READY,
                "message": "the member's API server answered its health check with an error"}
    return {"type": READY, "status": TRUE, "reason": CLUSTER_READY,
            "message": "the member's API server is healthy and takes workloads"}


@dataclass(frozen=True)
class FlapGuard:
    """What the agent remembers between probes: the Ready status it last observed and since
    when (None: since before it started)."""

    status: str
    since: datetime | None = None


def damped_ready(guard: FlapGuard | None, current: Obj | None, observed: Obj, now: datetime, *,
                 success_threshold: timedelta = SUCCESS_THRESHOLD,
                 failure_threshold: timedelta = FAILURE_THRESHOLD) -> tuple[JSON, FlapGuard]:
    """The Ready condition to report, given the cluster's ``current`` one: a move between True
    and not-True waits for its threshold, measured from the first probe that observed it."""
    observed_status = as_str(observed.get("status"))
    if guard is None:  # the member just joined
        return dict(observed), FlapGuard(observed_status)
    if current is None:
        return dict(observed), guard
    if guard.status != observed_status:
        guard = FlapGuard(observed_status, now)
    threshold = success_threshold if observed_status == TRUE else failure_threshold
    current_true = current.get("status") == TRUE
    crossing = (observed_status == TRUE) != current_true
    since = guard.since or datetime.min.replace(tzinfo=UTC)
    if crossing and now < since + threshold:
        return dict(current), guard
    return dict(observed), guard


@dataclass(frozen=True)
class MemberReport:
    """One report of a member's agent: its probe and, when healthy, what it lists."""

    health: ApiServerHealth
    kubernetes_version: str = ""
    nodes: Sequence[Obj] = ()
    pods: Sequence[Obj | PodRequest] = ()


def reported_status(status: Obj, report: MemberReport, guard: FlapGuard | None, now: datetime, *,
                    success_threshold: timedelta = SUCCESS_THRESHOLD,
                    failure_threshold: timedelta = FAILURE_THRESHOLD,
                    ) -> tuple[JSON, FlapGuard]:
    """The Cluster's status after one report: the (damped) Ready condition always; the version,
    node and resource summaries only from a member that is healthy and Ready."""
    current = find_condition(status.get("conditions"))
    ready, guard = damped_ready(guard, current, observed_ready(report.health), now,
                                success_threshold=success_threshold,
                                failure_threshold=failure_threshold)
    out = dict(status)
    if report.health is ApiServerHealth.HEALTHY and ready.get("status") == TRUE:
        # As Karmada writes them: an empty version is left out, the summaries are always there
        # (``{}`` for a member without nodes or pods).
        out["kubernetesVersion"] = report.kubernetes_version
        if not report.kubernetes_version:
            del out["kubernetesVersion"]
        out["nodeSummary"] = node_summary(report.nodes)
        out["resourceSummary"] = resource_summary(report.nodes, report.pods)
    out["conditions"] = set_condition(status.get("conditions"), ready, now)
    return out, guard


# -- the control plane's side --------------------------------------------------------------------

def monitored_conditions(conditions: object, *, created: datetime, last_heartbeat: datetime | None,
                         now: datetime, grace_period: timedelta = MONITOR_GRACE_PERIOD,
                         startup_grace_period: timedelta = STARTUP_GRACE_PERIOD) -> list[JSON]:
    """The conditions once the health monitor has looked at ``now``: Ready turns Unknown when no
    heartbeat came within the grace period (the startup one while no Ready was ever reported),
    counted from the last heartbeat, or from the creation when none came."""
    listed = [dict(c) for c in (conditions if isinstance(conditions, list) else ())
              if isinstance(c, Mapping)]
    ready = find_condition(listed)
    period = startup_grace_period if ready is None else grace_period
    probe = created if last_heartbeat is None else max(created, last_heartbeat)
    if not now > probe + period:
        return listed
    if ready is None:
        listed.append({"type": READY, "status": UNKNOWN, "reason": STATUS_NEVER_UPDATED,
                       "message": "the member's agent has never reported a status",
                       "lastTransitionTime": format_time(now)})
        return listed
    if ready.get("status") == UNKNOWN:
        return listed
    unknown = {**ready, "status": UNKNOWN, "reason": STATUS_UNKNOWN,
               "message": "the member's agent stopped reporting its status",
               "lastTransitionTime": format_time(now)}
    return [unknown if c.get("type") == READY else c for c in listed]


def _same_taint(a: Obj, key: str) -> bool:
    return a.get("key") == key and a.get("effect") == NO_SCHEDULE


def scheduling_taints(taints: object, conditions: object, now: datetime) -> list[JSON]:
    """``spec.taints`` after the cluster controller's ``taintClusterByCondition``: its two
    NoSchedule taints added or removed by the Ready status, other taints kept in order, an
    added taint stamped ``timeAdded``; unchanged when nothing is to add or remove."""
    listed = [dict(t) for t in (taints if isinstance(taints, list) else ())
              if isinstance(t, Mapping)]
    ready = find_condition(conditions)
    status = None if ready is None else as_str(ready.get("status"))
    add: tuple[str, ...]
    remove: tuple[str, ...]
    if status is None:
        add, remove = (TAINT_NOT_READY,), ()
    elif status == FALSE:
        add, remove = (TAINT_NOT_READY,), (TAINT_UNREACHABLE,)
    elif status == UNKNOWN:
        add, remove = (TAINT_UNREACHABLE,), (TAINT_NOT_READY,)
    elif status == TRUE:
        add, remove = (), (TAINT_NOT_READY, TAINT_UNREACHABLE)
    else:
        return listed
    to_add = [k for k in add if not any(_same_taint(t, k) for t in listed)]
    to_remove = [k for k in remove if any(_same_taint(t, k) for t in listed)]
    if not to_add and not to_remove:
        return listed
    kept = [t for t in listed if not any(_same_taint(t, k) for k in to_remove)]
    return kept + [{"key": k, "effect": NO_SCHEDULE, "timeAdded": format_time(now)}
                   for k in to_add]


def ready_status(cluster: Obj) -> str:
    """What ``kubectl get clusters`` prints under READY: the condition's status, Unknown when
    there is none."""
    ready = find_condition(as_map(cluster.get("status")).get("conditions"))
    return as_str(ready.get("status")) if ready is not None else UNKNOWN
