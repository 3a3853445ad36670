"""Adaptive rescheduling: which pods are stuck, and each subset's ``Schedulable`` condition.

Enabled only for ``type: Adaptive`` with an ``adaptive`` block whose
``rescheduleCriticalSeconds`` is positive; otherwise the condition is removed from every subset.
A pod is stuck when it is pending, unbound and ``PodScheduled=False/Unschedulable`` for longer than
``rescheduleCriticalSeconds`` since it was created. A subset (not the last) with stuck pods turns
``Schedulable=False`` (reason ``PodUnschedulable``) and its stuck pods are evicted so the workload
re-creates them, which the webhook then sends to the next subset. The condition turns back to
``True`` (``Sufficient``) once the recovery window (``recover_after``, Kruise's 300 s
:data:`RECOVER_AFTER` by default) has passed since it turned False, when the subset has no stuck
pods at that moment; a ``False`` condition without ``lastTransitionTime`` (Kruise reads Go's zero
time) has long passed it and recovers at once. The last subset is always ``Schedulable=True``, and
its pods are never evicted: there is nowhere else for them to go.

Each function also reports when it next needs to look again (a pod's deadline, the recovery time),
so the planner can schedule one wake-up instead of polling.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.model import (
    SCHEDULABLE,
    Condition,
    SubsetStatus,
    truncate,
)
from spreadbus.features.workloadspread.core.pod_state import Pod

RECOVER_AFTER = timedelta(seconds=300)
POD_UNSCHEDULABLE = "PodUnschedulable"
SUFFICIENT = "Sufficient"


def stuck_pods(
    pods: Iterable[Pod], timeout: timedelta, now: datetime
) -> tuple[list[Pod], list[datetime]]:
    """The pods past their deadline, and the deadlines still ahead (for a wake-up)."""
    stuck: list[Pod] = []
    ahead: list[datetime] = []
    for pod in pods:
        deadline = pod_state.unschedulable_deadline(pod, timeout)
        if deadline is None:
            continue
        if deadline < now:
            stuck.append(pod)
        else:
            ahead.append(deadline)
    return stuck, ahead


def set_condition(current: Condition | None, status: str, reason: str, now: datetime) -> Condition:
    """``setWorkloadSpreadSubsetCondition``: same status keeps its transition time."""
    if current is not None and current.status == status:
        if current.reason == reason:
            return current
        return Condition(SCHEDULABLE, status, reason, "", current.last_transition_time)
    return Condition(SCHEDULABLE, status, reason, "", truncate(now))


def schedulable_condition(
    old: SubsetStatus | None,
    *,
    has_stuck: bool,
    last: bool,
    now: datetime,
    recover_after: timedelta = RECOVER_AFTER,
) -> tuple[Condition, datetime | None]:
    """The subset's new ``Schedulable`` condition and, if it must be revisited, when."""
    previous = old.condition(SCHEDULABLE) if old is not None else None
    if last:
        return set_condition(previous, "True", SUFFICIENT, now), None
    if previous is None:
        if has_stuck:
            return Condition(SCHEDULABLE, "False", POD_UNSCHEDULABLE, "", truncate(now)), None
        return Condition(SCHEDULABLE, "True", SUFFICIENT, "", truncate(now)), None
    if has_stuck:
        return set_condition(previous, "False", POD_UNSCHEDULABLE, now), None
    if previous.status == "False":
        # No lastTransitionTime reads as Go's zero time, long past: the subset recovers now.
        since = previous.last_transition_time
        if since is None or since + recover_after < now:
            return set_condition(previous, "True", SUFFICIENT, now), None
        return previous, since + recover_after
    return previous, None
