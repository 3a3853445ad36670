"""The README's "Several clusters" section run as written, on one ``spreadbus up --members
member1,member2`` (its own line in the section) that the tests of this module share: the host's
Clusters Ready with a resource summary, ``kubectl --context member1`` reaching member1, and a
WorkloadSpread applied in member1 served by member1's webhook, its status decided by the hub's
planner and written by member1's actuator; member2's agent takes no part in it. Stopping
``spreadbus up`` stops every cluster's processes.

As in the quickstart's test, the commands run in a directory of their own (``.venv`` and
``examples`` linked into it), and before a command whose comment tells what the user sees, the
test waits for the clusters to get there, as a user reading along would, and then checks it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from spreadbus.runtime.parent_death import die_with_parent
from tests.examples.manifests import ROOT
from tests.fixtures.polling import wait_until
from tests.stack.test_local_stack import alive, children_of, tear_down, while_up

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
README = (ROOT / "README.md").read_text()
KUBECTL = str(Path(sys.executable).parent / "kubectl")
MEMBERS = ("member1", "member2")
DEMO = ROOT / "examples" / "workloadspread" / "demo-deployment.yaml"


def section_commands() -> list[str]:
    """The command lines of the "Several clusters" section's shell blocks, in order."""
    section = README.split("## Several clusters", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```sh\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


@dataclass
class Clusters:
    workdir: Path
    proc: subprocess.Popen[str]
    kubeconfig: Path

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([KUBECTL, "--kubeconfig", str(self.kubeconfig), *args],
                              capture_output=True, text=True, timeout=60, check=check)

    def json(self, *args: str) -> Any:
        return json.loads(self.kubectl(*args, "-o", "json").stdout)

    def health_port(self, service: str) -> int:
        """The health port ``spreadbus up`` printed for ``service`` (``member1/webhook``)."""
        log = (self.workdir / "up.log").read_text()
        found = re.search(rf"^  {re.escape(service)} +\w+ +health http://127.0.0.1:(\d+)$",
                          log, flags=re.MULTILINE)
        assert found, f"no health port of {service} in:\n{log}"
        return int(found.group(1))

    def metric(self, service: str, name: str) -> float:
        url = f"http://127.0.0.1:{self.health_port(service)}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        return sum(float(line.split()[-1]) for line in text.splitlines()
                   if line.startswith(name))


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clusters]:
    """The section's ``spreadbus up`` line, started as written from a working directory."""
    workdir = tmp_path_factory.mktemp("several-clusters")
    for name in (".venv", "examples"):
        (workdir / name).symlink_to(ROOT / name)
    (line,) = [c for c in section_commands() if c.startswith(".venv/bin/spreadbus up")]
    with (workdir / "up.log").open("w") as log:
        proc = subprocess.Popen(
            shlex.split(line, comments=True), cwd=workdir, stdout=log,
            stderr=subprocess.STDOUT, text=True, preexec_fn=die_with_parent(),
        )
    try:
        kubeconfig = workdir / ".spreadbus-clusters" / "kubeconfig"
        wait_until(while_up(proc, kubeconfig.exists), what="the clusters to be ready",
                   timeout=180, interval=0.2)
        yield Clusters(workdir, proc, kubeconfig)
        # Ctrl-C's signal stops every cluster: nothing it started is left.
        descendants = children_of(proc.pid)
        assert len(descendants) >= 16, "3 nats-servers, 3 kubesims, 10 services"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=90) == 0
        assert not kubeconfig.exists(), "the ready files are removed on shutdown"
        assert [pid for pid in descendants if alive(pid)] == []
    finally:
        tear_down(proc)


def ready_members(clusters: Clusters) -> set[str]:
    return {c["metadata"]["name"] for c in clusters.json("get", "clusters")["items"]
            if any(k.get("type") == "Ready" and k.get("status") == "True"
                   for k in c.get("status", {}).get("conditions", []))
            and c["status"].get("resourceSummary", {}).get("allocatable", {}).get("cpu")}


def running_pods(clusters: Clusters, context: str, namespace: str) -> list[dict[str, Any]]:
    pods = clusters.json("--context", context, "get", "pods", "-n", namespace)["items"]
    return [p for p in pods if p.get("status", {}).get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp")]


def subset_replicas(clusters: Clusters, namespace: str) -> dict[str, int]:
    found = clusters.kubectl("--context", "member1", "get", "ws", "workloadspread-demo", "-n",
                             namespace, "-o", "json", check=False)
    if found.returncode != 0:
        return {}
    statuses = json.loads(found.stdout).get("status", {}).get("subsetStatuses") or []
    return {s["name"]: s["replicas"] for s in statuses}


def zones(clusters: Clusters, context: str) -> dict[str, str]:
    """Node -> its zone label."""
    return {n["metadata"]["name"]: n["metadata"]["labels"].get("topology.kubernetes.io/zone", "")
            for n in clusters.json("--context", context, "get", "nodes")["items"]}


def demo_placed(clusters: Clusters, namespace: str) -> Callable[[], bool]:
    """Whether the demo's 5 pods run in member1, 3 in subset-a (labelled) and 2 in subset-b,
    and its status says so."""
    def placed() -> bool:
        pods = running_pods(clusters, "member1", namespace)
        labelled = Counter(p["metadata"].get("labels", {}).get("xxx-specific-label")
                           for p in pods)
        return (labelled == {"xxx": 3, None: 2}
                and subset_replicas(clusters, namespace) == {"subset-a": 3, "subset-b": 2})
    return placed


def test_the_section_runs_as_written(clusters: Clusters) -> None:
    before: dict[str, tuple[str, Callable[[], bool]]] = {
        "get clusters": ("both members Ready with a resource summary",
                         lambda: ready_members(clusters) == set(MEMBERS)),
        "get pods -o wide": ("the demo's pods placed", demo_placed(clusters, "default")),
    }
    after: dict[str, Callable[[subprocess.CompletedProcess[str]], None]] = {
        "get clusters": _lists_both_ready,
        "get cluster member1": lambda done: _has_allocatable(done.stdout),
        "get pods -o wide": lambda done: _three_labelled_on_zone_a(clusters, done.stdout),
        "get ws workloadspread-demo": lambda done: _subset_statuses(done.stdout),
        "--context member2 get pods": lambda done: _none_found(done),
    }
    used: set[str] = set()
    environment = dict(os.environ)
    for line in section_commands():
        if line.startswith(".venv/bin/spreadbus up"):
            continue
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").partition("=")
            environment[name] = value.replace("$PWD", str(clusters.workdir))
            continue
        for key, (what, reached) in before.items():
            if key in line:
                wait_until(while_up(clusters.proc, reached), what=what, timeout=90,
                           interval=0.2)
                used.add(f"before {key}")
        done = subprocess.run(["bash", "-c", line], cwd=clusters.workdir, env=environment,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, f"{line}\n{done.stderr}"
        for key, check in after.items():
            if key in line:
                check(done)
                used.add(f"after {key}")
    wanted = {f"before {k}" for k in before} | {f"after {k}" for k in after}
    assert used == wanted, "every check found the command it checks"


def test_a_workloadspread_in_a_member_is_served_and_applied_by_that_members_agent(
    clusters: Clusters,
) -> None:
    assert clusters.json("config", "view")["current-context"] == "host"
    assert clusters.json("get", "nodes")["items"] == [], "the host runs no workloads"
    wait_until(while_up(clusters.proc, lambda: ready_members(clusters) == set(MEMBERS)),
               what="both members Ready with a resource summary", timeout=90, interval=0.2)
    applied_before = clusters.metric("member1/actuator",
                                     'spreadbus_actuator_outcomes_total{result="applied"}')
    clusters.kubectl("--context", "member1", "create", "namespace", "spread")
    clusters.kubectl("--context", "member1", "apply", "-n", "spread", "-f", str(DEMO))
    wait_until(while_up(clusters.proc, demo_placed(clusters, "spread")),
               what="the demo's pods placed by subset in member1", timeout=90, interval=0.2)

    zone_of = zones(clusters, "member1")
    by_subset = Counter((p["metadata"].get("labels", {}).get("xxx-specific-label"),
                         zone_of[p["spec"]["nodeName"]])
                        for p in running_pods(clusters, "member1", "spread"))
    assert by_subset == {("xxx", "zone-a"): 3, (None, "zone-b"): 2}
    admitted = ('spreadbus_webhook_admission_duration_seconds_count'
                '{answer="allowed",path="/mutate-pod"}')
    assert clusters.metric("member1/webhook", admitted) >= 5
    assert clusters.metric("member2/webhook", admitted) == 0
    applied = 'spreadbus_actuator_outcomes_total{result="applied"}'
    assert clusters.metric("member1/actuator", applied) > applied_before
    assert clusters.metric("member2/actuator", applied) == 0
    assert running_pods(clusters, "member2", "spread") == []


def _lists_both_ready(done: subprocess.CompletedProcess[str]) -> None:
    rows = [row.split() for row in done.stdout.splitlines()]
    assert rows[0] == ["NAME", "VERSION", "MODE", "READY", "AGE"], done.stdout
    assert {(r[0], r[2], r[3]) for r in rows[1:]} == {(m, "Pull", "True") for m in MEMBERS}


def _has_allocatable(out: str) -> None:
    allocatable = json.loads(out)
    assert {"cpu", "memory", "pods"} <= set(allocatable), out


def _three_labelled_on_zone_a(clusters: Clusters, out: str) -> None:
    rows = out.splitlines()
    node, label = rows[0].index("NODE"), rows[0].index("XXX-SPECIFIC-LABEL")
    zone_of = zones(clusters, "member1")
    placed = Counter((zone_of[row[node:].split()[0]], row[label:].strip()) for row in rows[1:])
    assert placed == {("zone-a", "xxx"): 3, ("zone-b", ""): 2}, out


def _subset_statuses(out: str) -> None:
    assert {s["name"]: s["replicas"] for s in json.loads(out)} == {"subset-a": 3, "subset-b": 2}


def _none_found(done: subprocess.CompletedProcess[str]) -> None:
    assert done.stdout == ""
    assert "No resources found" in done.stderr
