"""``spreadbus audit serve``: the audit database in Datasette, with canned queries and a chart."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

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
select datetime(s.ts, 'unixepoch') as time, s.name as workloadspread, c.subset, c.replicas
from status_changes s join subset_counts c on c.status_seq = s.seq
where s.resource = 'workloadspreads' order by s.seq, c.position
"""

CHART_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Pods per subset over time</title></head>
<body><h1>Pods per subset over time</h1><canvas id="chart" width="900" height="360"></canvas>
<ul id="legend"></ul>
<script>
fetch('/audit/subset_pods_over_time.json?_shape=array&_size=max').then(r => r.json()).then(rows => {
  const series = {};
  for (const r of rows) {
    const key = r.workloadspread + '/' + r.subset;
    (series[key] = series[key] || []).push([Date.parse(r.time + 'Z'), r.replicas || 0]);
  }
  const all = Object.values(series).flat();
  const canvas = document.getElementById('chart'), g = canvas.getContext('2d');
  if (!all.length) { g.fillText('no status changes recorded', 20, 20); return; }
  const t0 = Math.min(...all.map(p => p[0])), t1 = Math.max(...all.map(p => p[0])) || t0 + 1;
  const top = Math.max(1, ...all.map(p => p[1]));
  const x = t => 40 + (canvas.width - 60) * (t - t0) / Math.max(1, t1 - t0);
  const y = v => canvas.height - 30 - (canvas.height - 50) * v / top;
  const colours = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b'];
  Object.entries(series).forEach(([key, points], i) => {
    g.strokeStyle = colours[i % colours.length]; g.beginPath();
    points.forEach(([t, v], j) => j ? g.lineTo(x(t), y(v)) : g.moveTo(x(t), y(v)));
    g.stroke();
    const item = document.createElement('li');
    item.textContent = key + ': ' + points[points.length - 1][1];
    item.style.color = colours[i % colours.length];
    document.getElementById('legend').appendChild(item);
  });
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


def serve(db: str, *, host: str, port: int) -> int:
    """Run Datasette on ``db`` (read-only, named ``audit``) until interrupted.

    The database is served as a live one (Datasette reads it with ``mode=ro``, not as an
    immutable file): a replay or ``audit follow`` may be writing it, and the store keeps it in
    WAL mode, so each query sees the last committed batch and never a page half-written."""
    if not Path(db).is_file():
        print(f"audit serve: no database at {db}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        meta = Path(scratch) / "metadata.json"
        meta.write_text(json.dumps(metadata()))
        templates = Path(scratch) / "templates"
        (templates / "pages").mkdir(parents=True)
        (templates / "pages" / "chart.html").write_text(CHART_PAGE)
        link = Path(scratch) / "audit.db"
        link.symlink_to(Path(db).resolve())
        argv = [sys.executable, "-m", "datasette", "serve", str(link),
                "--metadata", str(meta), "--template-dir", str(templates),
                "--host", host, "--port", str(port), "--setting", "sql_time_limit_ms", "5000"]
        try:
            return subprocess.call(argv)
        except KeyboardInterrupt:
            return 0
