"""``spreadbus validate -f FILE [--old FILE]``: a validating webhook's answer, offline.

The first object in FILE of a kind a registered feature validates (WorkloadSpread, ...) goes
through that kind's defaulting webhook (WorkloadSpread has none: the object is unchanged), then is
validated as a CREATE (or as an UPDATE from the first object of the same kind in ``--old``)
against every other object in FILE, which the feature reads as context (for WorkloadSpread: other
WorkloadSpreads for targetRef conflicts, the target workload for patch checks, and a
``kruise-configuration`` ConfigMap for the custom workload whitelist). Exit 0 when allowed, 1 when
denied, 2 when the input cannot be read. ``-o json`` prints ``{"allowed", "errors": [{"field",
"type", "message"}], "defaulted"}``, ``defaulted`` whether or not the object is allowed.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from kubesemantics.field_errors import describe
from kubesemantics.group_version import api_group
from spreadbus.cli.offline_input import InputError, fail, read_objects
from spreadbus.engine.feature import UnreadableInput, Validator
from spreadbus.features.registry import BUILTIN


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", required=True, help="YAML or JSON objects")
    parser.add_argument("--old", help="the object being updated (validates an UPDATE)")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")


def _group_kind(obj: dict[str, Any]) -> tuple[str, str]:
    return (api_group(str(obj.get("apiVersion") or "")), str(obj.get("kind") or ""))


def _validators() -> dict[tuple[str, str], Validator]:
    return {kind: v for feature in BUILTIN for kind, v in feature.validators.items()}


def run(args: argparse.Namespace) -> int:
    validators = _validators()
    kinds = " or ".join(kind for _, kind in validators)
    try:
        objects = read_objects(args.filename)
        old_objects = read_objects(args.old) if args.old else None
    except InputError as exc:
        return fail(exc)
    index = next((i for i, o in enumerate(objects) if _group_kind(o) in validators), None)
    if index is None:
        return fail(f"no {kinds} in {args.filename}")
    obj = objects[index]
    group_kind = _group_kind(obj)
    old = None
    if old_objects is not None:
        old = next((o for o in old_objects if _group_kind(o) == group_kind), None)
        if old is None:
            return fail(f"no {group_kind[1]} in {args.old}")
    try:
        answer = validators[group_kind](
            obj, old=old, context=objects[:index] + objects[index + 1:]
        )
    except UnreadableInput as exc:
        return fail(f"{args.filename}: {exc}" if exc.in_file else exc)
    errors = answer.errors
    allowed = not errors
    if args.output == "json":
        defaulted = obj if answer.defaulted is None else answer.defaulted
        print(json.dumps({"allowed": allowed, "errors": [e.to_dict() for e in errors],
                          "defaulted": defaulted}))
    elif allowed:
        print("allowed")
    else:
        print("denied:")
        for error in errors:
            print(f"  {describe(error)}")
    return 0 if allowed else 1
