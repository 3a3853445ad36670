"""``spreadbus plan -f FILE [--now T]``: what the planner would write for the objects in FILE.

For every WorkloadSpread in FILE: its status, the deletion-cost annotation value the planner
wants on every pod it governs, the pods to evict for adaptive rescheduling; plus, per
WorkloadSpread, the annotations for pre-existing pods matched to a subset and the time of the next
wake-up. Exit 0, or 2 when the input cannot be read.

The planner itself writes only the costs that differ from a pod's annotation
(``Plan.deletion_costs``). Here every wanted value is shown (``Plan.wanted_costs``), including
those a pod already carries.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from spreadbus.cli.offline_input import InputError, fail, read_now, read_object_set
from spreadbus.core.workloadspread.model import format_time, from_object, status_to_json
from spreadbus.core.workloadspread.occupancy import reservations_from_status
from spreadbus.core.workloadspread.reconcile import (
    latest_version,
    plan_workloadspread,
    workload_pods,
)
from spreadbus.core.workloadspread.target import lookup_in


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", required=True, help="YAML or JSON objects")
    parser.add_argument("--now", help="RFC 3339 time to plan at (default: the clock)")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    try:
        now = read_now(args.now)
        objects = read_object_set(args.filename)
    except InputError as exc:
        return fail(exc)
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
    if args.output == "json":
        print(json.dumps(result))
        return 0
    for key, entry in result["workloadSpreads"].items():
        print(f"WorkloadSpread {key}")
        for s in entry["status"]["subsetStatuses"]:
            print(f"  {s['name']}: replicas={s['replicas']} missingReplicas={s['missingReplicas']}")
    for pod_key, value in result["pods"].items():
        print(f"pod {pod_key}: deletion cost {value['deletionCost']}")
    for eviction in result["evictions"]:
        print(f"evict {eviction['pod']}: {eviction['reason']}")
    return 0
