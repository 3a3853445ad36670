"""The planner's view of one WorkloadSpread: status, deletion costs, evictions, next wake-up.

:func:`plan_workloadspread` is Kruise's ``syncWorkloadSpread`` as a pure function. Its input is
what the planner's projection holds for this WorkloadSpread only (its workload, the workload's pods,
the nodes those pods run on, the reservations the webhooks recorded, ``now``), so its cost is
proportional to that workload's pods, never to the cluster. Its output is what to write:

* ``status``: ``subsetStatuses`` over all pods and ``versionedSubsetStatuses`` per pod version,
  with ``creatingPods``/``deletingPods`` merged from the previous status and the reservations and
  expired after 30 s / 15 s, and the ``Schedulable`` conditions of adaptive rescheduling;
* ``deletion_costs``: the annotation value for every pod whose value must change;
* ``wanted_costs``: the annotation value every costed pod should carry, changed or not (for
  what-if output; the planner writes only ``deletion_costs``);
* ``pod_patches``: the annotation (and patch metadata) for pre-existing pods matched to a subset;
* ``evictions``: stuck pods to evict (top-level pass only, never from the last subset), only
  from subsets the *observed* status already shows ``Schedulable=False``: the answer that turns a
  subset unschedulable evicts nothing yet, so a replacement is not admitted by a webhook that has
  not seen the subset closed (it would be steered back in and stuck once more); the next plan,
  over the status as written, evicts;
* ``requeue_at``: the earliest time something expires, recovers or times out, for one wake-up.

Top-level statuses are computed from the previous top-level entries only; reservations are
per version, as Kruise's webhook writes them only to ``versionedSubsetStatuses``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import msgspec

from kubesemantics import pod_status
from kubesemantics.owner_refs import controller_ref
from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.deletion_cost import annotation_updates, deletion_costs
from spreadbus.features.workloadspread.core.existing_pods import group_by_version
from spreadbus.features.workloadspread.core.model import (
    FAKE_SUBSET,
    JSON,
    VERSION_IGNORED,
    Status,
    SubsetStatus,
    WorkloadSpread,
)
from spreadbus.features.workloadspread.core.occupancy import Reservation
from spreadbus.features.workloadspread.core.pod_state import Pod
from spreadbus.features.workloadspread.core.reschedule import (
    RECOVER_AFTER,
    schedulable_condition,
    stuck_pods,
)
from spreadbus.features.workloadspread.core.status import subset_status
from spreadbus.features.workloadspread.core.subset_choice import unschedulable_subsets
from spreadbus.features.workloadspread.core.target import (
    Lookup,
    OwnerNotFound,
    ReplicasPathError,
    names_target,
    pod_counted_by_planner,
    reaches_target,
    uncontrolled_owner,
    workload_replicas,
)


class Eviction(msgspec.Struct, frozen=True):
    pod: str  # "namespace/name"
    subset: str
    reason: str


class Plan(msgspec.Struct, frozen=True):
    workloadspread: str
    status: Status
    deletion_costs: dict[str, str] = msgspec.field(default_factory=dict)
    """Pod key -> cost, only where the pod's annotation differs (what the planner writes)."""
    wanted_costs: dict[str, str] = msgspec.field(default_factory=dict)
    """Pod key -> cost for every costed pod, before comparing with its annotation."""
    pod_patches: dict[str, JSON] = msgspec.field(default_factory=dict)
    evictions: list[Eviction] = msgspec.field(default_factory=list)
    requeue_at: datetime | None = None
    events: list[str] = msgspec.field(
        default_factory=list
    )  # human-readable notes (failed creates…)


def _template_without_hash(template: object) -> object:
    if not isinstance(template, Mapping):
        return template
    meta = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != "pod-template-hash"}
    meta["labels"] = labels
    return {**template, "metadata": meta}


REVISION_ANNOTATION = "deployment.kubernetes.io/revision"


