"""``spreadbus events schema``: print the JSON Schema of every bus message.

The schema is generated from the message types, so subscribers in other languages can generate
their own types from it or validate what they receive.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    subs = parser.add_subparsers(dest="events_command", metavar="ACTION", required=True)
    schema = subs.add_parser("schema", help="print the JSON Schema of the bus messages")
    schema.add_argument("-o", "--output", type=Path, help="write to this file instead of stdout")


def run(args: argparse.Namespace) -> int:
    from events.schema import json_schema

    text = json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
    if args.output is not None:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0
