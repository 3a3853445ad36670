"""The README's "Try it" section run as written: ``spreadbus up``, then every command after it.

The commands run in a directory of their own (``.venv`` and ``examples`` linked into it), so the
quickstart's relative paths and ``$PWD`` mean there what they mean in a fresh clone and nothing
is left in the project. The elastic example is applied unchanged (150 pods); before the commands
whose comments tell what the user sees, the test waits for the cluster to get there, as a user
reading along would, and then checks it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from spreadbus.runtime.parent_death import die_with_parent
from tests.examples.manifests import ROOT
from tests.fixtures.polling import wait_until
from tests.stack.test_local_stack import tear_down, while_up

pytestmark = [pytest.mark.e2e,
              # The stack's start and each settled state have their own deadlines below; the
              # whole walk through the quickstart is given their sum.
              pytest.mark.timeout(600)]
README = (ROOT / "README.md").read_text()


def try_it_commands() -> list[str]:
    """The command lines of the "Try it" section's shell blocks, in order."""
    section = README.split("## Try it", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```sh\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def pods_by_zone_label(kubeconfig: Path) -> Counter[str | None]:
    """Running pods of the elastic example by their ``deploy/zone`` label."""
    api = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    with api:
        core: Any = client.CoreV1Api(api)
        pods = core.list_namespaced_pod("deploy", label_selector="app=workload-xxx").items
    return Counter(
        (p.metadata.labels or {}).get("deploy/zone")
        for p in pods
        if p.metadata.deletion_timestamp is None and p.status.phase == "Running"
    )


def spread_replicas(kubeconfig: Path) -> dict[str, int]:
    """The elastic example's WorkloadSpread status: replicas per subset."""
    api = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    with api:
        custom: Any = client.CustomObjectsApi(api)
        spread = custom.get_namespaced_custom_object(
            "apps.kruise.io", "v1alpha1", "deploy", "workloadspreads", "ws-demo"
        )
    statuses = (spread.get("status") or {}).get("subsetStatuses") or []
    return {s["name"]: s["replicas"] for s in statuses}


def settled_at(
    kubeconfig: Path, pods: dict[str | None, int], status: dict[str, int]
) -> Callable[[], bool]:
    """Whether the pods run labelled so and the status counts them so."""
    return lambda: pods_by_zone_label(kubeconfig) == pods and spread_replicas(kubeconfig) == status


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    for name in (".venv", "examples"):
        (tmp_path / name).symlink_to(ROOT / name)
    return tmp_path


@pytest.fixture
def up(workdir: Path) -> Iterator[subprocess.Popen[str]]:
    """The quickstart's ``spreadbus up`` line, started as written from the working directory."""
    (line,) = [c for c in try_it_commands() if c.startswith(".venv/bin/spreadbus up")]
    with (workdir / "up.log").open("w") as log:
        proc = subprocess.Popen(
            shlex.split(line, comments=True), cwd=workdir, stdout=log,
            stderr=subprocess.STDOUT, text=True, preexec_fn=die_with_parent(),
        )
    try:
        yield proc
    finally:
        tear_down(proc)


def test_the_quickstart_shows_the_elastic_example_filling_ack_then_eci_and_scaling_in(
    workdir: Path, up: subprocess.Popen[str]
) -> None:
    kubeconfig = workdir / ".spreadbus" / "kubeconfig"
    wait_until(while_up(up, kubeconfig.exists), what="the stack to be ready", timeout=150,
               interval=0.2)
    scaled_in = {"ACK": 80, "ECI": 0}
    # Before a command, what the cluster must have reached (a user reads along); after it,
    # what its output must show.
    before: dict[str, tuple[str, Callable[[], bool]]] = {
        "get pods -n deploy -L deploy/zone": (
            "100 pods labelled ack and 50 not",
            settled_at(kubeconfig, {"ack": 100, None: 50}, {"ACK": 100, "ECI": 50}),
        ),
        "get ws ws-demo -n deploy -o yaml": (
            "80 pods, all labelled ack",
            settled_at(kubeconfig, {"ack": 80}, scaled_in),
        ),
    }
    after: dict[str, Callable[[str], None]] = {
        "get nodes -L topology.kubernetes.io/zone": lambda out: _has_zones(out),
        "get pods -n deploy -L deploy/zone": lambda out: _zone_column(out, {"ack": 100, "": 50}),
        "get ws ws-demo -n deploy -o yaml": lambda out: _status_replicas(out, scaled_in),
        "spreadbus validate": lambda out: _equals(out, "allowed\n"),
        "spreadbus why pod": lambda out: _tells_a_fixed_pods_story(out),
        "spreadbus plan -f objects.yaml": lambda out: _plans_the_example(out),
        "spreadbus admit -f objects.yaml": lambda out: _admits_into_the_fixed_pool(out),
        "spreadbus plan -f examples/uniteddeployment": lambda out: _plans_the_subsets(out),
    }
    used: set[str] = set()
    environment = dict(os.environ)
    lines = [c for c in try_it_commands() if not c.startswith((".venv/bin/spreadbus up", "make "))]
    assert [c for c in try_it_commands() if c.startswith("make ")] == ["make install"]
    for line in lines:
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").partition("=")
            environment[name] = value.replace("$PWD", str(workdir))
            continue
        for key, (what, reached) in before.items():
            if key in line:
                wait_until(while_up(up, reached), what=what, timeout=90, interval=0.2)
                used.add(f"before {key}")
        done = subprocess.run(["bash", "-c", line], cwd=workdir, env=environment,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, f"{line}\n{done.stderr}"
        for key, check in after.items():
            if key in line:
                check(done.stdout)
                used.add(f"after {key}")
    wanted = {f"before {k}" for k in before} | {f"after {k}" for k in after}
    assert used == wanted, "every check found the command it checks"


def _equals(out: str, wanted: str) -> None:
    assert out == wanted


def _has_zones(out: str) -> None:
    zones = {row.split()[-1] for row in out.splitlines()[1:]}
    assert {"zone-a", "zone-b", "zone-c", "ack", "eci"} <= zones


def _zone_column(out: str, wanted: dict[str, int]) -> None:
    rows = out.splitlines()
    column = rows[0].index("ZONE")
    assert Counter(row[column:].strip() for row in rows[1:]) == wanted


def _status_replicas(out: str, wanted: dict[str, int]) -> None:
    status = yaml.safe_load(out)["status"]
    assert {s["name"]: s["replicas"] for s in status["subsetStatuses"]} == wanted


def _tells_a_fixed_pods_story(out: str) -> None:
    assert "ACK has room" in out, out  # after the scale-in every pod left is in the fixed pool


def _admits_into_the_fixed_pool(out: str) -> None:
    assert out.startswith("allowed\n"), out
    assert "ACK" in out, out  # 80 pods in a pool of 100: one more fits there


def _plans_the_subsets(out: str) -> None:
    planned = json.loads(out)["unitedDeployments"]["default/sample-ud"]["subsets"]
    assert {name: s["replicas"] for name, s in planned.items()} == {
        "subset-a": 1, "subset-b": 3, "subset-c": 2}
    assert {s["action"] for s in planned.values()} == {"create"}


def _plans_the_example(out: str) -> None:
    planned = json.loads(out)["workloadSpreads"]["deploy/ws-demo"]["status"]
    assert {s["name"]: s["replicas"] for s in planned["subsetStatuses"]} == {"ACK": 80, "ECI": 0}
