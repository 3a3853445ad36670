"""What ``spreadbus up --members member1,member2`` takes of this machine when idle.

The stack is started as a person starts it (``spreadbus up`` in its own process, on a fresh data
directory) and left alone once every Cluster is Ready (a few seconds more for start-up's own
work to finish). Then, over every process of the stack (``spreadbus up`` and all it started:
nats-servers, kubesims, services):

- **memory**: the sum of their resident memory (``VmRSS``; shared pages counted in each);
- **idle CPU**: the CPU time they use over ``--seconds`` of wall-clock time, as cores.

``--baseline`` (on unless ``--tiny``) measures plain ``spreadbus up`` (one ordinary cluster) the
same way, for a ``ratio`` to it. Printed too: ``ratio`` lines of the stack's share of this
machine's memory and cores, since it must fit here beside everything else.
Run: ``python -m bench.stack_footprint [--members member1,member2] [--seconds 30]
[--settle 10] [--no-baseline]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from bench import _tiny
from spreadbus.runtime.parent_death import die_with_parent

ROOT = Path(__file__).resolve().parent.parent
KUBECTL = str(Path(sys.executable).parent / "kubectl")
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Sample:
    """One look at a process tree: resident bytes and CPU seconds used so far, summed."""

    processes: int
    rss_bytes: int
    cpu_seconds: float


def parents() -> dict[int, int]:
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                found[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return found


def tree(root: int, parent_of: Mapping[int, int]) -> set[int]:
    """``root`` and every descendant. Pure."""
    found = {root}
    grew = True
    while grew:
        added = {pid for pid, parent in parent_of.items() if parent in found} - found
        found |= added
        grew = bool(added)
    return found


def sample(root: int) -> Sample:
    rss, cpu, count = 0, 0.0, 0
    for pid in tree(root, parents()):
        with contextlib.suppress(OSError, ValueError, IndexError):
            status = Path(f"/proc/{pid}/status").read_text()
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            rss_kib = next(int(line.split()[1]) for line in status.splitlines()
                           if line.startswith("VmRSS:"))
            rss += rss_kib * 1024
            cpu += (int(stat[11]) + int(stat[12])) / TICKS  # utime, stime
            count += 1
    return Sample(count, rss, cpu)


@contextlib.contextmanager
def stack(directory: Path, members: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    argv = [sys.executable, "-m", "spreadbus", "up", "--data-dir", str(directory)]
    if members:
        argv += ["--members", ",".join(members)]
    with (directory.parent / f"{directory.name}.log").open("wb") as log:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=die_with_parent())
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_ready(proc: subprocess.Popen[bytes], kubeconfig: Path, members: list[str]) -> None:
    deadline = time.monotonic() + 240
    while not kubeconfig.exists() or (members and not clusters_ready(kubeconfig, members)):
        if proc.poll() is not None:
            raise SystemExit(f"spreadbus up exited with {proc.returncode}")
        if time.monotonic() > deadline:
            raise SystemExit("the stack was not ready within 240 s")
        time.sleep(0.5)


def clusters_ready(kubeconfig: Path, members: list[str]) -> bool:
    done = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "get",
                           "clusters.cluster.karmada.io", "-o", "json"],
                          capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        return False
    ready = {item["metadata"]["name"] for item in json.loads(done.stdout)["items"]
             for c in item.get("status", {}).get("conditions", [])
             if c.get("type") == "Ready" and c.get("status") == "True"}
    return set(members) <= ready


def measure(members: list[str], settle: float, seconds: float) -> Sample:
    """The stack's memory and its idle CPU in cores (``cpu_seconds`` per second)."""
    with tempfile.TemporaryDirectory(prefix="spreadbus-footprint-") as tmp:
        directory = Path(tmp) / "stack"
        with stack(directory, members) as proc:
            wait_ready(proc, directory / "kubeconfig", members)
            time.sleep(settle)  # start-up's own work (first lists, first rounds) done
            first, started = sample(proc.pid), time.monotonic()
            time.sleep(seconds)
            last, elapsed = sample(proc.pid), time.monotonic() - started
    cores = (last.cpu_seconds - first.cpu_seconds) / elapsed
    return Sample(last.processes, last.rss_bytes, cores)


def machine_memory() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no MemTotal in /proc/meminfo")


def show(what: str, found: Sample) -> None:
    print(f"{what}: {found.processes} processes, memory {found.rss_bytes / 2**20:.0f} MiB "
          f"(sum of RSS), idle CPU {found.cpu_seconds:.3f} cores "
          f"({100 * found.cpu_seconds:.1f}% of one core)", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stack_footprint",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--members", default="member1,member2")
    parser.add_argument("--seconds", type=float, default=30.0,
                        help="the idle window CPU is measured over (default %(default)s)")
    parser.add_argument("--settle", type=float, default=10.0,
                        help="seconds left alone after Ready before measuring")
    parser.add_argument("--baseline", action=argparse.BooleanOptionalAction, default=True,
                        help="measure plain spreadbus up too, for a ratio")
    args = _tiny.arguments(parser, argv, {"members": "member1", "seconds": 1.0, "settle": 0.0,
                                          "baseline": False})
    members = [m for m in args.members.split(",") if m]
    found = measure(members, args.settle, args.seconds)
    show(f"spreadbus up --members {','.join(members)}", found)
    cores = os.cpu_count() or 1
    print(f"ratio memory/machine: {found.rss_bytes / machine_memory():.3f} "
          f"(of {machine_memory() / 2**30:.1f} GiB)")
    print(f"ratio idle CPU/machine: {found.cpu_seconds / cores:.3f} (of {cores} cores)")
    if args.baseline:
        plain = measure([], args.settle, args.seconds)
        show("spreadbus up", plain)
        print(f"ratio memory members/plain: {found.rss_bytes / plain.rss_bytes:.2f}")
        if plain.cpu_seconds > 0:
            print(f"ratio idle CPU members/plain: {found.cpu_seconds / plain.cpu_seconds:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
