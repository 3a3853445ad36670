"""The reference of every ``spreadbus_*`` metric, read from the declarations in the code.

Operators build dashboards and alerts on these names, so docs/metrics.md is generated, never
written by hand: ``python -m spreadbus.metric_reference --write`` rewrites it and a test fails
when it differs from what this module produces now.

The declarations are read from the source (``ast``), not from running services: most metrics
live in objects that exist only inside a connected service (the webhook's feature sides are
built on NATS), and a labelled metric without samples shows no label names on ``/metrics``.
Three forms are recognised, which is every form the code uses:

- a prometheus_client call with a literal name, ``Counter("spreadbus_x", "help", ["label"])``
  (also ``Gauge``, ``Histogram``, ``Summary`` and the ``*MetricFamily`` of custom collectors);
- a scrape-time gauge table, ``{"spreadbus_x": ("help", reader)}`` (the webhook's own state and
  each feature side's ``gauges()``);
- a declaration whose name is a variable is accepted only where such a table feeds it
  (``TABLE_FED``); anywhere else it is an error naming the file and line, so a new form cannot
  go missing from the reference silently.

Signatures::

    Metric(name, kind, labels, help, source)
        .samples -> tuple[str, ...]     # the series names Prometheus stores
    declarations(root: Path) -> list[Metric]
    render(metrics: Sequence[Metric]) -> str
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[1]
PACKAGES: Final = ("spreadbus", "services")
DOC: Final = Path("docs/metrics.md")

KINDS: Final = {
    "Counter": "counter", "CounterMetricFamily": "counter",
    "Gauge": "gauge", "GaugeMetricFamily": "gauge",
    "Histogram": "histogram", "HistogramMetricFamily": "histogram",
    "Summary": "summary", "SummaryMetricFamily": "summary",
}
SUFFIXES: Final = {
    "counter": ("_total",),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count"),
    "summary": ("", "_sum", "_count"),
}
TABLE_FED: Final = frozenset({"services/webhook/service.py"})
"""Modules whose ``Gauge(name, text)`` loop registers the scrape-time gauge tables."""
NAME: Final = re.compile(r"spreadbus_[a-z0-9_]+")

SECTIONS: Final = (
    ("ready", "Every service: readiness (the conditions of `/readyz`)"),
    ("nats", "Every service: the NATS connection"),
    ("follower", "Every service that follows a stream (label `stream`)"),
    ("watcher", "Watcher"),
    ("planner", "Planner"),
    ("actuator", "Actuator"),
    ("webhook", "Webhook"),
    ("audit", "Audit follower (`spreadbus audit follow`)"),
)


class UnreadableDeclaration(ValueError):
    """A metric declaration this module cannot read a name from."""


@dataclass(frozen=True, order=True)
class Metric:
    name: str
    kind: str
    labels: tuple[str, ...]
    help: str
    source: str

    @property
    def samples(self) -> tuple[str, ...]:
        return tuple(self.name + suffix for suffix in SUFFIXES[self.kind])

    @property
    def section(self) -> str:
        return self.name.split("_")[1]


def declarations(root: Path = ROOT) -> list[Metric]:
    """Every ``spreadbus_*`` metric declared under ``root``'s packages, one entry per name."""
    found: dict[str, Metric] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            source = path.relative_to(root).as_posix()
            for metric in _in_module(ast.parse(path.read_text(), source), source):
                known = found.get(metric.name)
                if known is not None and (known.kind, known.labels) != (metric.kind,
                                                                        metric.labels):
                    raise UnreadableDeclaration(
                        f"{metric.name} is declared as {known.kind}{list(known.labels)} in "
                        f"{known.source} and as {metric.kind}{list(metric.labels)} in {source}")
                found.setdefault(metric.name, metric)
    return sorted(found.values())


def _in_module(tree: ast.Module, source: str) -> Iterator[Metric]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield from _call(node, source)
        elif isinstance(node, ast.Dict):
            yield from _gauge_table(node, source)


