"""What the secured bus costs a rollout: 1,000 pods under a WorkloadSpread, secured bus vs open.

The end-to-end scale-out of :mod:`bench.workloadspread_end_to_end` (the local stack, a
three-subset WorkloadSpread over a Deployment scaled from 0 to ``--replicas``, timed to Ready
pods in their subsets' zones and to converged: the status counts every pod and each carries its
deletion cost), run on two stacks that differ only in their bus:

- **secured**: as ``spreadbus up`` runs it: every service its own nkey user with its own
  permissions, nats-server speaking TLS only;
- **open**: ``Stack(secured_bus=False)``: no users, no TLS (for measuring only).

Runs alternate, secured then open, ``--runs`` times (3), each from empty stores, so the
machine's noise falls on both alike. A run that ends with pods outside their subsets' zones (on
a loaded machine, a review the webhook could not answer in time admits its pod unsteered) is
said and repeated once. Printed: each run's times, each mode's median and best,
``ratio`` lines secured/open (goal: under 1.1) and the CPU each process used until Ready
(median of the runs, from ``/proc``), which tells where the difference goes when there is one.
Run: ``python -m bench.bus_security_end_to_end [--replicas 1000] [--runs 3]
[--layout shared|split]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from bench import _tiny
from bench._stack import OPEN_STACK, STACK, STACK_HELP
from bench.workloadspread_end_to_end import LAYOUTS, Cpu, cpu_line, spread

GOAL = 1.1
MODES = ("secured", "open")


def measured(replicas: int, workdir: Path, layout: str, mode: str,
             given: Path | None) -> tuple[float, float, Cpu]:
    """One run of ``mode`` (on the running stack ``given`` describes, if one is); a run that
    placed pods outside their subsets' zones (the webhook answered too late for a pod on a
    loaded machine, and the pod was admitted unsteered) is said and repeated, once."""
    for attempt in range(2):
        try:
            directory = workdir / str(attempt)
            directory.mkdir(parents=True)
            return spread(replicas, directory, layout, secured_bus=mode == "secured",
                          given=given, namespace=f"rollout-{workdir.parent.name}-{attempt}")
        except AssertionError as misplaced:
            if attempt:
                raise
            print(f"  {mode} bus: {misplaced}; repeating the run", flush=True)
    raise AssertionError("unreachable")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3, help="runs of each mode, alternating")
    parser.add_argument("--layout", choices=LAYOUTS, default="shared",
                        help="shared: every process on every core, as `spreadbus up` runs; "
                             "split: kubesim on a core of its own")
    parser.add_argument(STACK, type=Path, help=STACK_HELP + " (its bus secured)")
    parser.add_argument(OPEN_STACK, type=Path, help=STACK_HELP + " (its bus open)")
    args = _tiny.arguments(parser, argv, {"replicas": 6, "runs": 1})
    if args.layout == "split" and len(os.sched_getaffinity(0)) < 2:
        parser.error("--layout split needs at least two cores")
    times: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
    cpu: dict[str, list[Cpu]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="spreadbus-bench-") as tmp:
        for i in range(args.runs):
            for mode in MODES:
                given = args.stack if mode == "secured" else args.open_stack
                ready, converged, used = measured(args.replicas, Path(tmp) / f"run-{i}" / mode,
                                                  args.layout, mode, given)
                times[mode].append((ready, converged))
                cpu[mode].append(used)
                print(f"run {i + 1}, {mode} bus: Ready in {ready:.2f} s, converged in "
                      f"{converged:.2f} s", flush=True)
    print(f"cores: {os.cpu_count()}, layout {args.layout}, {args.replicas} pods, "
          f"{args.runs} run(s) of each")
    summary: dict[str, dict[str, float]] = {}
    for mode in MODES:
        ready_runs = [r for r, _ in times[mode]]
        converged_runs = [c for _, c in times[mode]]
        summary[mode] = {
            "ready": statistics.median(ready_runs), "ready_best": min(ready_runs),
            "converged": statistics.median(converged_runs),
            "converged_best": min(converged_runs),
        }
        s = summary[mode]
        print(f"{mode} bus: Ready median {s['ready']:.2f} s (best {s['ready_best']:.2f} s), "
              f"converged median {s['converged']:.2f} s (best {s['converged_best']:.2f} s)")
    for key, what in (("ready", "Ready"), ("converged", "converged")):
        for stat, label in ((key, "median"), (f"{key}_best", "best")):
            ratio = summary["secured"][stat] / summary["open"][stat]
            print(f"ratio {what} secured/open ({label}): {ratio:.3f} "
                  f"(goal under {GOAL}: {ratio / GOAL:.3f} of it)")
    print("CPU until Ready, median of the runs:")
    totals = {}
    for mode in MODES:
        print(f"  {mode} bus: {cpu_line(cpu[mode])}")
        totals[mode] = statistics.median(sum(run.values()) for run in cpu[mode])
    print(f"ratio CPU of every process secured/open: {totals['secured'] / totals['open']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
