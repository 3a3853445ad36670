"""The WorkloadSpread answers of ``spreadbus validate`` and ``spreadbus plan``, offline.

``validate``: a WorkloadSpread is checked as a CREATE (an UPDATE with ``old``) against the other
objects of the input: other WorkloadSpreads for targetRef conflicts, the target workload for
patch checks, and a ``kruise-configuration`` ConfigMap for the custom workload whitelist.

``plan``: for every WorkloadSpread, its status, the deletion-cost annotation value the planner
wants on every pod it governs, the pods to evict for adaptive rescheduling; plus, per
WorkloadSpread, the annotations for pre-existing pods matched to a subset and the time of the next
wake-up. The planner itself writes only the costs that differ from a pod's annotation
(``Plan.deletion_costs``); here every wanted value is shown (``Plan.wanted_costs``), including
those a pod already carries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from spreadbus.engine.feature import OfflinePlan, OfflineValidation, UnreadableInput
from spreadbus.features.workloadspread.core.documents import (
    JSON,
    DocumentError,
    ObjectSet,
    is_workloadspread,
    sort_objects,
)
from spreadbus.features.workloadspread.core.model import (
    api_group,
    format_time,
    from_object,
    status_to_json,
)
from spreadbus.features.workloadspread.core.occupancy import reservations_from_status
from spreadbus.features.workloadspread.core.reconcile import (
    latest_version,
    plan_workloadspread,
    workload_pods,
)
from spreadbus.features.workloadspread.core.target import lookup_in
from spreadbus.features.workloadspread.core.validation import validate_workloadspread


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
    objects = _sorted(objects_in)
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


__all__ = ["is_workloadspread", "offline_plan", "validate_offline"]
