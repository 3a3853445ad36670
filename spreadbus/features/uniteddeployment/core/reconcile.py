"""One reconcile of a UnitedDeployment as a pure function: what to write, given what is observed.

:func:`reconcile` follows Kruise's order:

1. a UD being deleted is left alone; one without a workload template is answered with an
   ``error`` (the webhook refuses it; Kruise's controller would fail on it);
2. every spec subset without a status entry gets one (in reservation mode a subset added to a UD
   that already had entries starts ``Schedulable=False``, reason ``created``);
3. revisions (:mod:`.revision_history`): the current and updated revision and the
   ControllerRevision writes; ``UnitedDeploymentUpdated`` follows current vs updated;
4. the subset workloads are found (:mod:`.subset_workloads`), duplicates deleted;
5. Adaptive pre-processing of every found subset with a status entry
   (:func:`.scheduling.schedule_round`: :mod:`.adaptive`, or :mod:`.reservation` with
   ``reserveUnschedulablePods``): the subset's ``Schedulable`` condition, the allocator's flags,
   reserved-pod labels and wake-ups;
6. the allocation (:mod:`.allocation`); if it fails, ``error`` carries Kruise's message, no
   subset is planned and the status is the input status unchanged (only the duplicate deletes
   and the revision writes, which Kruise makes before allocating, remain);
7. a rebalance in progress (the ``rebalance.spreadbus.io/request`` annotation differs from
   ``.../handled``) replaces the allocation by one step toward the placement the UD would get if
   created now (:mod:`.rebalance`), taking away no more ready pods than the PodDisruptionBudgets
   and PodUnavailableBudgets passed among ``workloads`` allow (:mod:`.disruption_budgets`);
   ``rebalance_handled`` is the request once that placement is reached or nothing can move
   (also when the fresh placement cannot be computed);
8. reservation post-processing (:func:`.scheduling.after_allocation`: a just-recovered subset
   that grows is marked again);
9. partitions (:mod:`.partitions`), the whole rendered workload per spec subset
   (:mod:`.rendering`) and Kruise's update decision (:mod:`.update_decision`); workloads of
   subsets no longer in spec and of other kinds are deleted;
10. the status (:mod:`.status`) and the earliest positive wake-up: the Adaptive ones, and
    ``rescheduleCriticalSeconds`` after a subset is created under Adaptive.

Subsets in other clusters (``targetCluster``) are reconciled alike: their workloads and pods are
among those given, marked with the cluster they were observed in (:mod:`.member_workloads`).
Given the cluster registry's objects (``clusters``), a subset whose cluster takes no pods is
unschedulable after step 5 (:mod:`.cluster_availability`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import msgspec

from kubesemantics.lenient_json import as_map, as_str
from spreadbus.clusterregistry.registry import cluster_of
from spreadbus.features.uniteddeployment.core import adaptive, reservation
from spreadbus.features.uniteddeployment.core.allocation import (
    AllocationError,
    SubsetWorkload,
    allocate,
)
from spreadbus.features.uniteddeployment.core.cluster_availability import (
    CLUSTER_UNAVAILABLE,
    unavailable_subsets,
)
from spreadbus.features.uniteddeployment.core.conditions import (
    FALSE,
    JSON,
    TRUE,
    copy_conditions,
    find_condition,
    set_subset_condition,
    set_ud_condition,
    set_updated_condition,
)
from spreadbus.features.uniteddeployment.core.disruption_budgets import disruption_allowance
from spreadbus.features.uniteddeployment.core.model import (
    SCHEDULABLE,
    UnitedDeployment,
    from_object,
)
from spreadbus.features.uniteddeployment.core.partitions import (
    computed_partitions,
    read_partition_counted,
)
from spreadbus.features.uniteddeployment.core.pod_groups import (
    PodGroups,
    all_pods,
    group_pods,
    groups_by_subset,
    judged_pods,
    off_revision,
    pending_pods,
    updated_counts,
)
from spreadbus.features.uniteddeployment.core.rebalance import pending_request
from spreadbus.features.uniteddeployment.core.rendering import (
    PatchError,
    patch_text,
    render_workload,
)
from spreadbus.features.uniteddeployment.core.revision_history import plan_revisions
from spreadbus.features.uniteddeployment.core.scheduling import (
    SchedulingRound,
    after_allocation,
    rebalance_allocation,
    schedule_round,
)
from spreadbus.features.uniteddeployment.core.status import (
    SubsetCounts,
    compute_status,
    counts_of,
)
from spreadbus.features.uniteddeployment.core.subset_workloads import (
    discover,
    workload_kind,
)
from spreadbus.features.uniteddeployment.core.target_clusters import (
    control_plane_errors,
    is_template,
)
from spreadbus.features.uniteddeployment.core.update_decision import (
    Action,
    decide,
)

NO_TEMPLATE = (
    "spec.template: should provide one of statefulSetTemplate, advancedStatefulSetTemplate, "
    "cloneSetTemplate, or deploymentTemplate"
)
SUBSET_PROVISIONED = "SubsetProvisioned"
SUBSET_UPDATED = "SubsetUpdated"
UNITED_UPDATED = "UnitedDeploymentUpdated"


@dataclass(frozen=True)
class SubsetDecision:
    replicas: int
    partition: int | None
    action: Action
    workload: dict[str, Any]


@dataclass(frozen=True)
class Reconciliation:
    """What one round writes. ``requeue_at``: the earliest timed wake-up it asks for."""

    subsets: dict[str, SubsetDecision] = field(default_factory=dict)
    deletes: list[Mapping[str, Any]] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    requeue_at: datetime | None = None
    pod_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    revision_creates: list[dict[str, Any]] = field(default_factory=list)
    revision_updates: list[tuple[str, int]] = field(default_factory=list)
    revision_deletes: list[str] = field(default_factory=list)
    rebalance_handled: str | None = None


def _initial_subset_conditions(
    ud: UnitedDeployment, old_status: Mapping[str, Any], now: datetime
) -> dict[str, list[JSON]]:
    """Every status entry's conditions, plus the entries ``initStatus`` adds for new subsets."""
    entries = old_status.get("subsetStatuses")
    existing = [e for e in entries if isinstance(e, Mapping)] if isinstance(entries, list) else []
    found: dict[str, list[JSON]] = {}
    for entry in existing:
        found.setdefault(as_str(entry.get("name")), copy_conditions(entry.get("conditions")))
    had_entries = bool(existing)
    for subset in ud.subsets:
        if subset.name not in found:
            found[subset.name] = reservation.new_subset_conditions(
                reservation=ud.schedule_strategy.reservation, statuses_exist=had_entries, now=now
            )
    return found


