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

from spreadbus.runtime.parent_death import die_with_parent

STOPPING: Final = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
STOP_SECONDS: Final = 10.0

WHY_POD = """
select p.namespace, p.name, p.uid, p.owner, p.workloadspread, p.subset, p.node,
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

SUBSET_PODS_OVER_TIME = """
select strftime('%Y-%m-%d %H:%M:%f', s.ts, 'unixepoch') as time, s.name as workloadspread,
  c.subset, c.replicas
from status_changes s join subset_counts c on c.status_seq = s.seq
where s.resource = 'workloadspreads' order by s.seq, c.position
"""

CHART_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Pods per subset over time</title>
<script src="/plotly/plotly.min.js"></script></head>
<body><h1>Pods per subset over time</h1>
<p>Each WorkloadSpread subset's pod count (<code>status.subsetStatuses[].replicas</code>) after
every status change; <a href="/audit/subset_pods_over_time">the same as a table</a>.</p>
<p id="note"></p>
<div id="chart" style="width: 100%; height: 520px"></div>
<script>
fetch('/audit/subset_pods_over_time.json?_shape=objects&_size=max').then(r => r.json())
.then(answer => {
  const series = new Map();
  for (const row of answer.rows) {
    const name = row.workloadspread + '/' + row.subset;
    if (!series.has(name)) series.set(name, {x: [], y: []});
    series.get(name).x.push(row.time);
    series.get(name).y.push(row.replicas || 0);
  }
  const traces = [...series].map(([name, points]) => ({
    type: 'scatter', mode: 'lines+markers', line: {shape: 'hv'}, name: name,
    x: points.x, y: points.y, hovertemplate: '%{y} pods',
  }));
  // Pods come whole: a small count gets a tick per pod rather than plotly's half steps.
  const most = Math.max(0, ...traces.flatMap(trace => trace.y));
  const layout = {
    xaxis: {title: {text: 'time (UTC)'}, type: 'date'},
    yaxis: {title: {text: 'pods'}, rangemode: 'tozero', dtick: most <= 10 ? 1 : undefined},
    legend: {title: {text: 'WorkloadSpread/subset'}},
    hovermode: 'x unified', margin: {t: 20},
  };
  if (!traces.length) {
    layout.annotations = [{text: 'no status changes recorded', showarrow: false,
                           xref: 'paper', yref: 'paper', x: 0.5, y: 0.5}];
  }
  if (answer.truncated) {
    document.getElementById('note').textContent =
      'Only the first ' + answer.rows.length + ' status changes are drawn.';
  }
  Plotly.newPlot('chart', traces, layout, {responsive: true, displaylogo: false});
});
</script></body></html>
"""


def metadata() -> dict[str, Any]:
    """Datasette metadata: the canned queries, titled as a person asks them."""
    return {
        "title": "spreadbus audit log",
        "databases": {"audit": {"queries": {
            "why_pod": {"title": "Why is this pod here?", "sql": WHY_POD.strip()},
            "admissions_per_subset": {"title": "Admissions per subset over time",
                                      "sql": ADMISSIONS_PER_SUBSET.strip()},
            "failed_plans": {"title": "Plans that failed", "sql": FAILED_PLANS.strip()},
            "subset_pods_over_time": {"title": "Pods per subset over time (status)",
                                      "sql": SUBSET_PODS_OVER_TIME.strip(),
                                      "description_html":
                                          '<a href="/chart">as a chart</a>'},
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


def serve(db: str, *, host: str, port: int) -> int:
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
            child = subprocess.Popen(_prepare(scratch, db, host=host, port=port),
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


def _prepare(scratch: Path, db: str, *, host: str, port: int) -> list[str]:
    """Datasette's files in ``scratch`` and its command line."""
    meta = scratch / "metadata.json"
    meta.write_text(json.dumps(metadata()))
    templates = scratch / "templates"
    (templates / "pages").mkdir(parents=True)
    (templates / "pages" / "chart.html").write_text(CHART_PAGE)
    # The link names the database ``audit`` in Datasette's URLs whatever the file is called.
    link = scratch / "audit.db"
    link.symlink_to(Path(db).resolve())
    return [sys.executable, "-m", "datasette", "serve", str(link),
            "--metadata", str(meta), "--template-dir", str(templates),
            "--static", f"plotly:{plotly_js().parent}",
            "--host", host, "--port", str(port), "--setting", "sql_time_limit_ms", "5000"]
