"""Where a pod is in its life: its phase, whether it has ended, is being deleted, is Ready.

Each controller decides "active" and "ready" from these fields; the features read them here and
name the reading they need. Fields of the wrong type read as absent, never raise.

Deletion is read three ways. They agree on every object the API server writes (no
``deletionTimestamp``, or an RFC 3339 time) and differ only on a hand-written value the API
server would refuse, which each feature has always read its own way and still does:
:func:`deleting` (any value but null or ``""``), :func:`deleting_any_value` (any value but null)
and :func:`deleting_truthy` (a value Python holds true).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from kubesemantics.lenient_json import as_map, as_str

Obj = Mapping[str, Any]

ENDED_PHASES: Final = frozenset({"Succeeded", "Failed"})
"""Phases a pod never leaves."""


def _deletion_timestamp(obj: Obj) -> object:
    return as_map(obj.get("metadata")).get("deletionTimestamp")


def deleting(obj: Obj) -> bool:
    """``DeletionTimestamp != nil``, an empty string read as unset (PodUnavailableBudget)."""
    return _deletion_timestamp(obj) not in (None, "")


def deleting_any_value(obj: Obj) -> bool:
    """``DeletionTimestamp != nil``, any value but null read as set (UnitedDeployment)."""
    return _deletion_timestamp(obj) is not None


def deleting_truthy(obj: Obj) -> bool:
    """``DeletionTimestamp != nil``, only a value Python holds true read as set
    (WorkloadSpread)."""
    return bool(_deletion_timestamp(obj))


def phase(pod: Obj) -> str:
    """``status.phase``; ``""`` when absent or not a string."""
    return as_str(as_map(pod.get("status")).get("phase"))


def ended(pod: Obj) -> bool:
    """Succeeded or Failed: the pod's containers will not run again."""
    return phase(pod) in ENDED_PHASES


def active(pod: Obj, deleting: Callable[[Obj], bool] = deleting) -> bool:
    """``controller.IsPodActive``: not ended and not being deleted (read by ``deleting``)."""
    return phase(pod) not in ENDED_PHASES and not deleting(pod)


def active_deleting_any_value(pod: Obj) -> bool:
    """:func:`active`, any ``deletionTimestamp`` but null read as being deleted
    (UnitedDeployment)."""
    return active(pod, deleting_any_value)


def active_deleting_truthy(pod: Obj) -> bool:
    """:func:`active`, only a ``deletionTimestamp`` Python holds true read as being deleted
    (WorkloadSpread): an ended pod no longer counts in any subset."""
    return active(pod, deleting_truthy)


def ready_condition(pod: Obj) -> Obj | None:
    """The first ``Ready`` condition whose status is ``True``, if any.

    ``podutil.IsPodReady`` reads only the first ``Ready`` condition; the API server keeps one
    condition per type, where the two readings agree."""
    conditions = as_map(pod.get("status")).get("conditions")
    if type(conditions) is not list:
        return None
    for condition in conditions:
        if (
            (type(condition) is dict or isinstance(condition, Mapping))
            and condition.get("type") == "Ready"
            and condition.get("status") == "True"
        ):
            return condition
    return None


def has_ready_condition(pod: Obj) -> bool:
    """``podutil.IsPodReady``: a ``Ready`` condition is ``True`` (see :func:`ready_condition`)."""
    return ready_condition(pod) is not None


def running_and_ready(pod: Obj) -> bool:
    """``util.IsRunningAndReady``: Running, not being deleted (read by :func:`deleting`), and
    a ``Ready`` condition ``True``."""
    return phase(pod) == "Running" and not deleting(pod) and has_ready_condition(pod)
