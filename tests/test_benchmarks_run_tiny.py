"""Every benchmark runs at its tiny size to its end and prints its ratio lines.

``python -m bench --tiny NAME...`` runs each named benchmark as ``make bench`` does (its own
process, ``--tiny``: the smallest run through every step). A change that breaks a benchmark fails
here: a crash, a refused request, a missing line. The benchmarks are spread over several cases
so that xdist runs them side by side; every benchmark in bench/ is in exactly one case.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench import _tiny
from bench.__main__ import discover
from bench._stack import SHARERS, RunningStack

ROOT = Path(__file__).resolve().parent.parent

CASES: dict[str, tuple[str, ...]] = {
    # no local stack: a nats-server, kubesim, or the planner's and webhook's code in process
    "bus": ("audit_replay", "bus_security", "planner_replay", "planner_shards", "watcher_publish"),
    "kubesim-and-models": ("kubesim_api", "kubesim_cluster", "propagation_planner_round",
                           "propagation_schedule",
                           "uniteddeployment_memory", "uniteddeployment_planner_round",
                           "webhook_client_certificates"),
    # on one secured and one open local stack the runner starts for them all (bench/_stack.py)
    "shared-stacks": tuple(sorted(SHARERS)),
    # stacks of their own: the drain cordons the cluster's nodes; the actuator's reads are
    # compared between two stacks whose actuators are set differently
    "drain": ("pub_drain",),
    "actuator-reads": ("actuator_scope_reads",),
    # a stack with a member cluster, started as a person starts it, measured while idle
    "footprint": ("stack_footprint",),
    # a host and three member clusters wired by hand, each benchmark its own (apart, so the
    # two can run on two workers at once)
    "members-uniteddeployment": ("multicluster_uniteddeployment",),
    "members-propagation": ("propagation_end_to_end",),
}

HEADER = re.compile(r"^== bench\.(\w+)$")
FOOTER = re.compile(r"^   \((\d+\.\d) s, exit (-?\d+)\)$")
RATIO = re.compile(r"\bratio\b")


def sections(stdout: str) -> dict[str, tuple[list[str], float, int]]:
    """Each benchmark's printed lines, seconds and exit code, from the runner's output."""
    found: dict[str, tuple[list[str], float, int]] = {}
    name: str | None = None
    lines: list[str] = []
    for line in stdout.splitlines():
        if (header := HEADER.match(line)) is not None:
            name, lines = header.group(1), []
        elif name is not None and (footer := FOOTER.match(line)) is not None:
            found[name] = (lines, float(footer.group(1)), int(footer.group(2)))
            name = None
        elif name is not None:
            lines.append(line)
    return found


def test_every_benchmark_is_run_in_exactly_one_case() -> None:
    named = [name for names in CASES.values() for name in names]
    assert sorted(named) == discover()


def test_the_runner_output_is_read_per_benchmark() -> None:
    stdout = ("== bench.one\nfirst\nratio a/b: 1.000\n   (1.5 s, exit 0)\n"
              "== bench.two\nTraceback\n   (0.3 s, exit 1)\nfailed: two\n")
    assert sections(stdout) == {"one": (["first", "ratio a/b: 1.000"], 1.5, 0),
                                "two": (["Traceback"], 0.3, 1)}


def test_tiny_sizes_replace_the_defaults_and_explicit_options_still_win() -> None:
    def parse(argv: list[str]) -> tuple[int, float, bool]:
        parser = argparse.ArgumentParser()
        parser.add_argument("--pods", type=int, default=1000)
        parser.add_argument("--seconds", type=float, default=5.0)
        args = _tiny.arguments(parser, argv, {"pods": 3, "seconds": 0.1})
        return args.pods, args.seconds, args.tiny

    assert parse([]) == (1000, 5.0, False)
    assert parse(["--tiny"]) == (3, 0.1, True)
    assert parse(["--tiny", "--pods", "7"]) == (7, 0.1, True)


def test_a_tiny_size_for_an_option_the_benchmark_lacks_is_refused() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=1000)
    with pytest.raises(ValueError, match="replicas"):
        _tiny.arguments(parser, ["--tiny"], {"replicas": 3})


def test_a_shared_stack_reads_back_as_written(tmp_path: Path) -> None:
    stack = RunningStack(tmp_path / "stack", (4431, 4432),
                         {"kubesim": 10, "nats-server": 11, "webhook": 12, "webhook-2": 13},
                         {"webhook": 8081, "webhook-2": 8082})
    stack.write(tmp_path / "stack.json")
    read = RunningStack.read(tmp_path / "stack.json")
    assert read == stack
    assert read.webhooks == ["webhook", "webhook-2"]
    assert read.kubeconfig == tmp_path / "stack" / "kubeconfig"


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("case", sorted(CASES))
def test_benchmarks_run_tiny_to_their_ratio_lines(case: str) -> None:
    names = CASES[case]
    done = subprocess.run([sys.executable, "-m", "bench", "--tiny", *names], cwd=ROOT,
                          capture_output=True, text=True, timeout=840, check=False)
    ran = sections(done.stdout)
    shown = f"stdout:\n{done.stdout}\nstderr (last 4000 characters):\n{done.stderr[-4000:]}"
    assert sorted(ran) == sorted(names), shown
    for name in names:
        lines, _, code = ran[name]
        assert code == 0, f"bench.{name} exited {code}\n{shown}"
        assert any(RATIO.search(line) for line in lines), f"bench.{name}: no ratio line\n{shown}"
    assert done.returncode == 0, shown
