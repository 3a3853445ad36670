"""docs/metrics.md is what the code declares, and the declarations read from the source are
what the services' registries really hold."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, cast

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.metrics import MetricWrapperBase

from services.actuator.application import Applier
from services.actuator.consumer import PlanConsumer
from services.planner.planner import PlannerMetrics
from services.watcher.history import HistoryPoints
from services.watcher.publisher import ObservationPublisher
from services.watcher.service import SupersededCount, WatchReadiness
from services.webhook.server import Metrics as WebhookMetrics
from spreadbus.metric_reference import (
    DOC,
    ROOT,
    Metric,
    UnreadableDeclaration,
    declarations,
    render,
)


def test_the_reference_is_what_the_generator_writes_now() -> None:
    written = (ROOT / DOC).read_text()
    assert written == render(declarations()), (
        "docs/metrics.md is stale: run `python -m spreadbus.metric_reference --write`")


class _Connection:
    """Enough of a NATS client for constructors that only keep it."""

    def jetstream(self) -> object:
        return object()


def _built_registry() -> list[MetricWrapperBase]:
    """The metric objects of every service part that can be built without a bus or an API."""
    registry = CollectorRegistry()
    nc: Any = _Connection()
    parts: list[object] = [
        PlannerMetrics(registry),
        WebhookMetrics(registry),
        WatchReadiness([], registry),
        HistoryPoints(nc, cluster="c", registry=registry),
        ObservationPublisher(nc, cluster="c", registry=registry),
        PlanConsumer(nc, cast(Any, None), cluster="c", registry=registry),
        Applier(cast(Any, None), limiter=cast(Any, None), authority=cast(Any, None),
                registry=registry),
    ]
    found: list[MetricWrapperBase] = []
    for part in parts:
        for value in vars(part).values():
            nested = vars(value).values() if hasattr(value, "__dict__") else ()
            for metric in [value, *nested]:
                if isinstance(metric, MetricWrapperBase):
                    found.append(metric)
    return found


def test_every_metric_a_built_registry_holds_is_in_the_reference_as_declared() -> None:
    reference = {m.name: m for m in declarations()}
    built = _built_registry()
    assert len(built) >= 25  # planner, followers, webhook, watcher, actuator
    for metric in built:
        name = str(metric._name)
        row = reference.get(name)
        assert row is not None, f"{name} is registered but missing from the reference"
        assert row.kind == metric._type, name
        assert row.labels == tuple(metric._labelnames), name
        assert row.help == " ".join(str(metric._documentation).split()).rstrip("."), name


def test_a_custom_collector_family_is_in_the_reference() -> None:
    (family,) = SupersededCount([]).collect()
    row = {m.name: m for m in declarations()}[family.name]
    assert (row.kind, row.samples) == ("counter", (family.name + "_total",))


def test_series_names_follow_the_exposition_format() -> None:
    counter = Metric("spreadbus_a", "counter", (), "", "")
    histogram = Metric("spreadbus_b", "histogram", ("x",), "", "")
    assert counter.samples == ("spreadbus_a_total",)
    assert histogram.samples == ("spreadbus_b_bucket", "spreadbus_b_sum", "spreadbus_b_count")


def _package(tmp_path: Path, code: str) -> Path:
    (tmp_path / "spreadbus").mkdir()
    (tmp_path / "services").mkdir()
    (tmp_path / "services" / "svc.py").write_text(code)
    return tmp_path


def test_a_declaration_with_a_computed_name_is_refused_naming_its_line(tmp_path: Path) -> None:
    root = _package(tmp_path, "from prometheus_client import Gauge\n\nGauge(name, 'h')\n")
    with pytest.raises(UnreadableDeclaration, match=r"services/svc.py:3: Gauge"):
        declarations(root)


def test_one_name_declared_with_two_shapes_is_refused(tmp_path: Path) -> None:
    root = _package(tmp_path, "Counter('spreadbus_x', 'h', ['a'])\nCounter('spreadbus_x', 'h')\n")
    with pytest.raises(UnreadableDeclaration, match="spreadbus_x is declared as counter"):
        declarations(root)


def test_declaration_forms_and_collections_counters(tmp_path: Path) -> None:
    root = _package(tmp_path, "\n".join([
        "import collections",
        "seen = collections.Counter(items)",
        "Counter('spreadbus_a_total', 'Counted.', labelnames=('l',), registry=r)",
        "Histogram(name='spreadbus_b', documentation='Timed', buckets=(1,))",
        "table = {'spreadbus_c': ('Read at scrape time', lambda: 0), 'other': 1}",
    ]))
    assert declarations(root) == [
        Metric("spreadbus_a", "counter", ("l",), "Counted", "services/svc.py"),
        Metric("spreadbus_b", "histogram", (), "Timed", "services/svc.py"),
        Metric("spreadbus_c", "gauge", (), "Read at scrape time", "services/svc.py"),
    ]


def test_every_metric_the_docs_name_exists() -> None:
    series = {s for m in declarations() for s in m.samples} | {m.name for m in declarations()}
    for doc in [ROOT / "README.md", ROOT / "deploy" / "README.md", *(ROOT / "docs").glob("*.md")]:
        named = set(re.findall(r"\bspreadbus_[a-z0-9_]*[a-z0-9]\b", doc.read_text()))
        assert named <= series, f"{doc.name} names unknown metrics: {sorted(named - series)}"