def _revision(replicaset: Mapping[str, Any]) -> int | None:
    value = (pod_state.metadata(replicaset).get("annotations") or {}).get(REVISION_ANNOTATION)
    if not isinstance(value, str) or not value.isdigit():
        return None
    return int(value)


def latest_version(
    ws: WorkloadSpread,
    workload: Mapping[str, Any] | None,
    *,
    replicasets: Iterable[Mapping[str, Any]] = (),
    versioned_kinds: frozenset[str] = pod_state.DEFAULT_VERSIONED_KINDS,
) -> str | None:
    """``GetWorkloadVersion``; None when a Deployment has no current ReplicaSet yet, or when one
    of its ReplicaSets has a newer revision than the one with its template.

    The second is a view that has seen a rollout's new ReplicaSet (and its pods) before the
    Deployment's new template: the watches of different resources keep no order between them,
    and the watcher holds a MODIFIED observation for a moment while an ADDED one goes out at
    once. Kruise would name the previous version latest and cost the new pods as old ones (the
    first subsets' pods cheapest) until the Deployment is seen; a scale-in meanwhile removes the
    wrong pods. Unknown leaves every cost as it is.
    """
    if workload is None or ws.target_ref is None:
        return ""
    kind = str(workload.get("kind") or "")
    enabled = kind.lower() in versioned_kinds
    owner = controller_ref(workload)
    if owner is not None and str(owner.get("kind") or "").lower() in versioned_kinds:
        enabled = True
    if not enabled:
        return VERSION_IGNORED
    meta = pod_state.metadata(workload)
    if kind == "ReplicaSet":
        return str((meta.get("labels") or {}).get("pod-template-hash", ""))
    if kind == "CloneSet":
        status = workload.get("status") or {}
        if (meta.get("generation") or 0) > (status.get("observedGeneration") or 0):
            return None
        return pod_state.short_hash(str(status.get("updateRevision") or ""))
    if kind == "Deployment":
        spec = workload.get("spec") or {}
        wanted = _template_without_hash(spec.get("template"))
        owned = []
        for rs in replicasets:
            ref = controller_ref(rs)
            if (ref is None or ref.get("uid") != meta.get("uid")
                    or pod_status.deleting_truthy(rs)):
                continue
            owned.append(rs)
        current = next((rs for rs in owned if _template_without_hash(
            (rs.get("spec") or {}).get("template")) == wanted), None)
        if current is None:
            return None
        revision = _revision(current)
        if revision is not None and any(
            (other := _revision(rs)) is not None and other > revision for rs in owned
        ):
            return None
        return str((pod_state.metadata(current).get("labels") or {}).get("pod-template-hash", ""))
    return VERSION_IGNORED


def _controller_key(ref: Mapping[str, Any] | None) -> tuple[str, str, str] | None:
    """What :func:`reaches_target` reads of a controller reference, when it is plain strings."""
    if ref is None:
        return None
    api_version, kind, name = ref.get("apiVersion"), ref.get("kind"), ref.get("name")
    if isinstance(api_version, str) and isinstance(kind, str) and isinstance(name, str):
        return api_version, kind, name
    return None


def _owned(
    ws: WorkloadSpread, ref: Mapping[str, Any] | None, lookup: Lookup, whitelist: Whitelist
) -> bool:
    try:
        return reaches_target(ws, ref, ws.namespace, lookup=lookup, whitelist=whitelist)
    except OwnerNotFound:
        return False


