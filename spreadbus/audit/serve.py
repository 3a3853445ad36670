"""``spreadbus audit serve``: the audit database in Datasette, with canned queries and a chart.

Datasette runs as a child process on files in a temporary directory. Every stop of the
command ends the child and removes the directory: SIGINT (also when the command was started
with it ignored, as a shell's background job is), SIGTERM and SIGHUP stop the child and wait for
it. SIGKILL allows no clean-up: the child's parent-death signal still ends it, and only the
directory is left.
"""

from __future__ import annotations

import importlib.resources
import json
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, Final

from spreadbus.audit.registered import or_registered
from spreadbus.audit.schema import AuditSchema
from spreadbus.runtime.parent_death import die_with_parent

STOPPING: Final = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
STOP_SECONDS: Final = 10.0

def why_pod(schema: AuditSchema) -> str:
    """The pod question: its identity, the columns the features add, its admission, its end."""
    columns = ", ".join(f"p.{c}" for c in ("namespace", "name", "uid", "owner",
                                              *schema.pod_columns, "subset", "node"))
    return f"""
select {columns},
  a.seq as admission_seq, datetime(a.ts, 'unixepoch') as admitted, a.reason, a.replica,
  a.ledger_revision, datetime(p.deleted_ts, 'unixepoch') as deleted, p.end_reason
from pods p left join admissions a
  on a.cluster = p.cluster and a.namespace = p.namespace and a.pod_key = p.admission_key
where p.namespace = :namespace and p.name = :name
order by p.created_seq desc
"""


ADMISSIONS_PER_SUBSET = """
select strftime('%Y-%m-%d %H:%M', ts, 'unixepoch') as minute, workload,
  coalesce(subset, '(none)') as subset, count(*) as admissions
from admissions group by minute, workload, subset order by minute, workload, subset
"""

FAILED_PLANS = """
select p.seq, datetime(p.ts, 'unixepoch') as planned, p.verb, p.resource, p.namespace, p.name,
  p.rule, p.reason, o.error_status, o.error_reason, o.error_message, o.attempts
from plans p join outcomes o on o.plan_id = p.id
where o.result = 'failed' order by p.seq desc
"""

def metadata(schema: AuditSchema | None = None) -> dict[str, Any]:
    """Datasette metadata: the canned queries, titled as a person asks them, the features'
    after the shared ones."""
    schema = or_registered(schema)
    return {
        "title": "spreadbus audit log",
        "databases": {"audit": {"queries": {
            "why_pod": {"title": "Why is this pod here?", "sql": why_pod(schema).strip()},
            "admissions_per_subset": {"title": "Admissions per subset over time",
                                      "sql": ADMISSIONS_PER_SUBSET.strip()},
            "failed_plans": {"title": "Plans that failed", "sql": FAILED_PLANS.strip()},
            **{name: dict(query) for hook in schema.hooks for name, query in hook.queries.items()},
        }}},
    }


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signal.Signals(signum).name)


def _child_setup(arm: Callable[[], None] | None) -> Callable[[], None]:
    """The child unblocks the stopping signals the parent blocked while starting it (a mask is
    inherited through exec) and arms its parent-death signal."""

    def setup() -> None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)
        if arm is not None:
            arm()

    return setup


def _stop(child: subprocess.Popen[bytes]) -> None:
    if child.poll() is None:
        child.terminate()
        try:
            child.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def serve(db: str, *, host: str, port: int, schema: AuditSchema | None = None) -> int:
    """Run Datasette on ``db`` (read-only, named ``audit``) until it exits or a signal stops it.

    The database is served as a live one (Datasette reads it with ``mode=ro``, not as an
    immutable file): a replay or ``audit follow`` may be writing it, and the store keeps it in
    WAL mode, so each query sees the last committed batch and never a page half-written."""
    if not Path(db).is_file():
        print(f"audit serve: no database at {db}", file=sys.stderr)
        return 2
    # Blocked until the directory and the child are named, so that a stop cannot land before
    # the clean-up knows them; a pending one is raised as _Stop once they are.
    signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
    previous = {s: signal.signal(s, _raise_stop) for s in STOPPING}
    scratch: Path | None = None
    child: subprocess.Popen[bytes] | None = None
    try:
        try:
            scratch = Path(tempfile.mkdtemp(prefix="spreadbus-audit-serve-"))
            # Its own session: a terminal's Ctrl-C reaches this process, which stops the child
            # once, rather than both at the same moment.
            child = subprocess.Popen(_prepare(scratch, db, host=host, port=port,
                                              schema=or_registered(schema)),
                                     start_new_session=True,
                                     preexec_fn=_child_setup(die_with_parent()))
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)
        return child.wait()
    except _Stop:
        return 0
    finally:
        # A second signal must not cut the stop short and leave the child behind.
        for s in STOPPING:
            signal.signal(s, signal.SIG_IGN)
        if child is not None:
            _stop(child)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        for s, handler in previous.items():
            signal.signal(s, handler)


def plotly_js() -> Path:
    """plotly.js as the plotly package ships it, served at ``/plotly/plotly.min.js``."""
    return Path(str(importlib.resources.files("plotly") / "package_data" / "plotly.min.js"))


def _prepare(scratch: Path, db: str, *, host: str, port: int,
             schema: AuditSchema | None = None) -> list[str]:
    """Datasette's files in ``scratch`` and its command line."""
    schema = or_registered(schema)
    meta = scratch / "metadata.json"
    meta.write_text(json.dumps(metadata(schema)))
    templates = scratch / "templates"
    (templates / "pages").mkdir(parents=True)
    for hook in schema.hooks:
        for path, html in hook.pages.items():
            (templates / "pages" / f"{path}.html").write_text(html)
    # The link names the database ``audit`` in Datasette's URLs whatever the file is called.
    link = scratch / "audit.db"
    link.symlink_to(Path(db).resolve())
    return [sys.executable, "-m", "datasette", "serve", str(link),
            "--metadata", str(meta), "--template-dir", str(templates),
            "--static", f"plotly:{plotly_js().parent}",
            "--host", host, "--port", str(port), "--setting", "sql_time_limit_ms", "5000"]
