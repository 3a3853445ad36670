"""``spreadbus validate -f FILE [--old FILE]``: the validating webhooks' answers, offline.

Every object in FILE of a kind a registered feature validates (WorkloadSpread,
UnitedDeployment, PodUnavailableBudget, WorkloadRebalancer) goes through that kind's defaulting
webhook (WorkloadSpread has none: the object is unchanged), then is validated as a CREATE, or as
an UPDATE from the object of the same kind, namespace and name in ``--old`` (with one policy in
FILE, the first of its kind there; with several, one that ``--old`` lacks is a CREATE), against
every other object in FILE, which the feature reads as context (for WorkloadSpread: other
WorkloadSpreads for targetRef conflicts, the target workload for patch checks, and a
``kruise-configuration`` ConfigMap for the custom workload whitelist). An object of the same
kind, namespace and name as one before it in FILE is another version of that one (the stored
object beside the edit) and only context. Exit 0 when every one is allowed, 1 when any is
denied, 2 when the input cannot be read.

Before that, the object is decoded as the API server decodes it under ``fieldValidation=Strict``
(kubectl's default): a field its CRD's schema (``deploy/crds``, or ``--crds DIR``) does not
declare, ``metadata`` included, refuses it, each such field an error of its own, and the webhook
is not consulted, as the API server never calls it for an object it cannot decode.

For one policy, text is ``allowed`` or ``denied:`` and an error a line, and ``-o json`` prints
``{"allowed", "errors": [{"field", "type", "message"}], "defaulted"}``, ``defaulted`` whether or
not the object is allowed. For several, each text line starts with the object's
``Kind/namespace/name`` (``Kind/name`` when it names no namespace, as a cluster-scoped object
does): ``allowed``, or ``denied:`` and one error; ``-o json`` prints ``{"allowed", "results":
[...]}``, each result that object's answer with its ``apiVersion``, ``kind``, ``namespace`` and
``name``.

``--uniteddeployment-control-plane true`` answers as the webhook of a multi-cluster host does
(the planner's and webhook's flag of that name): the host runs no workloads, so a
UnitedDeployment subset without a ``targetCluster`` is refused. A ``targetCluster`` is judged
either way, against the cluster registry's objects in FILE.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from kubesemantics.field_errors import FieldError, describe, invalid
from kubesemantics.field_errors import Path as FieldPath
from kubesemantics.group_version import api_group
from kubesemantics.structural_schema import unknown_fields
from spreadbus.cli import crd_schemas
from spreadbus.cli.offline_input import InputError, fail, read_objects
from spreadbus.engine.feature import UnreadableInput, Validator
from spreadbus.features.registry import BUILTIN


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", required=True,
                        help="YAML or JSON objects (- for stdin): every WorkloadSpread, "
                        "UnitedDeployment, PodUnavailableBudget and WorkloadRebalancer in it is "
                        "validated, the other objects are their context")
    parser.add_argument("--old", help="the stored objects being updated (validates an UPDATE)")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text",
                        help="text or json (default: %(default)s)")
    parser.add_argument("--crds", type=Path, default=crd_schemas.DEFAULT_DIR,
                        help="the CRDs whose schemas name the known fields (default: %(default)s)")
    parser.add_argument("--uniteddeployment-control-plane", choices=("true", "false"),
                        default="false",
                        help="validate as the webhook of a multi-cluster host run so does: its "
                        "cluster runs no workloads, so every UnitedDeployment subset must name "
                        "its targetCluster (default: %(default)s)")


def _group_kind(obj: dict[str, Any]) -> tuple[str, str]:
    return (api_group(str(obj.get("apiVersion") or "")), str(obj.get("kind") or ""))


def _validators(control_plane: bool = False) -> dict[tuple[str, str], Validator]:
    return {kind: (feature.control_plane_validators.get(kind, v) if control_plane else v)
            for feature in BUILTIN for kind, v in feature.validators.items()}


def _unknown_field_errors(
    obj: dict[str, Any], schemas: crd_schemas.SchemaMap
) -> list[FieldError]:
    version = str(obj.get("apiVersion") or "").rpartition("/")[2]
    schema = schemas.get((*_group_kind(obj), version))
    if schema is None:
        return []
    return [invalid(FieldPath(path), f'unknown field "{path}"')
            for path in unknown_fields(schema, obj, root=True)]


def _name(obj: Mapping[str, Any]) -> tuple[str, str]:
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping):
        return "", ""
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def _label(obj: Mapping[str, Any]) -> str:
    """``Kind/namespace/name``, or ``Kind/name`` for an object that names no namespace."""
    namespace, name = _name(obj)
    return "/".join(part for part in (str(obj.get("kind") or ""), namespace, name) if part)


def _policies(objects: Sequence[dict[str, Any]],
              validators: Mapping[tuple[str, str], Validator]) -> list[int]:
    """Where the policies are in FILE: the first object of each kind, namespace and name a
    feature validates. A later one of the same identity is another version of it (the stored
    one, kept beside the edit), read as context only."""
    seen: set[tuple[tuple[str, str], tuple[str, str]]] = set()
    found = []
    for i, obj in enumerate(objects):
        identity = (_group_kind(obj), _name(obj))
        if identity[0] in validators and identity not in seen:
            seen.add(identity)
            found.append(i)
    return found


def _old_of(obj: dict[str, Any], old_objects: Sequence[dict[str, Any]],
            only_one: bool) -> dict[str, Any] | None:
    """The stored object ``obj`` updates: the one of its kind, namespace and name in ``--old``,
    or, when FILE holds one policy, the first of its kind there (a file of one object each)."""
    same_kind = [o for o in old_objects if _group_kind(o) == _group_kind(obj)]
    named = next((o for o in same_kind if _name(o) == _name(obj)), None)
    if named is not None or not only_one:
        return named
    return same_kind[0] if same_kind else None


class _Result(NamedTuple):
    obj: dict[str, Any]
    errors: Sequence[FieldError]
    defaulted: Mapping[str, Any]


def run(args: argparse.Namespace) -> int:
    validators = _validators(args.uniteddeployment_control_plane == "true")
    kinds = " or ".join(kind for _, kind in validators)
    try:
        objects = read_objects(args.filename)
        old_objects = read_objects(args.old, "--old") if args.old else None
        schemas = crd_schemas.read_schemas(args.crds)
    except InputError as exc:
        return fail(exc, args.output)
    if not schemas:
        print(f"note: no CRDs in {args.crds}: unknown fields are not checked", file=sys.stderr)
    indexes = _policies(objects, validators)
    if not indexes:
        return fail(f"holds no {kinds}", args.output, file=args.filename)
    olds = [None if old_objects is None
            else _old_of(objects[i], old_objects, only_one=len(indexes) == 1) for i in indexes]
    if old_objects is not None and all(old is None for old in olds):
        what = (objects[indexes[0]].get("kind") if len(indexes) == 1
                else " or ".join(_label(objects[i]) for i in indexes))
        return fail(f"holds no {what} (--old)", args.output, file=args.old)
    results: list[_Result] = []
    for index, old in zip(indexes, olds, strict=True):
        obj = objects[index]
        unknown = _unknown_field_errors(obj, schemas)
        if unknown:
            results.append(_Result(obj, unknown, obj))
            continue
        try:
            answer = validators[_group_kind(obj)](
                obj, old=old, context=objects[:index] + objects[index + 1:]
            )
        except UnreadableInput as exc:
            return fail(exc, args.output, file=args.filename if exc.in_file else None)
        results.append(_Result(obj, answer.errors,
                               obj if answer.defaulted is None else answer.defaulted))
    if len(results) == 1:
        return _answer(args.output, results[0].errors, results[0].defaulted)
    return _answers(args.output, results)


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


def _answers(output: str, results: Sequence[_Result]) -> int:
    """Several policies: one answer each, in the file's order; denied when any is."""
    allowed = all(not r.errors for r in results)
    if output == "json":
        print(json.dumps({"allowed": allowed, "results": [
            {"apiVersion": r.obj.get("apiVersion"), "kind": r.obj.get("kind"),
             "namespace": _name(r.obj)[0], "name": _name(r.obj)[1], "allowed": not r.errors,
             "errors": [e.to_dict() for e in r.errors], "defaulted": r.defaulted}
            for r in results]}))
    else:
        for r in results:
            if not r.errors:
                print(f"{_label(r.obj)}: allowed")
            for error in r.errors:
                print(f"{_label(r.obj)}: denied: {describe(error)}")
    return 0 if allowed else 1
