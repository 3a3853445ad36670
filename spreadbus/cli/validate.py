"""``spreadbus validate -f FILE [--old FILE]``: a validating webhook's answer, offline.

The first object in FILE of a kind a registered feature validates (WorkloadSpread, ...) goes
through that kind's defaulting webhook (WorkloadSpread has none: the object is unchanged), then is
validated as a CREATE (or as an UPDATE from the first object of the same kind in ``--old``)
against every other object in FILE, which the feature reads as context (for WorkloadSpread: other
WorkloadSpreads for targetRef conflicts, the target workload for patch checks, and a
``kruise-configuration`` ConfigMap for the custom workload whitelist). Exit 0 when allowed, 1 when
denied, 2 when the input cannot be read.

Before that, the object is decoded as the API server decodes it under ``fieldValidation=Strict``
(kubectl's default): a field its CRD's schema (``deploy/crds``, or ``--crds DIR``) does not
declare, ``metadata`` included, refuses it, each such field an error of its own, and the webhook
is not consulted, as the API server never calls it for an object it cannot decode.

``-o json`` prints ``{"allowed", "errors": [{"field", "type", "message"}], "defaulted"}``,
``defaulted`` whether or not the object is allowed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kubesemantics.field_errors import FieldError, describe, invalid
from kubesemantics.field_errors import Path as FieldPath
from kubesemantics.group_version import api_group
from kubesemantics.structural_schema import unknown_fields
from spreadbus.cli import crd_schemas
from spreadbus.cli.offline_input import InputError, fail, read_objects
from spreadbus.engine.feature import UnreadableInput, Validator
from spreadbus.features.registry import BUILTIN


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", required=True, help="YAML or JSON objects")
    parser.add_argument("--old", help="the object being updated (validates an UPDATE)")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.add_argument("--crds", type=Path, default=crd_schemas.DEFAULT_DIR,
                        help="the CRDs whose schemas name the known fields (default: %(default)s)")


def _group_kind(obj: dict[str, Any]) -> tuple[str, str]:
    return (api_group(str(obj.get("apiVersion") or "")), str(obj.get("kind") or ""))


def _validators() -> dict[tuple[str, str], Validator]:
    return {kind: v for feature in BUILTIN for kind, v in feature.validators.items()}


def _unknown_field_errors(
    obj: dict[str, Any], schemas: crd_schemas.SchemaMap
) -> list[FieldError]:
    version = str(obj.get("apiVersion") or "").rpartition("/")[2]
    schema = schemas.get((*_group_kind(obj), version))
    if schema is None:
        return []
    return [invalid(FieldPath(path), f'unknown field "{path}"')
            for path in unknown_fields(schema, obj, root=True)]


def run(args: argparse.Namespace) -> int:
    validators = _validators()
    kinds = " or ".join(kind for _, kind in validators)
    try:
        objects = read_objects(args.filename)
        old_objects = read_objects(args.old) if args.old else None
        schemas = crd_schemas.read_schemas(args.crds)
    except InputError as exc:
        return fail(exc)
    if not schemas:
        print(f"note: no CRDs in {args.crds}: unknown fields are not checked", file=sys.stderr)
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
    unknown = _unknown_field_errors(obj, schemas)
    if unknown:
        return _answer(args.output, unknown, obj)
    try:
        answer = validators[group_kind](
            obj, old=old, context=objects[:index] + objects[index + 1:]
        )
    except UnreadableInput as exc:
        return fail(f"{args.filename}: {exc}" if exc.in_file else exc)
    return _answer(args.output, answer.errors,
                   obj if answer.defaulted is None else answer.defaulted)


def _answer(output: str, errors: Sequence[FieldError], defaulted: Mapping[str, Any]) -> int:
    allowed = not errors
    if output == "json":
        print(json.dumps({"allowed": allowed, "errors": [e.to_dict() for e in errors],
                          "defaulted": defaulted}))
    elif allowed:
        print("allowed")
    else:
        print("denied:")
        for error in errors:
            print(f"  {describe(error)}")
    return 0 if allowed else 1
