"""When a graceful eviction task ends (and the evicted copy is deleted), as a pure function of
the tasks, the binding's schedule and health, and the time.

Read from Karmada's ``pkg/controllers/gracefuleviction/evictiontask.go`` (``assessEvictionTasks``,
``assessSingleTask``) and the binding controllers beside it: a task without a
``creationTimestamp`` is stamped with the time and kept (the taint manager leaves it unset);
a task with ``suppressDeletion`` stays while it is true and ends at once when it is false; any
other task ends once its grace period (``gracePeriodSeconds``, else the controller's
``--graceful-eviction-timeout``, ten minutes by default) has strictly passed, or once the
scheduler has observed the binding's generation and every cluster of ``spec.clusters`` reports a
``Healthy`` copy in ``status.aggregatedStatus``. Karmada reads the wall clock for the timeout;
here the time is an input, so a plan is the same whenever it is run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final

import msgspec

from kubesemantics.lenient_json import as_int, as_str
from kubesemantics.timestamps import format_time, parse_time
from spreadbus.features.propagation.core.deadline import after

DEFAULT_TIMEOUT: Final = timedelta(minutes=10)
HEALTHY: Final = "Healthy"


class Assessment(msgspec.Struct, frozen=True):
    kept: tuple[Mapping[str, Any], ...]
    removed: tuple[str, ...]
    """The clusters whose evicted copy is deleted now, in task order."""


def all_healthy(targets: Sequence[str], health: Mapping[str, str]) -> bool:
    """``allScheduledResourceInHealthyState``: a target without a reported status is not."""
    return all(health.get(name) == HEALTHY for name in targets)


def task_ends(task: Mapping[str, Any], *, created: datetime, now: datetime,
              timeout: timedelta, scheduled: bool, healthy: bool) -> bool:
    """``assessSingleTask`` for a task already stamped ``created``."""
    suppress = task.get("suppressDeletion")
    if isinstance(suppress, bool):
        return not suppress
    seconds = as_int(task.get("gracePeriodSeconds"))
    if now > after(created, timeout.total_seconds() if seconds is None else seconds):
        return True
    return scheduled and healthy


def assess(tasks: Sequence[Mapping[str, Any]], now: datetime, *, targets: Sequence[str],
           health: Mapping[str, str], scheduled: bool,
           timeout: timedelta = DEFAULT_TIMEOUT) -> Assessment:
    """``scheduled``: the scheduler has observed the binding's current generation (Karmada
    judges health only then: an older status may describe the old schedule)."""
    healthy = all_healthy(targets, health)
    kept: list[Mapping[str, Any]] = []
    removed: list[str] = []
    for task in tasks:
        created = parse_time(task.get("creationTimestamp"))
        if created is None:
            kept.append({**task, "creationTimestamp": format_time(now)})
            continue
        if task_ends(task, created=created, now=now, timeout=timeout, scheduled=scheduled,
                     healthy=healthy):
            removed.append(as_str(task.get("fromCluster")))
        else:
            kept.append(task)
    return Assessment(kept=tuple(kept), removed=tuple(removed))


def next_end(tasks: Sequence[Mapping[str, Any]], *,
             timeout: timedelta = DEFAULT_TIMEOUT) -> datetime | None:
    """When the first of ``tasks`` runs out of its grace period (a task ends once the time is
    strictly past it): when the planner must look again with no event to wake it. A task
    ending on health ends on the status change that reports it."""
    ends = []
    for task in tasks:
        created = parse_time(task.get("creationTimestamp"))
        if created is None or isinstance(task.get("suppressDeletion"), bool):
            continue
        seconds = as_int(task.get("gracePeriodSeconds"))
        ends.append(after(created, timeout.total_seconds() if seconds is None else seconds))
    return min(ends) if ends else None
