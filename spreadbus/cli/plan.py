"""``spreadbus plan -f FILE [--now T]``: what the planner would write for the objects in FILE.

Each registered feature adds its part (for WorkloadSpread: every WorkloadSpread's status, the
deletion costs it wants on its pods and the pods to evict; see
:mod:`spreadbus.features.workloadspread.offline`). A key several features fill (``pods``) is
merged entry by entry, so one pod can show a WorkloadSpread's deletion cost and a
UnitedDeployment's labels. Exit 0, or 2 when the input cannot be read.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

from spreadbus.cli.offline_input import InputError, fail, read_now, read_objects
from spreadbus.engine.feature import UnreadableInput
from spreadbus.features.registry import BUILTIN


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", required=True,
                        help="YAML or JSON objects: the cluster's state (- for stdin)")
    parser.add_argument("--now", help="RFC 3339 time to plan at (default: the clock)")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text",
                        help="text or json (default: %(default)s)")


def merge_part(answer: dict[str, Any], part: Mapping[str, Any]) -> None:
    """Add one feature's keys; where both hold objects, entries merge and their fields too."""
    for key, value in part.items():
        mine = answer.get(key)
        if not (isinstance(mine, dict) and isinstance(value, Mapping)):
            answer[key] = dict(value) if isinstance(value, Mapping) else value
            continue
        for entry, fields in value.items():
            known = mine.get(entry)
            if isinstance(known, Mapping) and isinstance(fields, Mapping):
                mine[entry] = {**known, **fields}
            else:
                mine[entry] = fields


def run(args: argparse.Namespace) -> int:
    try:
        now = read_now(args.now)
        objects = read_objects(args.filename)
    except InputError as exc:
        return fail(exc, args.output)
    answer: dict[str, Any] = {}
    lines: list[str] = []
    for feature in BUILTIN:
        if feature.offline_plan is None:
            continue
        try:
            part = feature.offline_plan(objects, now)
        except UnreadableInput as exc:
            return fail(exc, args.output, file=args.filename if exc.in_file else None)
        merge_part(answer, part.answer)
        lines.extend(part.lines)
    if args.output == "json":
        print(json.dumps(answer))
    else:
        for line in lines:
            print(line)
    return 0