def _requeue_at(now: datetime, wakeups: Sequence[timedelta | None]) -> datetime | None:
    soonest = adaptive.earliest(wakeups)
    return None if soonest is None else now + soonest


def reconcile(
    ud: Mapping[str, Any],
    *,
    workloads: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    revisions: Sequence[Mapping[str, Any]],
    now: datetime,
    home: str | None = None,
    clusters: Sequence[Mapping[str, Any]] | None = None,
    control_plane: bool = False,
) -> Reconciliation:
    """Plan one round for ``ud`` from its namespace's workloads, pods and ControllerRevisions.

    ``workloads`` may hold anything of the namespace: subset workloads are picked out by their
    owner reference and label, ReplicaSets lead to a Deployment's pods, PodDisruptionBudgets and
    PodUnavailableBudgets bound a rebalance, the rest is ignored. ``home``: the name of the UD's
    own cluster (its observed-in mark when not given); ``clusters``: the cluster registry's
    objects, None when not known; ``control_plane``: the UD's cluster runs no workloads, so a
    subset without a target cluster is an error (``SubsetProvisioned=False``) and nothing is
    provisioned.
    """
    return reconcile_grouped(
        ud, workloads=workloads, pod_groups=group_pods(pods), revisions=revisions, now=now,
        home=home, clusters=clusters, control_plane=control_plane,
    )


