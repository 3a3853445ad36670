"""``spreadbus validate -f FILE [--old FILE]``: the WorkloadSpread webhook's answer, offline.

The first WorkloadSpread in FILE is validated as a CREATE (or as an UPDATE from the first
WorkloadSpread in ``--old``) against every other object in FILE: other WorkloadSpreads for
targetRef conflicts, the target workload for patch checks, and a ``kruise-configuration``
ConfigMap for the custom workload whitelist. Exit 0 when allowed, 1 when denied, 2 when the input
cannot be read.
"""

from __future__ import annotations

import argparse
import json

from spreadbus.cli.offline_input import InputError, fail, read_object_set
from spreadbus.core.field_errors import describe
from spreadbus.core.workloadspread.model import api_group
from spreadbus.core.workloadspread.validation import validate_workloadspread


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", required=True, help="YAML or JSON objects")
    parser.add_argument("--old", help="the object being updated (validates an UPDATE)")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")


def _target_workload(
    ws: dict[str, object], others: list[dict[str, object]]
) -> dict[str, object] | None:
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


def run(args: argparse.Namespace) -> int:
    try:
        objects = read_object_set(args.filename)
        old_objects = read_object_set(args.old) if args.old else None
    except InputError as exc:
        return fail(exc)
    if not objects.workloadspreads:
        return fail(f"no WorkloadSpread in {args.filename}")
    if old_objects is not None and not old_objects.workloadspreads:
        return fail(f"no WorkloadSpread in {args.old}")
    ws, *others = objects.workloadspreads
    errors = validate_workloadspread(
        ws,
        others=others,
        old=old_objects.workloadspreads[0] if old_objects is not None else None,
        whitelist=objects.whitelist,
        workload=_target_workload(ws, objects.others),
    )
    allowed = not errors
    if args.output == "json":
        print(json.dumps({"allowed": allowed, "errors": [e.to_dict() for e in errors]}))
    elif allowed:
        print("allowed")
    else:
        print("denied:")
        for error in errors:
            print(f"  {describe(error)}")
    return 0 if allowed else 1
