"""WorkloadSpread's part of the audit log: the spread and subset a pod was placed in, the
counts of a spread's subsets, ``why workloadspread`` and the chart of pods per subset.

A pod's placement is read from the annotation the webhook writes (its spread, subset and
reservation key); the key is the ``admission_key`` that links the pod to the admission that
placed it (a pod of an unlimited subset carries none: its name stands in for it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from events.messages import PodLifecycle
from spreadbus.audit.fold import subset_counts
from spreadbus.audit.hook import FeatureAudit, Governing
from spreadbus.features.workloadspread.core.model import KIND, MATCHED_ANNOTATION, NAME

COLUMN: Final = NAME
"""The ``pods`` column naming the WorkloadSpread that placed the pod."""

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


def _matched(annotations: Mapping[str, str]) -> tuple[str | None, str | None, str | None]:
    """(WorkloadSpread, subset, reservation key) from the pod's placement annotation."""
    text = annotations.get(MATCHED_ANNOTATION)
    if not text:
        return None, None, None
    try:
        body = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return None, None, None
    if not isinstance(body, dict):
        return None, None, None
    def field(*names: str) -> str | None:
        value = next((body[n] for n in names if isinstance(body.get(n), str) and body[n]), None)
        return str(value) if value is not None else None
    return field("name", "Name"), field("subset", "Subset"), field("uid", "UID")



def pod_created(p: PodLifecycle) -> dict[str, Any]:
    spread, subset, key = _matched(p.annotations)
    return {COLUMN: spread, "subset": subset,
            "admission_key": key or (p.name if spread else None)}


def admitted_by(pod: Mapping[str, Any]) -> tuple[str, str | None] | None:
    spread = pod.get(COLUMN)
    return (f"{KIND}/{spread}", pod.get("subset")) if spread else None


def pod_lines(pod: Mapping[str, Any]) -> list[str]:
    if not pod.get(COLUMN):
        return []
    return [f"  governed by   {KIND} {pod['namespace']}/{pod[COLUMN]}"
            f", subset {pod.get('subset') or '-'}"]


AUDIT: Final = FeatureAudit(
    pod_columns=(COLUMN,),
    pod_indexes=((COLUMN, "subset"),),
    pod_created=pod_created,
    subset_counts=subset_counts,
    governing={NAME: Governing(resource="workloadspreads", pods_column=COLUMN)},
    admitted_by=admitted_by,
    pod_lines=pod_lines,
    queries={"subset_pods_over_time": {"title": "Pods per subset over time (status)",
                                       "sql": SUBSET_PODS_OVER_TIME.strip(),
                                       "description_html": '<a href="/chart">as a chart</a>'}},
    pages={"chart": CHART_PAGE},
)