def reconcile_grouped(
    ud: Mapping[str, Any],
    *,
    workloads: Sequence[Mapping[str, Any]],
    pod_groups: PodGroups,
    revisions: Sequence[Mapping[str, Any]],
    now: datetime,
    home: str | None = None,
    clusters: Sequence[Mapping[str, Any]] | None = None,
    control_plane: bool = False,
) -> Reconciliation:
    """:func:`reconcile` over pods kept grouped and counted (:mod:`.pod_groups`), so a round
    reads the pods it must judge, not all of them."""
    model = from_object(ud)
    old_status = dict(as_map(ud.get("status")))
    kind = workload_kind(model)
    if model.deleting:
        return Reconciliation(status=old_status)
    if kind is None:
        return Reconciliation(status=old_status, error=NO_TEMPLATE)
    if control_plane:
        if is_template(ud.get("spec")):
            return Reconciliation(status=old_status)  # propagated whole, placed by members
        local = control_plane_errors(ud.get("spec"))
        if local:
            message = f"{local[0].field}: {local[0].message}"
            status = dict(old_status)
            status["conditions"] = set_ud_condition(
                old_status.get("conditions"), SUBSET_PROVISIONED, FALSE, "Error", message,
                now=now)
            return Reconciliation(status=status, error=message)

    subset_conditions = _initial_subset_conditions(model, old_status, now)
    updated_in_status = as_str(as_map(old_status.get("updateStatus")).get("updatedRevision"))
    revisions_plan = plan_revisions(model, revisions, updated_in_status=updated_in_status)
    expected = revisions_plan.updated
    ud_conditions = set_updated_condition(
        old_status.get("conditions"),
        current_revision=revisions_plan.current,
        expected_revision=expected,
        now=now,
    )

    home = home or cluster_of(ud)
    found = discover(model, workloads, home)
    groups_of = groups_by_subset(model, found.by_subset, workloads, pod_groups)
    strategy = model.schedule_strategy
    ud_updated = find_condition(ud_conditions, UNITED_UPDATED)
    judged: dict[str, list[dict[str, Any]]] = {}
    for name, groups in groups_of.items():
        if strategy.reservation:
            judged[name] = judged_pods(
                groups,
                updated_revision=expected,
                ud_updated_condition=ud_updated,
                timeout=timedelta(seconds=strategy.reschedule_critical),
                now=now,
            )
        elif strategy.adaptive:
            judged[name] = pending_pods(groups)
    scheduling = schedule_round(
        model,
        subset_conditions,
        found.by_subset,
        judged,
        updated_revision=expected,
        ud_updated_condition=ud_updated,
        now=now,
    )
    scheduling = _cluster_failover(model, scheduling, unavailable_subsets(ud, clusters), now=now)
    allocation = allocate(model, scheduling.workloads)
    if isinstance(allocation, AllocationError):
        return Reconciliation(
            status=old_status,
            error=allocation.message,
            deletes=list(found.duplicates),
            pod_labels=scheduling.pod_labels,
            revision_creates=revisions_plan.creates,
            revision_updates=revisions_plan.updates,
            revision_deletes=revisions_plan.deletes,
        )
    annotations = as_map(ud.get("metadata")).get("annotations")
    allocation, rebalance_handled = rebalance_allocation(
        model,
        annotations,
        scheduling,
        allocation,
        # Budgets match pods by labels: every pod is read, but only while a rebalance is asked.
        disruptions_allowed=disruption_allowance(
            model,
            workloads,
            found.by_subset,
            {name: all_pods(groups) for name, groups in groups_of.items()},
        )
        if pending_request(annotations) is not None
        else None,
    )
    scheduling = after_allocation(model, scheduling, allocation, now=now)

    partitions = computed_partitions(model, allocation)
    decisions: dict[str, SubsetDecision] = {}
    created = updated_error = provision_error = ""
    for subset in model.subsets:
        existing = found.by_subset.get(subset.name)
        replicas = allocation[subset.name]
        partition = partitions[subset.name]
        try:
            workload = render_workload(
                model,
                subset,
                existing=existing,
                revision=expected,
                replicas=replicas,
                partition=partition,
                home=home,
            )
        except PatchError as exc:
            message = f"subset {subset.name}: spec.topology.subsets[].patch: {exc}"
            if existing is None:
                provision_error = provision_error or message
            else:
                updated_error = updated_error or message
            decisions[subset.name] = SubsetDecision(
                replicas, partition, "none", dict(existing) if existing is not None else {}
            )
            continue
        action = decide(
            existing,
            revision=expected,
            replicas=replicas,
            partition=partition,
            current_partition=read_partition_counted(
                kind, existing, partial(off_revision, groups_of.get(subset.name, []))
            )
            if existing is not None
            else 0,
            patch=patch_text(subset),
            updated_replicas=updated_counts(groups_of.get(subset.name, []), expected)[0],
        )
        if action == "create":
            created = subset.name
        observed = scheduling.workloads.get(subset.name)
        if (
            action == "update"
            and model.schedule_strategy.reservation
            and observed is not None
            and observed.unschedulable
        ):
            workload = reservation.override_max_unavailable(
                workload,
                current_replicas=observed.replicas,
                ready_replicas=observed.ready_replicas,
                update_timeout_pods=scheduling.update_timeout_pods.get(subset.name, 0),
            )
        decisions[subset.name] = SubsetDecision(replicas, partition, action, workload)

    provisioned = bool(created or found.not_in_spec or found.other_kinds)
    if provision_error:
        ud_conditions = set_ud_condition(
            ud_conditions, SUBSET_PROVISIONED, "False", "Error", provision_error, now=now
        )
    elif provisioned:
        ud_conditions = set_ud_condition(ud_conditions, SUBSET_PROVISIONED, TRUE, "", "", now=now)
    if updated_error:
        ud_conditions = set_ud_condition(
            ud_conditions, SUBSET_UPDATED, "False", "Error", updated_error, now=now
        )
    else:
        ud_conditions = set_ud_condition(ud_conditions, SUBSET_UPDATED, TRUE, "", "", now=now)

    counts: dict[str, SubsetCounts] = {
        name: counts_of(
            workload,
            *updated_counts(groups_of.get(name, []), expected),
            reserved_pods=scheduling.workloads[name].reserved_pods,
        )
        for name, workload in found.by_subset.items()
    }
    status = compute_status(
        model,
        old_status,
        counts=counts,
        allocation=allocation,
        partitions=partitions,
        subset_conditions=scheduling.conditions,
        ud_conditions=ud_conditions,
        current_revision=revisions_plan.current,
        expected_revision=expected,
        collision_count=revisions_plan.collision_count,
    )
    wakeups = [scheduling.requeue_after]
    if created and model.schedule_strategy.adaptive:
        wakeups.append(timedelta(seconds=model.schedule_strategy.reschedule_critical))
    return Reconciliation(
        subsets=decisions,
        deletes=found.deletes,
        status=status,
        requeue_at=_requeue_at(now, wakeups),
        pod_labels=scheduling.pod_labels,
        revision_creates=revisions_plan.creates,
        revision_updates=revisions_plan.updates,
        revision_deletes=revisions_plan.deletes,
        rebalance_handled=rebalance_handled,
    )


