"""Reservation mode (Adaptive with ``reserveUnschedulablePods``): keep stuck pods, add substitutes.

Instead of scaling a stuck subset down, the controller labels its stuck pods reserved
(``apps.kruise.io/united-deployment-reserved-pod: "true"``) and allocates the same number of
replicas again in later subsets. Reserved pods leave reservation only after running on the
updated revision and being Ready for ``unschedulableDuration``; only then are the substitutes
taken away. Every pod of the subset carries the label, ``"false"`` when not reserved, so the
UD's ``status.labelSelector`` can exclude the reserved ones.

Per existing subset with a status entry, :func:`reservation_round`:

- reads ``Schedulable=False`` as *marked* unschedulable (the subset is not trusted yet);
- in a marked subset, a pod without the label is born reserved (Kruise means to wake up after
  ``unschedulableDuration`` then, but its comparison is inverted, so no wake-up is asked for);
- every other pod is judged by :func:`reserved_status`; a label is written when the verdict
  differs from it or the label is missing;
- any reserved pod makes the subset unschedulable (``False``/``reschedule`` "reserved pods
  found"), none makes it schedulable (``True``/``reschedule`` "no reserved pods").

After the allocation, :func:`after_allocation` marks a subset that has just recovered but is given
more replicas than it has back as unschedulable ("subset just recovered scaled up"), so its new
pods are born reserved and the substitutes stay until those are proven healthy.

When an unschedulable subset is updated, :func:`override_max_unavailable` lets the workload take
down its not-ready pods (and old-revision pods whose update timed out) at once.

Signatures::

    reserved_status(pod, *, updated_revision, ud_updated_condition, pending_timeout_after,
                    min_ready, now) -> ReservedCheck
    reservation_round(conditions, *, pods, updated_revision, ud_updated_condition,
                      strategy, now) -> ReservationVerdict
    after_allocation(conditions, *, unschedulable, marked_unschedulable,
                     current_replicas, next_replicas, now) -> list[dict]
    new_subset_conditions(*, reservation, statuses_exist, now) -> list[dict]
    max_unavailable(workload, *, current_replicas, ready_replicas, update_timeout_pods) -> int
    override_max_unavailable(workload, *, current_replicas, ready_replicas,
                             update_timeout_pods) -> dict
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kubesemantics.intstr import IntOrStrError, int_value, percent, scaled_value
from kubesemantics.lenient_json import as_int, as_map, as_str
from spreadbus.features.uniteddeployment.core.adaptive import (
    earliest,
    pending_timeout,
    pod_condition,
    time_of,
)
from spreadbus.features.uniteddeployment.core.conditions import (
    FALSE,
    JSON,
    TRUE,
    copy_conditions,
    find_condition,
    set_subset_condition,
)
from spreadbus.features.uniteddeployment.core.model import SCHEDULABLE, ScheduleStrategy

RESERVED_POD_LABEL = "apps.kruise.io/united-deployment-reserved-pod"
REVISION_LABEL = "apps.kruise.io/controller-revision-hash"
RESCHEDULE = "reschedule"
RESERVED_FOUND = "reserved pods found"
NO_RESERVED = "no reserved pods"
JUST_RECOVERED = "subset just recovered scaled up"
CREATED = "created"
CREATED_MESSAGE = "newly-created subsets in reservation strategy"
# Appended to status.labelSelector in reservation mode, so an HPA counts only running pods.
STATUS_SELECTOR_SUFFIX = f",{RESERVED_POD_LABEL}=false"


def pod_key(pod: Mapping[str, Any]) -> str:
    meta = as_map(pod.get("metadata"))
    return f"{as_str(meta.get('namespace')) or 'default'}/{as_str(meta.get('name'))}"


def _labels(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return as_map(as_map(pod.get("metadata")).get("labels"))


@dataclass(frozen=True)
class ReservedCheck:
    """Whether the pod is reserved, when to look again (None: no need), and whether it is an
    old-revision pod whose update took too long (those count towards ``maxUnavailable``)."""

    reserved: bool
    recheck_after: timedelta | None = None
    update_timed_out: bool = False


def reserved_status(
    pod: Mapping[str, Any],
    *,
    updated_revision: str,
    ud_updated_condition: Mapping[str, Any] | None,
    pending_timeout_after: timedelta,
    min_ready: timedelta,
    now: datetime,
) -> ReservedCheck:
    """Kruise's ``checkPodReallyInReservedStatus``.

    A pod labelled reserved stays so until it runs the updated revision and has been Ready for
    longer than ``min_ready``. An unlabelled (or ``"false"``) pod becomes reserved when it is a
    timed-out pending pod of the updated revision, or, for an old-revision pod, when the UD has
    been updating for longer than ``pending_timeout_after`` (measured from
    ``UnitedDeploymentUpdated``'s transition time; without that condition the pod is left alone).
    """
    revision = as_str(_labels(pod).get(REVISION_LABEL))
    if as_str(_labels(pod).get(RESERVED_POD_LABEL)) == "true":
        phase = as_str(as_map(pod.get("status")).get("phase"))
        if phase == "Running" and revision == updated_revision:
            ready = pod_condition(pod, "Ready")
            if ready is not None and as_str(ready.get("status")) == TRUE:
                healthy_at = time_of(ready.get("lastTransitionTime")) + min_ready
                if healthy_at < now:
                    return ReservedCheck(False)
                return ReservedCheck(True, healthy_at - now)
        return ReservedCheck(True, min_ready)
    if revision == updated_revision:
        check = pending_timeout(pod, pending_timeout_after, now)
        timed_out, after, update_timed_out = check.timed_out, check.recheck_after, False
    else:
        timed_out, after = _update_timeout(pod, ud_updated_condition, pending_timeout_after, now)
        update_timed_out = timed_out
    if timed_out:
        return ReservedCheck(True, min_ready, update_timed_out)
    return ReservedCheck(False, after)


def _update_timeout(
    pod: Mapping[str, Any],
    updated: Mapping[str, Any] | None,
    timeout: timedelta,
    now: datetime,
) -> tuple[bool, timedelta | None]:
    if as_map(pod.get("metadata")).get("deletionTimestamp") is not None or updated is None:
        return False, None
    deadline = time_of(updated.get("lastTransitionTime")) + timeout
    if deadline < now:
        return True, None
    return False, deadline - now


@dataclass(frozen=True)
class ReservationVerdict:
    """One subset's round in reservation mode.

    ``pod_labels`` maps ``"ns/pod"`` to the labels to set on it.
    """

    unschedulable: bool
    marked_unschedulable: bool
    reserved_pods: int
    update_timeout_pods: int
    conditions: list[JSON] = field(default_factory=list)
    pod_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    requeue_after: timedelta | None = None


def reservation_round(
    conditions: object,
    *,
    pods: Sequence[Mapping[str, Any]],
    updated_revision: str,
    ud_updated_condition: Mapping[str, Any] | None,
    strategy: ScheduleStrategy,
    now: datetime,
) -> ReservationVerdict:
    """Decide one existing subset in reservation mode.

    ``conditions`` is the subset's ``status.subsetStatuses[].conditions``; ``pods`` its
    workload's pods; ``updated_revision`` the UD's expected revision;
    ``ud_updated_condition`` the ``UnitedDeploymentUpdated`` condition as this round wrote it.
    """
    current = find_condition(conditions, SCHEDULABLE)
    marked = current is not None and as_str(current.get("status")) == FALSE
    min_ready = timedelta(seconds=strategy.unschedulable_duration)
    critical = timedelta(seconds=strategy.reschedule_critical)
    reserved_pods = 0
    update_timeout_pods = 0
    labels: dict[str, dict[str, str]] = {}
    wakeups: list[timedelta | None] = []
    for pod in pods:
        label = _labels(pod).get(RESERVED_POD_LABEL)
        has_label = isinstance(label, str)
        if marked and not has_label:
            # Born in a subset not trusted yet. Kruise's wake-up here never fires (inverted
            # comparison); the next event or another subset's wake-up re-judges the pod.
            reserved_pods += 1
            labels[pod_key(pod)] = {RESERVED_POD_LABEL: "true"}
            continue
        check = reserved_status(
            pod,
            updated_revision=updated_revision,
            ud_updated_condition=ud_updated_condition,
            pending_timeout_after=critical,
            min_ready=min_ready,
            now=now,
        )
        reserved_pods += int(check.reserved)
        update_timeout_pods += int(check.update_timed_out)
        wakeups.append(check.recheck_after)
        if not has_label or (label == "true") != check.reserved:
            labels[pod_key(pod)] = {RESERVED_POD_LABEL: "true" if check.reserved else "false"}
    if reserved_pods > 0:
        written = set_subset_condition(
            conditions, SCHEDULABLE, FALSE, RESCHEDULE, RESERVED_FOUND, now=now
        )
    else:
        written = set_subset_condition(
            conditions, SCHEDULABLE, TRUE, RESCHEDULE, NO_RESERVED, now=now
        )
    return ReservationVerdict(
        unschedulable=reserved_pods > 0,
        marked_unschedulable=marked,
        reserved_pods=reserved_pods,
        update_timeout_pods=update_timeout_pods,
        conditions=written,
        pod_labels=labels,
        requeue_after=earliest(wakeups),
    )


def after_allocation(
    conditions: object,
    *,
    unschedulable: bool,
    marked_unschedulable: bool,
    current_replicas: int,
    next_replicas: int,
    now: datetime,
) -> list[JSON]:
    """Re-mark a subset that just recovered and is scaled up, so its new pods start reserved.

    ``current_replicas`` is the workload's ``spec.replicas`` before this round,
    ``next_replicas`` the allocation; the flags come from :func:`reservation_round`.
    """
    if not unschedulable and marked_unschedulable and next_replicas > current_replicas:
        return set_subset_condition(
            conditions, SCHEDULABLE, FALSE, RESCHEDULE, JUST_RECOVERED, now=now
        )
    return copy_conditions(conditions)


def new_subset_conditions(*, reservation: bool, statuses_exist: bool, now: datetime) -> list[JSON]:
    """Conditions of a subset that gets its first status entry.

    In reservation mode a subset added to a UD that already had subset statuses starts marked
    unschedulable, so its first pods are reserved and the substitutes elsewhere stay until they
    are healthy.
    """
    if reservation and statuses_exist:
        return set_subset_condition([], SCHEDULABLE, FALSE, CREATED, CREATED_MESSAGE, now=now)
    return []


# --- maxUnavailable while updating an unschedulable subset -----------------------------------


def _is_cloneset_v1alpha1(workload: Mapping[str, Any]) -> bool:
    return as_str(workload.get("kind")) == "CloneSet" and not as_str(
        workload.get("apiVersion")
    ).endswith("/v1beta1")


def _rolling_update(workload: Mapping[str, Any]) -> Mapping[str, Any]:
    """Where maxUnavailable/maxSurge live for the workload's kind and version."""
    spec = as_map(workload.get("spec"))
    if as_str(workload.get("kind")) == "Deployment":
        return as_map(as_map(spec.get("strategy")).get("rollingUpdate"))
    strategy = as_map(spec.get("updateStrategy"))
    if _is_cloneset_v1alpha1(workload):
        return strategy
    return as_map(strategy.get("rollingUpdate"))


def _surge_allowed(workload: Mapping[str, Any], replicas: int) -> bool:
    """Whether the workload may surge, so that ``maxUnavailable: 0`` still makes progress."""
    kind = as_str(workload.get("kind"))
    surge = _rolling_update(workload).get("maxSurge")
    if kind == "Deployment":
        # Absent is defaulted to 25% by the API server; validation compares the raw number.
        if surge is None:
            return True
        return _raw_number(surge) != 0
    if kind == "CloneSet":
        # Absent means no surge; validation scales it against replicas, rounding up.
        if surge is None:
            return False
        try:
            return scaled_value(surge, replicas, round_up=True) >= 1
        except IntOrStrError:
            return False
    # StatefulSets never surge and reject maxUnavailable below 1.
    return False


def _raw_number(value: object) -> int:
    """The number in an IntOrString, percent or not, as Deployment validation compares it."""
    if isinstance(value, str):
        try:
            return percent(value)
        except IntOrStrError:
            return int_value(value)
    return int_value(value)


def max_unavailable(
    workload: Mapping[str, Any],
    *,
    current_replicas: int,
    ready_replicas: int,
    update_timeout_pods: int,
) -> int:
    """``current spec.replicas - readyReplicas + updateTimeoutPods``, never below what is valid.

    Kruise writes the raw value, which is negative when more pods are ready than the workload's
    (already lowered) ``spec.replicas`` during a scale-down; a negative ``maxUnavailable`` is
    rejected or misread by the workload controllers and restarted every pod at once (Kruise
    #2412). Here it is at least 0 (no ready pod beyond the not-ready ones may go), and at least 1
    when the workload cannot surge (a Deployment with ``maxSurge: 0``, a CloneSet without surge,
    a StatefulSet): 0 would then be invalid (Deployment, StatefulSet) or stall the update
    (CloneSet, whose validation also rejects "both below 1").
    """
    raw = current_replicas - ready_replicas + update_timeout_pods
    # CloneSet validation scales maxSurge against the replicas the workload is written with.
    written = as_int(as_map(workload.get("spec")).get("replicas"))
    floor = 0 if _surge_allowed(workload, current_replicas if written is None else written) else 1
    return max(raw, floor)


def override_max_unavailable(
    workload: Mapping[str, Any],
    *,
    current_replicas: int,
    ready_replicas: int,
    update_timeout_pods: int,
) -> dict[str, Any]:
    """A copy of the rendered workload with :func:`max_unavailable` written where its kind keeps
    it. A Deployment with the ``Recreate`` strategy is left as is: a ``rollingUpdate`` block is
    invalid there, and Recreate takes every pod down anyway."""
    result: dict[str, Any] = copy.deepcopy(dict(workload))
    value = max_unavailable(
        workload,
        current_replicas=current_replicas,
        ready_replicas=ready_replicas,
        update_timeout_pods=update_timeout_pods,
    )
    spec = _child(result, "spec")
    kind = as_str(workload.get("kind"))
    if kind == "Deployment":
        if as_str(as_map(spec.get("strategy")).get("type")) == "Recreate":
            return result
        _child(_child(spec, "strategy"), "rollingUpdate")["maxUnavailable"] = value
    elif _is_cloneset_v1alpha1(workload):
        _child(spec, "updateStrategy")["maxUnavailable"] = value
    else:
        _child(_child(spec, "updateStrategy"), "rollingUpdate")["maxUnavailable"] = value
    return result


def _child(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """The object under ``key``, made one if it is missing or not an object."""
    found = parent.get(key)
    if not isinstance(found, dict):
        found = {}
        parent[key] = found
    return found
