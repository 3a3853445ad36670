"""``spreadbus why pod NS/NAME`` and ``spreadbus why KIND NS/NAME`` for the kinds the features'
parts of the audit log explain (:func:`spreadbus.audit.why.governing_kinds`).

Answers from an audit database (``--db``, as ``spreadbus audit replay`` writes it); without one,
the history is first replayed from NATS (``--nats-url`` and credentials as every command takes
them, the local stack's by default) into a temporary database.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from spreadbus.audit.times import parse_time
from spreadbus.audit.why import (
    governing_kinds,
    pod_story,
    render_counts,
    render_pod,
    subset_counts_at,
)
from spreadbus.runtime.settings import add_settings_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from spreadbus.audit.settings import WHY_FIELDS, AuditSettings

    kinds = ("pod", *governing_kinds())
    parser.add_argument("kind", metavar="KIND",
                        help=f"what to explain: {', '.join(kinds)}, or a kind of a feature "
                        "plugin's (--feature-plugins)")
    parser.add_argument("target", metavar="NS/NAME", help="its namespace and name")
    parser.add_argument("--at", default="", help="the moment to answer for (ISO 8601, Unix "
                        "seconds or e.g. 2h ago); default: the latest the log knows")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text",
                        help="text or json (default: %(default)s)")
    add_settings_arguments(parser, AuditSettings, only=WHY_FIELDS)


def run(args: argparse.Namespace) -> int:
    from spreadbus.cli.audit import load

    namespace, _, name = args.target.rpartition("/")
    if not namespace or not name:
        print(f"why: {args.target!r}: give NAMESPACE/NAME", file=sys.stderr)
        return 2
    try:
        at = parse_time(args.at, now=time.time()) if args.at else None
    except ValueError as exc:
        print(f"why: --at: {exc}", file=sys.stderr)
        return 2
    db_given = args.db is not None
    settings = load(args)
    if settings is None:
        return 2
    schema = settings.audit_schema()
    kinds = ("pod", *governing_kinds(schema))
    if args.kind not in kinds:
        print(f"why: KIND {args.kind!r}: choose from {', '.join(kinds)}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(settings.db)
        if not db_given:
            from spreadbus.cli.audit import replay_command

            db = Path(scratch) / "audit.db"
            settings = settings.model_copy(update={"db": str(db)})
            asyncio.run(replay_command(settings, None, None, quiet=True))
        elif not db.is_file():
            print(f"why: no audit database at {db}", file=sys.stderr)
            return 2
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            if args.kind == "pod":
                story = pod_story(conn, namespace, name, at, schema)
                text = render_pod(story, schema) if story else None
            else:
                story = subset_counts_at(conn, args.kind, namespace, name, at, schema)
                text = render_counts(story) if story else None
        finally:
            conn.close()
    if story is None:
        print(f"why: the log holds no {args.kind} {namespace}/{name}", file=sys.stderr)
        return 1
    print(json.dumps(story, indent=2) if args.output == "json" else text)
    return 0
