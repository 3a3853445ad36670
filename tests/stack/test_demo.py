"""``spreadbus demo`` runs the elastic example on its own local stack, end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.e2e

PHASE_SECONDS = 35
"""``--phase-timeout``: each of the two phases (scale-out, scale-in) waits at most this long."""
DELETION_COST_SECONDS = min(10, PHASE_SECONDS)
"""The demo's wait for deletion costs between the phases."""
START_UP_SECONDS = 35
"""The stack's start-up on a loaded two-core machine."""
RUN_SECONDS = START_UP_SECONDS + 2 * PHASE_SECONDS + DELETION_COST_SECONDS
"""The demo's own limits summed: a phase that times out fails the demo with its reason before
the subprocess limit, and that limit stays under the test's."""


@pytest.mark.timeout(RUN_SECONDS + 15)
def test_the_elastic_demo_fills_the_fixed_pool_first_and_scales_back_in(
    tmp_path: Path,
) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "spreadbus",
            "demo",
            "--data-dir",
            str(tmp_path / "demo"),
            "--fixed-max",
            "6",
            "--scale-out",
            "9",
            "--scale-in",
            "5",
            "--phase-timeout",
            str(PHASE_SECONDS),
        ],
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    (grown,) = [line["split"] for line in lines if line.get("phase") == "scale-out"]
    assert grown == {"ACK": 6, "ECI": 3}, "the fixed pool fills first, the overflow is elastic"
    assert "no deletion cost" not in result.stderr, "the planner wrote every deletion cost"
    final = lines[-1]["final"]
    # 9 -> 5 removes four pods: the three elastic ones (lower deletion cost) go first, then one
    # from the fixed pool.
    assert final == {"ACK": 5}, "scale-in removes the elastic pods first"


@pytest.mark.timeout(RUN_SECONDS + 15)
def test_the_uniteddeployment_demo_fills_in_subset_order_and_drains_in_reverse(
    tmp_path: Path,
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "spreadbus", "demo", "--example", "uniteddeployment",
         "--data-dir", str(tmp_path / "demo"), "--fixed-max", "4", "--scale-out", "7",
         "--scale-in", "3", "--phase-timeout", str(PHASE_SECONDS)],
        capture_output=True, text=True, timeout=RUN_SECONDS, cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    (grown,) = [line["split"] for line in lines if line.get("phase") == "scale-out"]
    assert grown == {"normal-nodes": 4, "elastic-nodes": 3}, "normal first, the rest elastic"
    assert lines[-1]["final"] == {"normal-nodes": 3}, "the elastic subset drains first"
