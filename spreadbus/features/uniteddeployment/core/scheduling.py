"""One reconcile's scheduling pass over a UnitedDeployment's subsets, before and after allocation.

The reconcile calls, in this order::

    round_ = schedule_round(ud, subset_conditions, workloads, pods_by_subset,
                            updated_revision=..., ud_updated_condition=..., now=now)
    allocation = allocate(ud, round_.workloads)            # .allocation
    allocation, handled = rebalance_allocation(ud, annotations, round_, allocation,
                                               disruptions_allowed=None)
    round_ = after_allocation(ud, round_, allocation, now=now)

- ``subset_conditions``: every ``status.subsetStatuses[]`` entry's conditions by subset name,
  after the new-subset entries were added (:func:`reservation.new_subset_conditions`);
- ``workloads``: the subset workloads found, whole JSON, by subset name;
- ``pods_by_subset``: each found workload's pods;
- ``ud_updated_condition``: ``UnitedDeploymentUpdated`` as this round wrote it.

:class:`SchedulingRound` carries what the allocators read per found subset
(:class:`~.allocation.SubsetWorkload`: spec and ready replicas, reserved pods, the
``unschedulable`` and ``marked_unschedulable`` flags), every subset's new conditions, the pod
labels to set (``"ns/pod"`` -> labels), the update-timeout pod counts (for
:func:`reservation.override_max_unavailable`) and the earliest positive wake-up.

Fixed strategy: no flags, no conditions written, no wake-up. Adaptive: :mod:`.adaptive`.
Adaptive with ``reserveUnschedulablePods``: :mod:`.reservation`. A found subset without a status
entry is left out of the Adaptive pass (as Kruise does), keeping default flags.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import msgspec

from kubesemantics.lenient_json import as_int, as_map
from spreadbus.features.uniteddeployment.core import adaptive, reservation
from spreadbus.features.uniteddeployment.core.allocation import Allocation, SubsetWorkload
from spreadbus.features.uniteddeployment.core.conditions import JSON, copy_conditions
from spreadbus.features.uniteddeployment.core.model import UnitedDeployment
from spreadbus.features.uniteddeployment.core.rebalance import (
    fresh_allocation,
    pending_request,
    rebalance_step,
)


@dataclass(frozen=True)
class SchedulingRound:
    workloads: dict[str, SubsetWorkload] = field(default_factory=dict)
    conditions: dict[str, list[JSON]] = field(default_factory=dict)
    pod_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    update_timeout_pods: dict[str, int] = field(default_factory=dict)
    requeue_after: timedelta | None = None


def _status_int(workload: Mapping[str, Any], key: str) -> int:
    return as_int(as_map(workload.get("status")).get(key)) or 0


def _spec_replicas(workload: Mapping[str, Any]) -> int:
    return as_int(as_map(workload.get("spec")).get("replicas")) or 0


def schedule_round(
    ud: UnitedDeployment,
    subset_conditions: Mapping[str, Sequence[Mapping[str, Any]]],
    workloads: Mapping[str, Mapping[str, Any]],
    pods_by_subset: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    updated_revision: str,
    ud_updated_condition: Mapping[str, Any] | None,
    now: datetime,
) -> SchedulingRound:
    """The Adaptive pre-processing of every found subset workload."""
    strategy = ud.schedule_strategy
    conditions = {name: copy_conditions(found) for name, found in subset_conditions.items()}
    flags: dict[str, SubsetWorkload] = {}
    labels: dict[str, dict[str, str]] = {}
    timeouts: dict[str, int] = {}
    wakeups: list[timedelta | None] = []
    for name, workload in workloads.items():
        flag = SubsetWorkload(
            replicas=_spec_replicas(workload),
            ready_replicas=_status_int(workload, "readyReplicas"),
        )
        pods = pods_by_subset.get(name, ())
        if name in conditions and strategy.reservation:
            held = reservation.reservation_round(
                conditions[name],
                pods=pods,
                updated_revision=updated_revision,
                ud_updated_condition=ud_updated_condition,
                strategy=strategy,
                now=now,
            )
            flag = msgspec.structs.replace(
                flag,
                reserved_pods=held.reserved_pods,
                unschedulable=held.unschedulable,
                marked_unschedulable=held.marked_unschedulable,
            )
            conditions[name] = held.conditions
            labels.update(held.pod_labels)
            timeouts[name] = held.update_timeout_pods
            wakeups.append(held.requeue_after)
        elif name in conditions and strategy.adaptive:
            verdict = adaptive.default_adaptive_round(
                conditions[name],
                replicas=_status_int(workload, "replicas"),
                ready_replicas=flag.ready_replicas,
                pods=pods,
                strategy=strategy,
                now=now,
            )
            flag = msgspec.structs.replace(flag, unschedulable=verdict.unschedulable)
            conditions[name] = verdict.conditions
            wakeups.append(verdict.requeue_after)
        flags[name] = flag
    return SchedulingRound(
        workloads=flags,
        conditions=conditions,
        pod_labels=labels,
        update_timeout_pods=timeouts,
        requeue_after=adaptive.earliest(wakeups),
    )


def after_allocation(
    ud: UnitedDeployment, round_: SchedulingRound, allocation: Allocation, *, now: datetime
) -> SchedulingRound:
    """Reservation post-processing: re-mark just-recovered subsets that grow."""
    if not ud.schedule_strategy.reservation:
        return round_
    conditions = dict(round_.conditions)
    for name, flag in round_.workloads.items():
        if name not in conditions or name not in allocation:
            continue
        conditions[name] = reservation.after_allocation(
            conditions[name],
            unschedulable=flag.unschedulable,
            marked_unschedulable=flag.marked_unschedulable,
            current_replicas=flag.replicas,
            next_replicas=allocation[name],
            now=now,
        )
    return replace(round_, conditions=conditions)


_ORDINAL_KINDS = ("statefulSetTemplate", "advancedStatefulSetTemplate")


def rebalance_allocation(
    ud: UnitedDeployment,
    annotations: object,
    round_: SchedulingRound,
    allocation: Allocation,
    *,
    disruptions_allowed: int | None = None,
) -> tuple[Allocation, str | None]:
    """The allocation to apply and the ``rebalance.spreadbus.io/handled`` value to write.

    Without a pending request the allocator's answer stands and nothing is written. With one,
    the answer is the next safe step towards the fresh placement, and the request's value is
    returned once that step is final. If nothing can move, or the fresh placement cannot be
    computed, the allocator's answer stands and the request counts as handled. Subsets this round
    found unschedulable are not grown (:func:`rebalance_step`'s ``frozen``).
    """
    request = pending_request(annotations)
    if request is None:
        return allocation, None
    fresh = fresh_allocation(ud)
    if not isinstance(fresh, dict):
        return allocation, request
    step = rebalance_step(
        fresh,
        {name: round_.workloads[name] for name in fresh if name in round_.workloads},
        total=ud.replicas,
        removes_unready_first=not any(k in _ORDINAL_KINDS for k in ud.template_kinds),
        frozen={name for name, flag in round_.workloads.items() if flag.unschedulable},
        disruptions_allowed=disruptions_allowed,
    )
    if step.done and not step.reached:
        return allocation, request
    return step.allocation, request if step.done else None
