"""``spreadbus admit -f FILE --pod POD [--operation CREATE|DELETE|EVICT] [--now T]``.

The pod webhook's answer for POD given the WorkloadSpreads, workloads, ReplicaSets and existing
pods in FILE. A WorkloadSpread's status ``creatingPods``/``deletingPods`` count as reservations in
flight: those of ``versionedSubsetStatuses[version]`` for the pod's version, or, when the status
has no entry for that version, those of the top-level ``subsetStatuses`` (a status written before
versioned statuses existed keeps its admissions there). The uid given to a pod without a name is
derived from the pod itself, so the answer is the same every time. A steered pod's patch carries
the deletion cost the planner gives a pod within its subset's limit, when the webhook could tell it
(for a Deployment, the pod's ReplicaSet must be in FILE with the Deployment's template), so
``spreadbus plan`` over FILE plus the patched pod wants that same value. A DELETE frees the
pod's slot for a replacement (a ``deleting`` reservation); an EVICT frees nothing, since a
PodDisruptionBudget may still refuse it after admission. Exit 0 when allowed, 1 when
denied, 2 on unreadable input, including a ``targetFilter.replicasPathList`` entry that does not
resolve in the workload (the replicas for percentages cannot be known; Kruise's controller fails
on it too).
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid

from spreadbus.cli.offline_input import InputError, fail, read_now, read_object_set, read_objects
from spreadbus.features.workloadspread.core.admission import admit_create, admit_delete
from spreadbus.features.workloadspread.core.model import WorkloadSpread, from_object
from spreadbus.features.workloadspread.core.occupancy import (
    SubsetLoad,
    loads_from_pods,
    reservations_from_status,
)
from spreadbus.features.workloadspread.core.target import (
    ReplicasPathError,
    lookup_in,
    workload_replicas,
)
from spreadbus.features.workloadspread.core.workload_kinds import replicas_path_problem


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", required=True, help="YAML or JSON objects")
    parser.add_argument("--pod", required=True, help="file holding the pod of the request")
    parser.add_argument(
        "--operation", choices=("CREATE", "DELETE", "EVICT"), default="CREATE", type=str.upper
    )
    parser.add_argument("--now", help="RFC 3339 time of the request (default: the clock)")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    try:
        now = read_now(args.now)
        objects = read_object_set(args.filename)
        pods = [o for o in read_objects(args.pod) if o.get("kind", "Pod") == "Pod"]
    except InputError as exc:
        return fail(exc)
    if not pods:
        return fail(f"no Pod in {args.pod}")
    pod = pods[0]
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
            raise InputError(f"WorkloadSpread {ws.namespace}/{ws.name}: {detail}") from exc

    def loads_of(ws: WorkloadSpread, version: str) -> dict[str, SubsetLoad]:
        existing = [
            p
            for p in objects.pods
            if p.get("metadata", {}).get("namespace", "default") == ws.namespace
        ]
        reservations = reservations_from_status(ws, version=version)
        return loads_from_pods(ws, existing, reservations).get(version, {})

    if args.operation == "CREATE":
        digest = json.dumps(pod, sort_keys=True, separators=(",", ":"))
        try:
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
        except InputError as exc:
            return fail(exc)
    else:
        decision = admit_delete(
            pod, spreads, loads_of=loads_of, now=now, eviction=args.operation == "EVICT"
        )
    if args.output == "json":
        print(json.dumps(decision.to_json()))
    else:
        verdict = "allowed" if decision.allowed else f"denied: {decision.message}"
        print(verdict)
        print(f"workloadSpread: {decision.workloadspread or '-'}")
        print(f"subset: {decision.subset or '-'}")
        for op in decision.patch:
            print(f"  {json.dumps(op)}")
    if not decision.allowed:
        print(decision.message, file=sys.stderr)
    return 0 if decision.allowed else 1
