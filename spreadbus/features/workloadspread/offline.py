"""The WorkloadSpread answers of ``spreadbus validate`` and ``spreadbus plan``, offline.

``validate``: a WorkloadSpread is checked as a CREATE (an UPDATE with ``old``) against the other
objects of the input: other WorkloadSpreads for targetRef conflicts, the target workload for
patch checks, and a ``kruise-configuration`` ConfigMap for the custom workload whitelist.

``admit``: the pod webhook's answer for a pod given the WorkloadSpreads, workloads, ReplicaSets
and existing pods of the input. A WorkloadSpread's status ``creatingPods``/``deletingPods`` count
as reservations in flight: those of ``versionedSubsetStatuses[version]`` for the pod's version, or,
when the status has no entry for that version, those of the top-level ``subsetStatuses`` (a status
written before versioned statuses existed keeps its admissions there). The uid given to a pod
without a name is derived from the pod itself, so the answer is the same every time. A steered
pod's patch carries the deletion cost the planner gives a pod within its subset's limit, when the
webhook could tell it (for a Deployment, the pod's ReplicaSet must be in the input with the
Deployment's template). A DELETE frees the pod's slot for a replacement (a ``deleting``
reservation); an EVICT frees nothing, since a PodDisruptionBudget may still refuse it after
admission. A ``targetFilter.replicasPathList`` entry that does not resolve in the workload makes
the input unreadable (the replicas for percentages cannot be known; Kruise's controller fails on
it too).

``plan``: for every WorkloadSpread, its status, the deletion-cost annotation value the planner
wants on every pod it governs, the pods to evict for adaptive rescheduling; plus, per
WorkloadSpread, the annotations for pre-existing pods matched to a subset and the time of the next
wake-up. The planner itself writes only the costs that differ from a pod's annotation
(``Plan.deletion_costs``); here every wanted value is shown (``Plan.wanted_costs``), including
those a pod already carries. A WorkloadSpread with a pending rebalance request adds the moves it
starts now to ``evictions`` (within the default unavailable limit and the PodDisruptionBudgets
and PodUnavailableBudgets of the input, nothing being in flight) and, once nothing can move,
``rebalanceHandled``: the request to record as handled.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from spreadbus.clusterregistry.registry import host_objects
from spreadbus.engine.feature import (
    OfflineAdmission,
    OfflinePlan,
    OfflineValidation,
    UnreadableInput,
)
from spreadbus.features.workloadspread.core.admission import (
    AdmissionDecision,
    admit_create,
    admit_delete,
)
from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.documents import (
    JSON,
    DocumentError,
    ObjectSet,
    is_workloadspread,
    sort_objects,
)
from spreadbus.features.workloadspread.core.model import (
    Status,
    WorkloadSpread,
    api_group,
    format_time,
    from_object,
    status_to_json,
)
from spreadbus.features.workloadspread.core.occupancy import (
    SubsetLoad,
    loads_from_pods,
    reservations_from_status,
)
from spreadbus.features.workloadspread.core.rebalance import (
    Rebalance,
    budgets_for,
    pending_request,
    rebalance,
)
from spreadbus.features.workloadspread.core.reconcile import (
    latest_version,
    plan_workloadspread,
    workload_pods,
)
from spreadbus.features.workloadspread.core.target import (
    ReplicasPathError,
    lookup_in,
    workload_replicas,
)
from spreadbus.features.workloadspread.core.validation import validate_workloadspread
from spreadbus.features.workloadspread.core.workload_kinds import replicas_path_problem


def _target_workload(ws: Mapping[str, Any], others: Sequence[JSON]) -> JSON | None:
    spec = ws.get("spec")
    ref = spec.get("targetRef") if isinstance(spec, dict) else None
    meta = ws.get("metadata")
    namespace = (meta.get("namespace") if isinstance(meta, dict) else None) or "default"
    if not isinstance(ref, dict):
        return None
    for obj in others:
        obj_meta = obj.get("metadata")
        if not isinstance(obj_meta, dict):
            continue
        if (
            obj.get("kind") == ref.get("kind")
            and obj_meta.get("name") == ref.get("name")
            and (obj_meta.get("namespace") or "default") == namespace
            and api_group(str(obj.get("apiVersion") or ""))
            == api_group(str(ref.get("apiVersion") or ""))
        ):
            return obj
    return None


def _sorted(objects: Sequence[JSON]) -> ObjectSet:
    try:
        return sort_objects(objects)
    except DocumentError as exc:  # a whitelist ConfigMap that does not decode
        raise UnreadableInput(str(exc)) from exc


def validate_offline(
    obj: JSON, *, old: JSON | None, context: Sequence[JSON]
) -> OfflineValidation:
    objects = _sorted(context)
    errors = validate_workloadspread(
        obj,
        others=objects.workloadspreads,
        old=old,
        whitelist=objects.whitelist,
        workload=_target_workload(obj, objects.others),
    )
    return OfflineValidation(errors=errors)


def offline_plan(objects_in: Sequence[JSON], now: datetime) -> OfflinePlan:
    objects = _sorted(host_objects(objects_in))
    lookup = lookup_in(objects.others)
    whitelist = objects.whitelist
    nodes = {
        str(n.get("metadata", {}).get("name")): n
        for n in objects.nodes
        if isinstance(n.get("metadata"), dict)
    }
    replicasets = [o for o in objects.others if o.get("kind") == "ReplicaSet"]
    result: dict[str, Any] = {"workloadSpreads": {}, "pods": {}, "evictions": []}
    for raw in objects.workloadspreads:
        ws = from_object(raw)
        ref = ws.target_ref
        workload = lookup(ws.namespace, ref.group, ref.kind, ref.name) if ref is not None else None
        pods = workload_pods(ws, workload, objects.pods, lookup=lookup, whitelist=whitelist)
        plan = plan_workloadspread(
            ws,
            workload=workload,
            pods=pods,
            nodes=nodes,
            reservations=reservations_from_status(ws),
            now=now,
            whitelist=whitelist,
            latest=latest_version(ws, workload, replicasets=replicasets),
        )
        entry: dict[str, Any] = {"status": status_to_json(plan.status, api_version=ws.api_version)}
        if plan.pod_patches:
            entry["podPatches"] = plan.pod_patches
        if plan.requeue_at is not None:
            entry["requeueAt"] = format_time(plan.requeue_at)
        if plan.events:
            entry["events"] = plan.events
        result["workloadSpreads"][ws.key] = entry
        for pod_key, cost in plan.wanted_costs.items():
            result["pods"][pod_key] = {"deletionCost": cost}
        result["evictions"].extend({"pod": e.pod, "reason": e.reason} for e in plan.evictions)
        if pending_request(ws):
            step = _rebalance_step(ws, plan.status, workload, pods, objects, whitelist)
            if step.handled is not None:
                entry["rebalanceHandled"] = step.handled
            busy = {e.pod for e in plan.evictions}
            result["evictions"].extend({"pod": m.pod, "reason": m.reason}
                                       for m in step.evictions if m.pod not in busy)
    lines: list[str] = []
    for key, entry in result["workloadSpreads"].items():
        lines.append(f"WorkloadSpread {key}")
        for s in entry["status"]["subsetStatuses"]:
            lines.append(
                f"  {s['name']}: replicas={s['replicas']} missingReplicas={s['missingReplicas']}"
            )
    for pod_key, value in result["pods"].items():
        lines.append(f"pod {pod_key}: deletion cost {value['deletionCost']}")
    for eviction in result["evictions"]:
        lines.append(f"evict {eviction['pod']}: {eviction['reason']}")
    return OfflinePlan(answer=result, lines=lines)


def _rebalance_step(ws: WorkloadSpread, status: Status, workload: Mapping[str, Any] | None,
                    pods: Sequence[Mapping[str, Any]], objects: ObjectSet,
                    whitelist: Whitelist) -> Rebalance:
    """The moves a pending rebalance request starts now, nothing being in flight."""
    try:
        replicas = workload_replicas(ws, workload, whitelist=whitelist)
    except ReplicasPathError:
        return Rebalance(request=pending_request(ws))
    ref = ws.target_ref
    budgets = budgets_for(
        pods, namespace=ws.namespace,
        target=(ref.group, ref.kind, ref.name) if ref is not None else None,
        disruption_budgets=[o for o in objects.others if o.get("kind") == "PodDisruptionBudget"],
        unavailable_budgets=[o for o in objects.others
                             if o.get("kind") == "PodUnavailableBudget"],
    )
    return rebalance(ws, status=status, pods=pods, replicas=replicas, budgets=budgets)


def offline_admit(
    pod: JSON,
    objects_in: Sequence[JSON],
    *,
    operation: str,
    now: datetime,
    old_pod: JSON | None = None,
) -> OfflineAdmission:
    """An UPDATE is not the WorkloadSpread webhook's business: allowed, unchanged."""
    if operation == "UPDATE":
        return OfflineAdmission(allowed=True, answer=AdmissionDecision(
            allowed=True, pod=dict(pod)).to_json())
    objects = _sorted(objects_in)
    spreads = [from_object(o) for o in objects.workloadspreads]
    lookup = lookup_in(objects.others)
    whitelist = objects.whitelist

    def replicas_of(ws: WorkloadSpread) -> int:
        ref = ws.target_ref
        if ref is None:
            return 0
        workload = lookup(ws.namespace, ref.group, ref.kind, ref.name)
        try:
            return workload_replicas(ws, workload, whitelist=whitelist)
        except ReplicasPathError as exc:
            paths = ws.target_filter.replicas_path_list if ws.target_filter else ()
            problem = replicas_path_problem(paths, workload)
            detail = str(problem) if problem else f"spec.targetFilter.replicasPathList: {exc}"
            raise UnreadableInput(
                f"WorkloadSpread {ws.namespace}/{ws.name}: {detail}", in_file=False
            ) from exc

    def loads_of(ws: WorkloadSpread, version: str) -> dict[str, SubsetLoad]:
        existing = [
            p
            for p in objects.pods
            if p.get("metadata", {}).get("namespace", "default") == ws.namespace
        ]
        reservations = reservations_from_status(ws, version=version)
        return loads_from_pods(ws, existing, reservations).get(version, {})

    if operation == "CREATE":
        digest = json.dumps(pod, sort_keys=True, separators=(",", ":"))
        decision = admit_create(
            pod,
            spreads,
            lookup=lookup,
            whitelist=whitelist,
            replicas_of=replicas_of,
            loads_of=loads_of,
            now=now,
            generated_uid=str(uuid.uuid5(uuid.NAMESPACE_URL, digest)),
        )
    else:
        decision = admit_delete(
            pod, spreads, loads_of=loads_of, now=now, eviction=operation == "EVICT"
        )
    lines = [
        f"workloadSpread: {decision.workloadspread or '-'}",
        f"subset: {decision.subset or '-'}",
    ]
    return OfflineAdmission(
        allowed=decision.allowed,
        message=decision.message,
        code=400,
        reason="BadRequest",
        patch=decision.patch,
        answer=decision.to_json(),
        lines=lines,
    )


__all__ = ["is_workloadspread", "offline_admit", "offline_plan", "validate_offline"]
