"""Resident memory per pod of the planner and of a webhook holding 100,000 realistic pods.

Each side runs in a fresh interpreter of its own. The pods (realistic Running pods of ten
three-subset CloneSet UnitedDeployments, about 3.5 kB of JSON each) are encoded as the watcher
publishes them and fed one message at a time, so what the process holds afterwards is what it
keeps, not the input:

- **planner**: the projection of the ``KUBE`` stream (every object's JSON as published) and the
  UnitedDeployment rule after a round over every key (its owner index and the counted facts and
  summaries of the pods it follows,
  :mod:`spreadbus.features.uniteddeployment.planning.followed_pods`);
- **webhook**: the WorkloadSpread admission view, which folds pods to count them (the
  UnitedDeployment handlers read UnitedDeployments only);
- **budget-webhook**: the PodUnavailableBudget admission view, which folds pods for evictions;
- **webhooks**: a replica serving both, as the webhook service builds it: one pod view holding
  each pod as both features keep it (:mod:`spreadbus.projection.pod_view`), and the two views
  reading their parts of it.

Printed per side: the growth of resident memory (``VmRSS``) over the pods, per pod, and its
``ratio`` to the pods' JSON size (goal under 2). Run: ``python -m bench.uniteddeployment_memory
[--pods 100000]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

from bench import _tiny
from bench._united import NS, SUBSETS, Feed, cloneset, realistic_pod, revision_of, united

GOAL = 2.0
SIDES = ("planner", "webhook", "budget-webhook", "webhooks")
UDS = 10


def rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def objects(pods: int) -> tuple[list[dict[str, Any]], Any]:
    """The UDs and their CloneSets, and a generator of the pods in order."""
    head: list[dict[str, Any]] = []
    per_ud = pods // UDS
    plan: list[tuple[str, str, int, str]] = []
    for u in range(UDS):
        ud = united(f"ud{u}", per_ud)
        revision = revision_of(ud)
        head.append(ud)
        for s, subset in enumerate(SUBSETS):
            replicas = per_ud // 3 + (1 if s < per_ud % 3 else 0)
            head.append(cloneset(ud, subset, replicas, revision))
            plan.append((f"ud{u}", subset, replicas, revision))

    def pod_stream() -> Any:
        i = 0
        for ud, subset, replicas, revision in plan:
            for _ in range(replicas):
                yield realistic_pod(ud, subset, i, revision)
                i += 1

    return head, pod_stream()


def _both_webhook_views() -> Any:
    """What a replica serving WorkloadSpread and PodUnavailableBudget folds each message into."""
    from spreadbus.features.podunavailablebudget.admission.view import BudgetView
    from spreadbus.features.podunavailablebudget.feature import FEATURE as BUDGETS
    from spreadbus.features.workloadspread.admission.view import View
    from spreadbus.features.workloadspread.core.workload_kinds import workload_kinds
    from spreadbus.features.workloadspread.feature import FEATURE as SPREADS
    from spreadbus.projection.pod_view import PodView

    keeps = [f.webhook_pods for f in (SPREADS, BUDGETS) if f.webhook_pods is not None]
    pods = PodView("bench", keeps)
    spreads = View(cluster="bench", kinds=workload_kinds(), pods=pods.part(0))
    budgets = BudgetView("bench", pods.part(1))

    def apply(seq: int, subject: str, data: bytes) -> None:
        pods.fold(seq, subject, data)
        spreads.apply_message(seq, subject, data)
        budgets.apply_message(seq, subject, data)

    return apply


def side(name: str, pods: int) -> dict[str, float]:
    feed = Feed()
    head, stream = objects(pods)
    if name == "planner":
        from spreadbus.features.uniteddeployment.core.reconcile import reconcile_grouped
        from spreadbus.features.uniteddeployment.planning.rule import UnitedDeploymentRule

        rule = UnitedDeploymentRule("bench", reconcile=reconcile_grouped, min_interval_seconds=0.0)
        apply = feed.view.apply
    elif name == "budget-webhook":
        from spreadbus.features.podunavailablebudget.admission.view import BudgetView

        apply = BudgetView("bench").apply_message
    elif name == "webhooks":
        apply = _both_webhook_views()
    else:
        from spreadbus.features.workloadspread.admission.view import View
        from spreadbus.features.workloadspread.core.workload_kinds import workload_kinds

        view = View(cluster="bench", kinds=workload_kinds())
        apply = view.apply_message
    for obj in head:
        apply(*feed.message(obj))
    gc.collect()
    before = rss()
    json_bytes = 0
    count = 0
    for pod in stream:
        json_bytes += len(msgspec.json.encode(pod))
        apply(*feed.message(pod))
        count += 1
    seconds = 0.0
    if name == "planner":
        started = time.perf_counter()
        feed.view.mark_all_changed()
        rule.desired(feed.view, feed.view.take_changed(), 1_800_000_000.0)
        seconds = time.perf_counter() - started
    gc.collect()
    grown = rss() - before
    return {"pods": count, "json": json_bytes / count, "rss": grown / count,
            "round": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)
    args = _tiny.arguments(parser, argv, {"pods": 60})
    if args.side:
        print(json.dumps(side(args.side, args.pods)))
        return 0
    for name in SIDES:
        out = subprocess.run([sys.executable, "-m", "bench.uniteddeployment_memory",
                              "--pods", str(args.pods), "--side", name],
                             capture_output=True, text=True, check=True)
        result = json.loads(out.stdout.splitlines()[-1])
        ratio = result["rss"] / result["json"]
        extra = (f"; the first round over every UD took {result['round']:.1f} s"
                 if name == "planner" else "")
        print(f"{name}: {int(result['pods'])} pods in namespace {NS}, "
              f"{result['rss'] / 1024:.2f} kB resident per pod against {result['json'] / 1024:.2f}"
              f" kB of JSON{extra}", flush=True)
        print(f"  ratio resident/JSON: {ratio:.2f} (goal under {GOAL})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
