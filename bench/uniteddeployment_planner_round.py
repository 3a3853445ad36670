"""One UnitedDeployment planner round after one pod changed, under a UD of 100 and of 10,000 pods.

The projection holds a three-subset CloneSet-template UD, its CloneSets and its Running pods
(realistic pods, as the watcher publishes them). The rule is primed by one round over every key
(what a restart does); then, ``--rounds`` times, one pod's observation changes and the rule runs a
round over what changed, through the planner's diff (``plans_for``). Printed: the median round at
each size, split into the rule's gathering (index, followed pods), the reconcile, and the diff, and
the ``ratio`` of the large UD's round to the small one's (goal: about 1, work follows the change).
Run: ``python -m bench.uniteddeployment_planner_round [--small 100] [--large 10000]
[--rounds 50]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from bench import _tiny
from bench._united import SUBSETS, Feed, cloneset, realistic_pod, revision_of, united
from spreadbus.features.uniteddeployment.core.reconcile import reconcile_grouped
from spreadbus.features.uniteddeployment.planning.rule import UnitedDeploymentRule
from spreadbus.projection.decision_log import DecisionLog
from spreadbus.projection.planning import plans_for

NOW = 1_800_000_000.0


def rounds(pods: int, count: int) -> tuple[float, float, float]:
    """Median seconds of a round: whole, in the reconcile, in the planner's diff."""
    feed = Feed()
    ud = united("ud", pods)
    revision = revision_of(ud)
    feed.put(ud)
    per_subset = [pods // 3 + (1 if i < pods % 3 else 0) for i in range(3)]
    members: list[dict[str, Any]] = []
    for subset, replicas in zip(SUBSETS, per_subset, strict=True):
        feed.put(cloneset(ud, subset, replicas, revision))
        for _ in range(replicas):
            pod = realistic_pod("ud", subset, len(members), revision)
            members.append(pod)
            feed.put(pod)
    in_reconcile: list[float] = []

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return reconcile_grouped(*args, **kwargs)
        finally:
            in_reconcile.append(time.perf_counter() - started)

    rule = UnitedDeploymentRule("bench", reconcile=timed, min_interval_seconds=0.0)
    log = DecisionLog()
    feed.view.mark_all_changed()
    rule.desired(feed.view, feed.view.take_changed(), NOW)
    whole, diffs = [], []
    in_reconcile.clear()
    for r in range(count):
        pod = members[r % len(members)]
        pod["metadata"]["resourceVersion"] = str(10_000_000 + r)
        pod["status"]["conditions"][1]["lastTransitionTime"] = f"2027-01-01T00:{r % 60:02d}:00Z"
        feed.put(pod)
        started = time.perf_counter()
        wanted = rule.desired(feed.view, feed.view.take_changed(), NOW + 1 + r)
        decided = time.perf_counter()
        plans_for(rule, feed.view, log, wanted, cluster="bench", now=NOW + 1 + r)
        done = time.perf_counter()
        whole.append(done - started)
        diffs.append(done - decided)
    return statistics.median(whole), statistics.median(in_reconcile), statistics.median(diffs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--large", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=50)
    args = _tiny.arguments(parser, argv, {"small": 9, "large": 30, "rounds": 3})
    results = {}
    for pods in (args.small, args.large):
        whole, rec, diff = rounds(pods, args.rounds)
        results[pods] = whole
        print(f"UD of {pods} pods: a round {whole * 1000:.2f} ms (reconcile {rec * 1000:.2f} ms, "
              f"diff {diff * 1000:.2f} ms, gathering {(whole - rec - diff) * 1000:.2f} ms)",
              flush=True)
    print(f"ratio large/small round: {results[args.large] / results[args.small]:.2f} "
          f"({args.large} vs {args.small} pods; goal about 1)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
