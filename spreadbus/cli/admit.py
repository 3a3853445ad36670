"""``spreadbus admit -f FILE --pod POD [--operation CREATE|DELETE|EVICT] [--now T]``.

The pod webhook's answer for POD given the objects in FILE: every registered feature decides in
registry order, as the webhook's handlers on the pod paths do, and the first denial wins (for
WorkloadSpread see :mod:`spreadbus.features.workloadspread.offline`). Exit 0 when allowed, 1 when
denied, 2 on unreadable input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from spreadbus.cli.offline_input import InputError, fail, read_now, read_objects
from spreadbus.engine.feature import UnreadableInput
from spreadbus.features.registry import BUILTIN


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
        objects = read_objects(args.filename)
        pods = [o for o in read_objects(args.pod) if o.get("kind", "Pod") == "Pod"]
    except InputError as exc:
        return fail(exc)
    if not pods:
        return fail(f"no Pod in {args.pod}")
    pod = pods[0]
    allowed, message = True, ""
    answer: dict[str, Any] = {}
    lines: list[str] = []
    patch: list[Any] = []
    for feature in BUILTIN:
        if feature.offline_admit is None:
            continue
        try:
            decision = feature.offline_admit(pod, objects, operation=args.operation, now=now)
        except UnreadableInput as exc:
            return fail(f"{args.filename}: {exc}" if exc.in_file else exc)
        answer.update(decision.answer)
        lines.extend(decision.lines)
        patch.extend(decision.patch)
        if not decision.allowed:
            allowed, message = False, decision.message
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
