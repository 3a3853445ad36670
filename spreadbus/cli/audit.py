"""``spreadbus audit replay|follow|serve``: the audit log in SQLite.

- ``replay --db FILE [--since T] [--until T]``: fold ``HISTORY`` into the database up to the
  end of the range and stop, with a progress bar; run again to continue from where it stopped.
- ``follow --db FILE``: the same fold, live, as a service (``/healthz``, ``/readyz`` once caught
  up, ``/metrics``).
- ``serve --db FILE``: the database in the browser with Datasette, with canned queries.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from prometheus_client import Counter, Gauge

from spreadbus.audit.settings import REPLAY_FIELDS, AuditSettings, with_local_stack
from spreadbus.audit.store import AuditStore
from spreadbus.audit.times import parse_time
from spreadbus.runtime.bus_permissions import READER
from spreadbus.runtime.nats_connection import NatsOptions, connect_nats
from spreadbus.runtime.service import ServiceContext, close_nats, service_main
from spreadbus.runtime.settings import add_settings_arguments, load_settings

CAUGHT_UP = "caught_up"
CONNECT_SECONDS = 15.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    subs = parser.add_subparsers(dest="audit_command", metavar="ACTION", required=True)
    replay = subs.add_parser(
        "replay", help="fold the history into a SQLite database and stop",
        description="Fold the HISTORY stream (every admission, pod lifecycle point, status "
        "change, plan and outcome) into a SQLite database, up to the end of the range, and "
        "stop. Run it again to fold what came since: it resumes where it stopped. Next to a "
        "local stack (spreadbus up), its NATS URL and read-only user are found without being "
        "given.")
    add_settings_arguments(replay, AuditSettings, only=REPLAY_FIELDS)
    replay.add_argument("--quiet", action="store_true", help="no progress bar")
    follow = subs.add_parser(
        "follow", help="fold the history live, as a service",
        description="Fold the HISTORY stream into a SQLite database as it grows, as a service "
        "with /healthz, /readyz (once caught up) and /metrics.")
    add_settings_arguments(follow, AuditSettings)
    serve = subs.add_parser(
        "serve", help="browse the database with Datasette",
        description="Open the audit database in the browser (Datasette), with canned queries "
        "and a chart of the pods per subset.")
    serve.add_argument("--db", required=True, help="the audit database")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to listen on (default: %(default)s)")
    serve.add_argument("--port", type=int, default=8001,
                       help="port to listen on (default: %(default)s)")
    serve.add_argument("--feature-plugins", default="", metavar="MODULE:ATTRIBUTE,...",
                       help="the feature plugins whose tables and queries the database holds, "
                       "as the services were given them")


def load(args: argparse.Namespace) -> AuditSettings | None:
    loaded = load_settings(AuditSettings, args)
    if isinstance(loaded, list):
        for error in loaded:
            print(f"audit: bad setting {error}", file=sys.stderr)
        return None
    return with_local_stack(loaded)


def times(settings: AuditSettings) -> tuple[float | None, float | None]:
    now = time.time()
    since = parse_time(settings.since, now=now) if settings.since else None
    until = parse_time(settings.until, now=now) if settings.until else None
    return since, until


def run(args: argparse.Namespace) -> int:
    if args.audit_command == "serve":
        from spreadbus.audit.registered import schema_with
        from spreadbus.audit.serve import serve
        from spreadbus.engine.feature_plugins import PluginError

        try:
            schema = schema_with([p.strip() for p in args.feature_plugins.split(",")
                                  if p.strip()])
        except PluginError as exc:
            print(f"audit serve: --feature-plugins: {exc}", file=sys.stderr)
            return 2
        return serve(args.db, host=args.host, port=args.port, schema=schema)
    if args.audit_command == "follow":
        return service_main("audit", AuditSettings, args, follow_main, conditions=(CAUGHT_UP,))
    settings = load(args)
    if settings is None:
        return 2
    try:
        since, until = times(settings)
    except ValueError as exc:
        print(f"audit: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(replay_command(settings, since, until, quiet=args.quiet))


async def replay_command(settings: AuditSettings, since: float | None, until: float | None,
                         *, quiet: bool) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    from spreadbus.audit.replay import replay

    options = NatsOptions.from_settings(settings, name=READER)
    try:
        nc = await asyncio.wait_for(connect_nats(options), CONNECT_SECONDS)
    except TimeoutError:
        print(f"audit: no NATS server answered at {', '.join(options.urls)}", file=sys.stderr)
        return 1
    store = AuditStore(settings.db, settings.audit_schema())
    bar = Progress("[progress.description]{task.description}", BarColumn(),
                   MofNCompleteColumn(), TimeRemainingColumn(), disable=quiet,
                   transient=False)
    task = bar.add_task("HISTORY", total=None)

    def progress(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    try:
        with bar:
            result = await replay(nc, store, since=since, until=until, progress=progress)
    finally:
        store.close()
        await close_nats(nc)
    if result.missed:
        print(f"audit: {result.missed} messages had left the history window", file=sys.stderr)
    print(f"{settings.db}: {result.folded} messages folded, position {result.last_seq}",
          file=sys.stderr)
    return 0


async def follow_main(settings: AuditSettings, ctx: ServiceContext) -> None:
    from spreadbus.audit.replay import follow

    store = AuditStore(settings.db, settings.audit_schema())
    folded = Counter("spreadbus_audit_messages", "History messages folded into the database",
                     registry=ctx.registry)
    Gauge("spreadbus_audit_position", "Last HISTORY sequence folded",
          registry=ctx.registry).set_function(lambda: store.last_seq)
    Gauge("spreadbus_audit_unknown_messages", "History messages kept raw (unknown type)",
          registry=ctx.registry).set_function(lambda: store.unknown)
    try:
        await follow(ctx.nc, store, stopping=ctx.stopping, on_batch=folded.inc,
                     caught_up=lambda up: ctx.gate.set(CAUGHT_UP, up))
    finally:
        store.close()
