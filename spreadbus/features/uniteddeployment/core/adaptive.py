"""The default Adaptive strategy: which subsets cannot schedule their pods this round.

A pod is stuck (:func:`pending_timeout`) when it is Pending, unbound, not being deleted, carries
``PodScheduled=False`` with reason ``Unschedulable``, and was *created* more than
``rescheduleCriticalSeconds`` ago (strictly). The clock starts at creation, not at the
condition, so a pod that waited for an image pull does not get extra time.

Per existing subset that has a status entry, :func:`default_adaptive_round` decides:

1. A ``Schedulable=False`` condition younger than ``unschedulableDuration`` keeps the subset
   unschedulable, with a wake-up when the window ends. An older one flips to
   ``True``/``recover`` ("unschedulable subset recovered after 300.000000 seconds", Go ``%f``).
2. If the workload has fewer ready than total replicas, its stuck pods are counted; any stuck pod
   makes the subset unschedulable, writes ``False``/``reschedule`` "timeout pending pods found"
   and asks for a wake-up after ``unschedulableDuration``. Pods not stuck yet ask for a wake-up
   when they would be.

The condition is written with the subset rule (:func:`conditions.set_subset_condition`): while
pods stay stuck the condition is unchanged, so the window is *not* extended; when it ends the
subset flips to True and, if pods are still stuck, straight back to False with a fresh time.

Signatures::

    pending_timeout(pod, timeout, now) -> PendingCheck
    default_adaptive_round(conditions, *, replicas, ready_replicas, pods, strategy, now)
        -> AdaptiveVerdict

Only positive wake-ups are reported (Kruise's requeue store drops the rest).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from kubesemantics.lenient_json import as_map, as_str
from kubesemantics.timestamps import parse_time
from spreadbus.features.uniteddeployment.core.conditions import (
    FALSE,
    JSON,
    TRUE,
    copy_conditions,
    find_condition,
    set_subset_condition,
)
from spreadbus.features.uniteddeployment.core.model import SCHEDULABLE, ScheduleStrategy

RECOVER = "recover"
RESCHEDULE = "reschedule"
TIMEOUT_PENDING_MESSAGE = "timeout pending pods found"

# Go's zero time: what a missing timestamp reads as, so arithmetic on it stays in the past.
GO_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class PendingCheck:
    """``timed_out``, or ``recheck_after`` (how long until it would be); None when neither."""

    timed_out: bool
    recheck_after: timedelta | None = None


def time_of(value: object) -> datetime:
    """A Kubernetes timestamp; missing or unreadable reads as Go's zero time."""
    return parse_time(value) or GO_ZERO_TIME


def pod_condition(pod: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    found = as_map(pod.get("status")).get("conditions")
    return find_condition(found, type_)


def _unschedulable_condition(pod: Mapping[str, Any]) -> bool:
    found = as_map(pod.get("status")).get("conditions")
    if not isinstance(found, list):
        return False
    return any(
        isinstance(c, Mapping)
        and as_str(c.get("type")) == "PodScheduled"
        and as_str(c.get("status")) == FALSE
        and as_str(c.get("reason")) == "Unschedulable"
        for c in found
    )


def unschedulable_pending(pod: Mapping[str, Any]) -> bool:
    """Pending, unbound, not being deleted and marked ``Unschedulable``: a pod whose creation
    time alone decides whether it is stuck."""
    meta = as_map(pod.get("metadata"))
    return (
        meta.get("deletionTimestamp") is None
        and as_str(as_map(pod.get("status")).get("phase")) == "Pending"
        and not as_str(as_map(pod.get("spec")).get("nodeName"))
        and _unschedulable_condition(pod)
    )


def pending_timeout(pod: Mapping[str, Any], timeout: timedelta, now: datetime) -> PendingCheck:
    """Whether the pod has failed to schedule for longer than ``timeout`` since its creation."""
    if not unschedulable_pending(pod):
        return PendingCheck(False)
    deadline = time_of(as_map(pod.get("metadata")).get("creationTimestamp")) + timeout
    if deadline < now:
        return PendingCheck(True)
    return PendingCheck(False, deadline - now)


def earliest(durations: Sequence[timedelta | None]) -> timedelta | None:
    """The smallest positive duration, as Kruise's requeue store keeps it."""
    positive = [d for d in durations if d is not None and d > timedelta(0)]
    return min(positive) if positive else None


def recovered_message(seconds: int) -> str:
    return f"unschedulable subset recovered after {float(seconds):f} seconds"


@dataclass(frozen=True)
class AdaptiveVerdict:
    """One subset's round: the allocator's flag, the new conditions and the wake-up."""

    unschedulable: bool
    pending_pods: int
    conditions: list[JSON] = field(default_factory=list)
    requeue_after: timedelta | None = None


def default_adaptive_round(
    conditions: object,
    *,
    replicas: int,
    ready_replicas: int,
    pods: Sequence[Mapping[str, Any]],
    strategy: ScheduleStrategy,
    now: datetime,
) -> AdaptiveVerdict:
    """Decide one existing subset under the default Adaptive strategy.

    ``conditions`` is the subset's ``status.subsetStatuses[].conditions``; ``replicas`` and
    ``ready_replicas`` are its workload's ``status.replicas`` and ``status.readyReplicas``;
    ``pods`` are the workload's pods.
    """
    window = timedelta(seconds=strategy.unschedulable_duration)
    critical = timedelta(seconds=strategy.reschedule_critical)
    unschedulable = False
    wakeups: list[timedelta | None] = []
    written: list[JSON] = copy_conditions(conditions)

    current = find_condition(conditions, SCHEDULABLE)
    if current is not None and as_str(current.get("status")) == FALSE:
        recover_at = time_of(current.get("lastTransitionTime")) + window
        if now < recover_at:
            unschedulable = True
            wakeups.append(recover_at - now)
        else:
            written = set_subset_condition(
                written,
                SCHEDULABLE,
                TRUE,
                RECOVER,
                recovered_message(strategy.unschedulable_duration),
                now=now,
            )

    pending = 0
    if ready_replicas < replicas:
        for pod in pods:
            check = pending_timeout(pod, critical, now)
            if check.timed_out:
                pending += 1
            wakeups.append(check.recheck_after)
        if pending > 0:
            unschedulable = True
            written = set_subset_condition(
                written, SCHEDULABLE, FALSE, RESCHEDULE, TIMEOUT_PENDING_MESSAGE, now=now
            )
            wakeups.append(window)
    return AdaptiveVerdict(unschedulable, pending, written, earliest(wakeups))
