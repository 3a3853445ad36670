"""``spreadbus audit serve``: Datasette on the audit database answers the canned "why" query,
over HTTP and in a headless Chromium (skipped, saying so, where no Chromium is installed), and
its chart draws a time axis, a pod-count axis and a line per subset there, and hovering a point
shows its time and each subset's pod count."""

from __future__ import annotations

import json
import os
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
from tests.audit.devtools import Page, headless_page
from tests.audit.history_messages import story
from tests.audit.served import serving
from tests.fixtures.polling import wait_until_async

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
NO_BROWSER = CHROMIUM is None and os.environ.get("CI") != "true"
"""A developer's machine without Chromium skips the browser tests; CI (CI=true) never does."""


@pytest.mark.skipif(NO_BROWSER, reason="no Chromium on this machine "
                    "(apt-get install chromium); the HTTP test above still runs")
def test_the_why_query_answers_in_a_headless_browser(served: str, tmp_path: Path) -> None:
    assert CHROMIUM is not None, "CI=true needs Chromium (make browser installs it)"
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


@pytest.mark.skipif(NO_BROWSER, reason="no Chromium on this machine "
                    "(apt-get install chromium); the HTTP test above still runs")
def test_the_chart_draws_its_axes_and_a_line_per_subset(served: str, tmp_path: Path) -> None:
    assert CHROMIUM is not None, "CI=true needs Chromium (make browser installs it)"
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


# The centre of each marker of a line, in page pixels, once plotly has drawn them.
MARKERS = """(name => {
  const trace = [...document.querySelectorAll('#chart .scatterlayer .trace')]
    .find(t => t.__data__[0].trace.name === name);
  const points = trace ? [...trace.querySelectorAll('.point')].map(p => p.getBoundingClientRect())
    .map(r => [r.x + r.width / 2, r.y + r.height / 2]) : [];
  return points.length ? points : null;
})"""

# What plotly's hover layer shows: its title (the time) and one line per subset.
HOVER_LABEL = """[...document.querySelectorAll(
  '#chart .hoverlayer .legendtitletext, #chart .hoverlayer .legendtext')].map(t => t.textContent)"""


async def hovered(page: Page, x: float, y: float, time: str) -> list[str]:
    await page.move_mouse(x, y)

    async def label() -> list[str] | None:
        shown: list[str] = await page.evaluate(HOVER_LABEL)
        return shown if shown[:1] == [time] else None

    return await wait_until_async(label, what=f"a hover label at {time}", timeout=30,
                                  interval=0.05)


@pytest.mark.skipif(NO_BROWSER, reason="no Chromium on this machine "
                    "(apt-get install chromium); the HTTP test above still runs")
async def test_hovering_a_point_shows_its_time_and_each_subsets_pods(
        served: str, tmp_path: Path) -> None:
    assert CHROMIUM is not None, "CI=true needs Chromium (make browser installs it)"
    async with headless_page(CHROMIUM, f"{served}/chart", tmp_path / "profile") as page:
        first, last = await wait_until_async(
            lambda: page.evaluate(MARKERS + "('ws/elastic')"), what="the elastic line's markers",
            timeout=60, interval=0.1)
        # The story's two status changes, 16.5 s and 21.5 s after the epoch: the evicted pod
        # leaves elastic.
        assert await hovered(page, *first, time="Jan 1, 1970, 00:00:16.5") == [
            "Jan 1, 1970, 00:00:16.5", "ws/fixed : 2 pods", "ws/elastic : 1 pods"]
        assert await hovered(page, *last, time="Jan 1, 1970, 00:00:21.5") == [
            "Jan 1, 1970, 00:00:21.5", "ws/fixed : 2 pods", "ws/elastic : 0 pods"]
