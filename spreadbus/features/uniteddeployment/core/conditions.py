"""Writing UnitedDeployment conditions the way Kruise does, over JSON condition lists.

Kruise has two write rules, and the difference is observable in ``lastTransitionTime``:

- :func:`set_ud_condition` (``status.conditions``): same status and reason leaves the list
  untouched (the message is *not* refreshed); same status with a new reason keeps the old
  transition time; anything else takes ``now``. The written condition is removed and appended,
  so it moves to the end of the list.
- :func:`set_subset_condition` (``status.subsetStatuses[].conditions``, type ``Schedulable``):
  same status and reason leaves the list untouched; otherwise the condition is rewritten in
  place (or appended) with ``now``, even when only the reason changed.

Timing rules read the transition time back (the Adaptive unschedulable window starts there), so
which rule writes a condition matters. Inputs are never modified; every function answers a new
list of new dicts. Times are written as Kubernetes does (RFC 3339, whole seconds, ``Z``).

Signatures::

    find_condition(conditions, type_) -> Mapping | None
    set_ud_condition(conditions, type_, status, reason, message, *, now) -> list[dict]
    set_subset_condition(conditions, type_, status, reason, message, *, now) -> list[dict]
    remove_condition(conditions, type_) -> list[dict]
    copy_conditions(conditions) -> list[dict]
    set_updated_condition(conditions, *, current_revision, expected_revision, now) -> list[dict]
    format_time(moment) -> str
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from kubesemantics.lenient_json import as_str

JSON = dict[str, Any]
Conditions = Sequence[Mapping[str, Any]]

TRUE = "True"
FALSE = "False"
UNITED_DEPLOYMENT_UPDATED = "UnitedDeploymentUpdated"
REVISION_UPDATING = "UnitedDeploymentRevisionUpdating"
REVISION_UPDATED = "UnitedDeploymentRevisionUpdated"


def format_time(moment: datetime) -> str:
    """``metav1.Time`` as serialized: UTC, whole seconds."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition_json(type_: str, status: str, reason: str, message: str, transition: object) -> JSON:
    """One condition in Kruise's field order; empty reason and message are omitted."""
    found: JSON = {"type": type_, "status": status, "lastTransitionTime": transition}
    if reason:
        found["reason"] = reason
    if message:
        found["message"] = message
    return found


def find_condition(conditions: object, type_: str) -> Mapping[str, Any] | None:
    """The first condition of that type; entries that are not objects are skipped."""
    if not isinstance(conditions, Sequence) or isinstance(conditions, str):
        return None
    for item in conditions:
        if isinstance(item, Mapping) and as_str(item.get("type")) == type_:
            return item
    return None


def copy_conditions(conditions: object) -> list[JSON]:
    """A fresh list of fresh dicts; entries that are not objects are dropped."""
    if not isinstance(conditions, Sequence) or isinstance(conditions, str):
        return []
    return [dict(item) for item in conditions if isinstance(item, Mapping)]


def _unchanged(current: Mapping[str, Any] | None, status: str, reason: str) -> bool:
    return (
        current is not None
        and as_str(current.get("status")) == status
        and as_str(current.get("reason")) == reason
    )


def remove_condition(conditions: object, type_: str) -> list[JSON]:
    return [c for c in copy_conditions(conditions) if as_str(c.get("type")) != type_]


def set_ud_condition(
    conditions: object, type_: str, status: str, reason: str, message: str, *, now: datetime
) -> list[JSON]:
    """The UD-level rule: a new reason under the same status keeps the transition time."""
    current = find_condition(conditions, type_)
    if _unchanged(current, status, reason):
        return copy_conditions(conditions)
    transition: object = format_time(now)
    if current is not None and as_str(current.get("status")) == status:
        transition = current.get("lastTransitionTime")
    kept = remove_condition(conditions, type_)
    kept.append(condition_json(type_, status, reason, message, transition))
    return kept


def set_subset_condition(
    conditions: object, type_: str, status: str, reason: str, message: str, *, now: datetime
) -> list[JSON]:
    """The subset-level rule: any change of status or reason is a new transition, in place."""
    current = find_condition(conditions, type_)
    if _unchanged(current, status, reason):
        return copy_conditions(conditions)
    fresh = condition_json(type_, status, reason, message, format_time(now))
    result = copy_conditions(conditions)
    for index, item in enumerate(result):
        if as_str(item.get("type")) == type_:
            result[index] = fresh
            return result
    result.append(fresh)
    return result


def set_updated_condition(
    conditions: object, *, current_revision: str, expected_revision: str, now: datetime
) -> list[JSON]:
    """``UnitedDeploymentUpdated``: rewritten only when its status flips (or it is missing).

    While the status stays, neither reason, message nor time change, even when the expected
    revision moved on: the reservation rules measure "the update took too long" from this time.
    """
    status = FALSE if current_revision != expected_revision else TRUE
    current = find_condition(conditions, UNITED_DEPLOYMENT_UPDATED)
    if current is not None and as_str(current.get("status")) == status:
        return copy_conditions(conditions)
    if status == FALSE:
        reason, message = REVISION_UPDATING, f"updating to revision {expected_revision}"
    else:
        reason, message = REVISION_UPDATED, f"updated to revision {expected_revision}"
    return set_ud_condition(conditions, UNITED_DEPLOYMENT_UPDATED, status, reason, message, now=now)
