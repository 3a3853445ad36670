"""``spreadbus admit -f FILE --pod POD [--operation CREATE|UPDATE|DELETE|EVICT] [--old-pod POD]
[--now T]``.

The pod webhook's answer for POD given the objects in FILE: every registered feature decides in
registry order, as the webhook's handlers on the pod paths do, and the first denial wins (for
WorkloadSpread see :mod:`spreadbus.features.workloadspread.offline`, for PodUnavailableBudget
:mod:`spreadbus.features.podunavailablebudget.offline`). Each feature sees the pod as the patches
before it left it, and ``patch`` lists their operations one after another. An UPDATE needs the
stored pod (``--old-pod``); POD is then the new one. A denial prints ``code`` (the HTTP status)
and ``message``. Exit 0 when allowed, 1 when denied, 2 on unreadable input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kubesemantics import json_patch
from spreadbus.cli.offline_input import InputError, fail, read_now, read_objects
from spreadbus.engine.feature import UnreadableInput
from spreadbus.features.registry import BUILTIN


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", required=True,
                        help="YAML or JSON objects: the cluster's state (- for stdin)")
    parser.add_argument("--pod", required=True, help="file holding the pod of the request")
    parser.add_argument(
        "--operation", choices=("CREATE", "UPDATE", "DELETE", "EVICT"), default="CREATE",
        type=str.upper,
        help="the request: a pod's CREATE, UPDATE or DELETE, or an eviction (EVICT); "
        "default: %(default)s",
    )
    parser.add_argument("--old-pod", help="file holding the stored pod (required for UPDATE)")
    parser.add_argument("--now", help="RFC 3339 time of the request (default: the clock)")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text",
                        help="text or json (default: %(default)s)")


def _read_pod(path: str, option: str) -> dict[str, Any]:
    pods = [o for o in read_objects(path, option) if o.get("kind", "Pod") == "Pod"]
    if not pods:
        raise InputError(f"no Pod in {path}", file=path)
    return pods[0]


def run(args: argparse.Namespace) -> int:
    if args.operation == "UPDATE" and not args.old_pod:
        return fail("--old-pod is required with --operation UPDATE", args.output)
    try:
        now = read_now(args.now)
        objects = read_objects(args.filename)
        pod = _read_pod(args.pod, "--pod")
        old_pod = _read_pod(args.old_pod, "--old-pod") if args.old_pod else None
    except InputError as exc:
        return fail(exc, args.output)
    if args.operation != "UPDATE":
        old_pod = None
    allowed, message = True, ""
    answer: dict[str, Any] = {}
    lines: list[str] = []
    patch: list[Any] = []
    current = pod
    for feature in BUILTIN:
        if feature.offline_admit is None:
            continue
        try:
            decision = feature.offline_admit(
                current, objects, operation=args.operation, now=now, old_pod=old_pod
            )
        except UnreadableInput as exc:
            return fail(exc, args.output, file=args.filename if exc.in_file else None)
        answer.update(decision.answer)
        lines.extend(decision.lines)
        if decision.patch:
            patch.extend(decision.patch)
            current = json_patch.apply(current, [dict(op) for op in decision.patch])
            answer["patch"] = list(patch)
        if not decision.allowed:
            allowed, message = False, decision.message
            answer.update(allowed=False, code=decision.code, message=message)
            answer.setdefault("reason", decision.reason)
            break
    if args.output == "json":
        print(json.dumps(answer))
    else:
        print("allowed" if allowed else f"denied: {message}")
        for line in lines:
            print(line)
        for op in patch:
            print(f"  {json.dumps(op)}")
    if not allowed:
        print(message, file=sys.stderr)
    return 0 if allowed else 1