def workload_pods(
    ws: WorkloadSpread,
    workload: Mapping[str, Any] | None,
    pods: Iterable[Pod],
    *,
    lookup: Lookup,
    whitelist: Whitelist,
) -> list[Pod]:
    """The pods the planner counts for ``ws``: owned through the target, filtered by selector.

    A pod without a controller counts when an owner reference names a custom target directly.

    As in Kruise, a workload scaled to 0 replicas counts no pods (Jobs excepted).
    """
    if workload is None or ws.target_ref is None:
        return []
    if ws.target_ref.kind != "Job":
        spec = workload.get("spec")
        replicas = spec.get("replicas") if isinstance(spec, Mapping) else None
        if replicas == 0:
            return []
    out: list[Pod] = []
    reached: dict[tuple[str, str, str], bool] = {}  # by controller: a workload's pods share one
    for pod in pods:
        if pod_state.namespace(pod) != ws.namespace:
            continue
        ref = controller_ref(pod)
        memo = _controller_key(ref)
        if ref is None:
            custom = uncontrolled_owner(pod, whitelist)
            owned = custom is not None and names_target(ws, custom)
        elif memo is None:
            owned = _owned(ws, ref, lookup, whitelist)
        elif (known := reached.get(memo)) is not None:
            owned = known
        else:
            owned = reached[memo] = _owned(ws, ref, lookup, whitelist)
        if owned and pod_counted_by_planner(ws.target_filter, pod):
            out.append(pod)
    return out


def _merge_in_flight(
    old: Sequence[SubsetStatus], reservations: Sequence[Reservation]
) -> dict[str, tuple[dict[str, datetime], dict[str, datetime]]]:
    """Per subset name: creating and deleting entries from the old status plus reservations."""
    merged: dict[str, tuple[dict[str, datetime], dict[str, datetime]]] = {}
    for status in old:
        merged[status.name] = (dict(status.creating_pods), dict(status.deleting_pods))
    for r in reservations:
        creating, deleting = merged.setdefault(r.subset, ({}, {}))
        target = creating if r.kind == "creating" else deleting
        target[r.pod] = min(r.at, target.get(r.pod, r.at))
    return merged


def _statuses(
    ws: WorkloadSpread,
    buckets: Mapping[str, Sequence[Pod]],
    old: Sequence[SubsetStatus],
    reservations: Sequence[Reservation],
    *,
    replicas: int,
    now: datetime,
    wake: list[datetime],
    events: list[str],
    recover_after: timedelta,
) -> tuple[list[SubsetStatus], dict[str, list[Pod]]]:
    """``calculateWorkloadSpreadSubsetStatuses`` for one list (top-level or one version)."""
    old_by_name = {s.name: s for s in old}
    in_flight = _merge_in_flight(old, reservations)
    strategy = ws.schedule_strategy
    timeout = timedelta(seconds=strategy.reschedule_critical_seconds or 0)
    statuses: list[SubsetStatus] = []
    stuck_by_subset: dict[str, list[Pod]] = {}
    for position, subset in enumerate(ws.subsets):
        creating, deleting = in_flight.get(subset.name, ({}, {}))
        pods = buckets.get(subset.name, ())
        outcome = subset_status(
            subset, pods, creating=creating, deleting=deleting, replicas=replicas, now=now
        )
        wake.extend(outcome.wake_at)
        events.extend(
            f"Pod {ws.namespace}/{key} was expected to be created but it wasn't"
            for key in outcome.failed_creates
        )
        events.extend(
            f"Pod {ws.namespace}/{key} was expected to be deleted but it wasn't"
            for key in outcome.failed_deletes
        )
        status = outcome.status
        if strategy.reschedule_enabled:
            last = position == len(ws.subsets) - 1
            stuck: list[Pod] = []
            if not last:
                stuck, ahead = stuck_pods(pods, timeout, now)
                wake.extend(ahead)
                stuck_by_subset[subset.name] = stuck
            condition, revisit = schedulable_condition(
                old_by_name.get(subset.name), has_stuck=bool(stuck), last=last, now=now,
                recover_after=recover_after,
            )
            if revisit is not None:
                wake.append(revisit)
            status = msgspec.structs.replace(status, conditions=(condition,))
        statuses.append(status)
    return statuses, stuck_by_subset


def _is_empty(statuses: Sequence[SubsetStatus]) -> bool:
    return all(not s.replicas and not s.creating_pods and not s.deleting_pods for s in statuses)


