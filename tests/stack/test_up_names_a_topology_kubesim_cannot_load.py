"""``spreadbus up --topology`` with a name kubesim does not know stops with kubesim's reason."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from spreadbus.runtime.parent_death import die_with_parent

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


def test_an_unknown_topology_stops_the_stack_with_the_topologies_kubesim_ships(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "spreadbus", "up", "--topology", "no-such-topology",
         "--data-dir", str(tmp_path / "stack")],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
        preexec_fn=die_with_parent(),
    )
    assert done.returncode == 1, done.stderr
    assert "kubesim: --topology: topology 'no-such-topology' is neither a file nor one of" in (
        done.stderr
    )
    assert "'seed-examples'" in done.stderr
    assert not (tmp_path / "stack" / "kubeconfig").exists()