def _call(node: ast.Call, source: str) -> Iterator[Metric]:
    func = node.func
    callee = func.id if isinstance(func, ast.Name) else (
        func.attr if isinstance(func, ast.Attribute) else "")
    kind = KINDS.get(callee)
    if kind is None or not (node.args or node.keywords):
        return  # collections.Counter() and the like
    name = _argument(node, 0, "name")
    if not isinstance(name, ast.Constant):
        if source in TABLE_FED or (callee == "Counter" and not node.keywords):
            return
        raise UnreadableDeclaration(f"{source}:{node.lineno}: {callee} with a computed name")
    if not isinstance(name.value, str) or not name.value.startswith("spreadbus_"):
        return
    documentation = _argument(node, 1, "documentation")
    labels = _argument(node, 2, "labelnames") or _keyword(node, "labels")
    metric_name = name.value.removesuffix("_total") if kind == "counter" else name.value
    yield Metric(metric_name, kind, _strings(labels, source, node),
                 _string(documentation, source, node), source)


def _gauge_table(node: ast.Dict, source: str) -> Iterator[Metric]:
    for key, value in zip(node.keys, node.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)
                and NAME.fullmatch(key.value)):
            continue
        if not (isinstance(value, ast.Tuple) and value.elts):
            raise UnreadableDeclaration(
                f"{source}:{key.lineno}: {key.value} maps to no (help, reader) pair")
        yield Metric(key.value, "gauge", (), _string(value.elts[0], source, key), source)


def _argument(node: ast.Call, position: int, keyword: str) -> ast.expr | None:
    if len(node.args) > position:
        return node.args[position]
    return _keyword(node, keyword)


def _keyword(node: ast.Call, keyword: str) -> ast.expr | None:
    return next((k.value for k in node.keywords if k.arg == keyword), None)


def _string(node: ast.expr | None, source: str, at: ast.AST) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return " ".join(node.value.split()).rstrip(".")
    raise UnreadableDeclaration(f"{source}:{getattr(at, 'lineno', 0)}: help text is not literal")


def _strings(node: ast.expr | None, source: str, at: ast.AST) -> tuple[str, ...]:
    if node is None:
        return ()
    if isinstance(node, ast.List | ast.Tuple):
        return tuple(_string(element, source, at) for element in node.elts)
    raise UnreadableDeclaration(f"{source}:{getattr(at, 'lineno', 0)}: labels are not literal")


def render(metrics: Sequence[Metric]) -> str:
    """docs/metrics.md: one table per service, in ``SECTIONS`` order."""
    out = [
        "# Metrics",
        "",
        "<!-- Generated by `python -m spreadbus.metric_reference --write`; do not edit. -->",
        "",
        "Every service serves Prometheus metrics on its health port (`/metrics`, port 8080",
        "in deploy/). This is each `spreadbus_*` metric the code declares. **Series** are the",
        "names Prometheus stores: a counter `x` is scraped as `x_total` (and `x_created`), a",
        "histogram as `x_bucket`, `x_sum` and `x_count`. deploy/components/monitoring/ holds a",
        "ServiceMonitor, alert rules and a Grafana dashboard built on them.",
    ]
    titles = dict(SECTIONS)
    unknown = sorted({m.section for m in metrics} - titles.keys())
    for section in [s for s, _ in SECTIONS] + unknown:
        rows = [m for m in metrics if m.section == section]
        if not rows:
            continue
        out += ["", f"## {titles.get(section, section)}", "",
                "| metric | type | labels | meaning | series |",
                "| --- | --- | --- | --- | --- |"]
        for m in rows:
            labels = ", ".join(f"`{label}`" for label in m.labels) or "-"
            series = ", ".join(f"`{s}`" for s in m.samples)
            out.append(f"| `{m.name}` | {m.kind} | {labels} | {m.help} | {series} |")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m spreadbus.metric_reference",
        description="Print (or --write) docs/metrics.md from the metric declarations.")
    parser.add_argument("--write", action="store_true", help=f"rewrite {DOC} under the checkout")
    args = parser.parse_args(argv)
    try:
        text = render(declarations())
    except UnreadableDeclaration as exc:
        print(f"metric_reference: {exc}", file=sys.stderr)
        return 2
    if args.write:
        (ROOT / DOC).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