def plan_workloadspread(
    ws: WorkloadSpread,
    *,
    workload: Mapping[str, Any] | None,
    pods: Sequence[Pod],
    nodes: Mapping[str, Mapping[str, Any]],
    reservations: Sequence[Reservation] = (),
    now: datetime,
    whitelist: Whitelist,
    latest: str | None = VERSION_IGNORED,
    versioned_kinds: frozenset[str] = pod_state.DEFAULT_VERSIONED_KINDS,
    recover_after_seconds: float = RECOVER_AFTER.total_seconds(),
) -> Plan:
    """Everything the planner writes for ``ws`` (see the module docstring).

    ``pods`` are the workload's pods (:func:`workload_pods`); ``latest`` is the workload's current
    version (:func:`latest_version`), None to skip deletion costs until it is known.
    ``recover_after_seconds`` is the Adaptive window after which a ``Schedulable=False`` subset
    without stuck pods turns True again (Kruise: 300 s).
    """
    recover_after = timedelta(seconds=recover_after_seconds)
    events: list[str] = []
    try:
        replicas = workload_replicas(ws, workload, whitelist=whitelist)
    except ReplicasPathError as exc:
        return Plan(ws.key, ws.status, events=[f"cannot read workload replicas: {exc}"])
    mine = [r for r in reservations if r.workloadspread == ws.key]
    groupings = group_by_version(
        ws, pods, replicas=replicas, nodes=nodes, versioned_kinds=versioned_kinds
    )
    versioned_buckets = {v: g.buckets for v, g in groupings.items()}
    pod_patches: dict[str, JSON] = {}
    all_buckets: dict[str, list[Pod]] = {s.name: [] for s in ws.subsets}
    all_buckets[FAKE_SUBSET] = []
    for grouping in groupings.values():
        pod_patches.update(grouping.pod_patches)
        for name, bucket in grouping.buckets.items():
            all_buckets.setdefault(name, []).extend(bucket)

    costs: dict[str, str] = {}
    wanted: dict[str, str] = {}
    if latest is not None:
        values = deletion_costs(ws, versioned_buckets, replicas=replicas, latest_version=latest)
        grouped_pods = [p for g in groupings.values() for b in g.buckets.values() for p in b]
        costs = annotation_updates(values, grouped_pods)
        wanted = {key: str(value) for key, value in values.items()}

    wake: list[datetime] = []
    top, stuck = _statuses(
        ws,
        all_buckets,
        ws.status.subset_statuses,
        (),
        replicas=replicas,
        now=now,
        wake=wake,
        events=events,
        recover_after=recover_after,
    )
    versioned: dict[str, tuple[SubsetStatus, ...]] = {}
    old_versioned = ws.status.versioned_subset_statuses
    versions = list(versioned_buckets)
    versions += [v for v in sorted(old_versioned) if v not in versioned_buckets]
    versions += sorted({r.version for r in mine} - set(versions))
    for version in versions:
        statuses, _ = _statuses(
            ws,
            versioned_buckets.get(version, {}),
            old_versioned.get(version, ()),
            [r for r in mine if r.version == version],
            replicas=replicas,
            now=now,
            wake=wake,
            events=[],
            recover_after=recover_after,
        )
        if version in versioned_buckets or not _is_empty(statuses):
            versioned[version] = tuple(statuses)

    closed = unschedulable_subsets(ws)
    evictions = [
        Eviction(
            pod=pod_state.key(pod),
            subset=name,
            reason=(
                f"unschedulable for more than {ws.schedule_strategy.reschedule_critical_seconds}s "
                f"in subset {name}"
            ),
        )
        for name, pods_ in stuck.items()
        if name in closed
        for pod in pods_
    ]
    future = [t for t in wake if t >= now]
    status = Status(
        observed_generation=ws.generation,
        subset_statuses=tuple(top),
        versioned_subset_statuses=versioned,
    )
    return Plan(
        workloadspread=ws.key,
        status=status,
        deletion_costs=costs,
        wanted_costs=wanted,
        pod_patches=pod_patches,
        evictions=evictions,
        requeue_at=min(future) if future else None,
        events=events,
    )

