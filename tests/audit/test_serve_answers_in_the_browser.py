"""``spreadbus audit serve``: Datasette on the audit database answers the canned "why" query,
over HTTP and in a headless Chromium (skipped, saying so, where no Chromium is installed), and
its chart draws a time axis, a pod-count axis and a line per subset there."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest

from events.codec import encode
from spreadbus.audit.store import AuditStore
from tests.audit.history_messages import story
from tests.audit.served import serving

REASON = "fixed is full (2/2); elastic has room (0/unlimited)"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    db = tmp_path / "audit.db"
    store = AuditStore(db)
    store.apply([(seq, "history.x", encode(e))  # type: ignore[arg-type]
                 for seq, e in enumerate(story(), start=1)])
    store.finish()
    store.close()
    with serving(db, tmp_path) as running:
        yield running.base


def why_url(base: str, fmt: str = "") -> str:
    return f"{base}/audit/why_pod{fmt}?" + urlencode({"namespace": "ns", "name": "web-3"})


def test_the_why_query_answers_over_http(served: str) -> None:
    with urllib.request.urlopen(why_url(served, ".json") + "&_shape=array", timeout=10) as r:
        rows = json.load(r)
    assert [(row["subset"], row["reason"], row["node"]) for row in rows] == [
        ("elastic", REASON, "elastic-1")]
    with urllib.request.urlopen(f"{served}/audit/failed_plans.json?_shape=array",
                                timeout=10) as r:
        assert json.load(r) == []
    with urllib.request.urlopen(f"{served}/chart", timeout=10) as r:
        assert b"subset_pods_over_time.json" in r.read()
    with urllib.request.urlopen(f"{served}/plotly/plotly.min.js", timeout=10) as r:
        assert b"plotly.js" in r.read(200)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine "
                    "(apt-get install chromium); the HTTP test above still runs")
def test_the_why_query_answers_in_a_headless_browser(served: str, tmp_path: Path) -> None:
    assert CHROMIUM is not None
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom",
         why_url(served)],
        capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    page = done.stdout
    assert "Why is this pod here?" in page
    assert REASON in page
    assert "elastic-1" in page


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine "
                    "(apt-get install chromium); the HTTP test above still runs")
def test_the_chart_draws_its_axes_and_a_line_per_subset(served: str, tmp_path: Path) -> None:
    assert CHROMIUM is not None
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000", "--dump-dom",
         f"{served}/chart"],
        capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    page = done.stdout
    # plotly's SVG: axis titles, tick labels on both axes, a legend entry and a line per subset.
    assert re.search(r'class="xtitle"[^>]*>time \(UTC\)<', page), page[-3000:]
    assert re.search(r'class="ytitle"[^>]*>pods<', page)
    assert len(re.findall(r'class="xtick"', page)) >= 2
    assert re.findall(r'<g class="ytick"><text[^>]*>([^<]+)</text>', page) == ["0", "1", "2"]
    assert sorted(re.findall(r'class="legendtext"[^>]*>([^<]+)<', page)) == ["ws/elastic",
                                                                           "ws/fixed"]
    assert len(re.findall(r'class="trace scatter ', page)) == 2
