"""The offline commands never load the NATS client.

``spreadbus validate``, ``admit`` and ``plan`` read every feature's declaration, whose webhook and
planner sides talk to NATS; those sides are imported only when a service builds them, so an
offline command starts without the client (and runs where it is not installed). Each command runs
in a fresh interpreter, which then reports the ``nats`` modules it holds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_RUN = """
import json, sys
from spreadbus.cli import main
code = main(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m == "nats" or m.startswith("nats."))
print(json.dumps({"code": code, "nats": loaded}), file=sys.stderr)
"""

POD = """{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web-server"}},
 "spec": {"containers": [{"name": "c", "image": "x"}]}}"""


@pytest.mark.parametrize("args", [
    ["validate", "-f", "examples/workloadspread/elastic-deployment.yaml"],
    ["validate", "-f", "examples/podunavailablebudget/web-server-pub.yaml"],
    ["plan", "-f", "examples/uniteddeployment/adaptive-elastic-pool.yaml",
     "--now", "2027-01-15T08:00:00Z"],
    ["admit", "-f", "examples/workloadspread/elastic-deployment.yaml", "--pod", "{pod}",
     "--now", "2027-01-15T08:00:00Z"],
    ["admit", "-f", "examples/podunavailablebudget/web-server-pub.yaml", "--pod", "{pod}",
     "--operation", "EVICT", "--now", "2027-01-15T08:00:00Z"],
], ids=["validate-ws", "validate-pub", "plan-ud", "admit-ws", "evict-pub"])
def test_an_offline_command_loads_no_nats_module(args: list[str], tmp_path: Path) -> None:
    pod = tmp_path / "pod.json"
    pod.write_text(POD)
    argv = [str(pod) if a == "{pod}" else a for a in args]
    done = subprocess.run([sys.executable, "-c", _RUN, *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, done.stdout + done.stderr
    assert done.stdout, "the command answered"
    assert report["nats"] == [], f"{args[0]} loaded {report['nats']}"