def _cluster_failover(model: UnitedDeployment, round_: SchedulingRound,
                      unavailable: Mapping[str, str], *, now: datetime) -> SchedulingRound:
    """``round_`` with each subset whose cluster takes no pods unschedulable: the condition
    says why; under Adaptive none of its pods count as ready, so the allocation moves its share
    on. A subset marked so whose cluster is back is marked schedulable again, except under
    Adaptive, whose unschedulable window decides when (:mod:`.adaptive`); until then its pods
    still count as none, so pods the member kept running through a cut (it heard of no plan)
    do not pull the moved share back when the planner sees them again."""
    if not unavailable and not any(
            as_str((find_condition(c, SCHEDULABLE) or {}).get("reason")) == CLUSTER_UNAVAILABLE
            for c in round_.conditions.values()):
        return round_
    conditions = dict(round_.conditions)
    flags = dict(round_.workloads)
    adaptive_ = model.schedule_strategy.adaptive
    for subset in model.subsets:
        name = subset.name
        why = unavailable.get(name)
        current = conditions.get(name, [])
        marked = as_str((find_condition(current, SCHEDULABLE) or {}).get(
            "reason")) == CLUSTER_UNAVAILABLE
        if why:
            conditions[name] = set_subset_condition(current, SCHEDULABLE, FALSE,
                                                    CLUSTER_UNAVAILABLE, why, now=now)
        if adaptive_ and (why or marked):
            # Still marked once the cluster is back: the pods it kept through the outage were
            # given to other subsets, and counting them again would move pods back.
            flag = flags.get(name, SubsetWorkload())
            flags[name] = msgspec.structs.replace(flag, ready_replicas=0, unschedulable=True)
        elif not adaptive_ and marked and not why:
            conditions[name] = set_subset_condition(current, SCHEDULABLE, TRUE,
                                                    adaptive.RECOVER, "", now=now)
    return replace(round_, conditions=conditions, workloads=flags)


__all__ = ["Reconciliation", "SubsetDecision", "reconcile", "reconcile_grouped"]
