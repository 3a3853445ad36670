"""Karmada's scheduler on 10,000 bindings over 20 clusters, against Webster's division alone.

The scheduler round is :func:`spreadbus.features.propagation.planning.schedule.schedule`, the
pure function the planner's propagation rule calls on each binding (filters, the estimator,
selection, the strategy's assignment). The bindings mix the strategies a policy selects: static
weights, ``dynamicWeight: AvailableReplicas``, Aggregated, and static weights spread over at
least two and at most three regions. A round first schedules every binding for the first time
(no clusters yet), then, scaled up by one replica each, schedules them again in Steady mode on
top of the first result. The baseline is Webster's apportionment alone
(:func:`spreadbus.features.propagation.core.webster.allocate`) of each binding's replicas over
the 20 clusters by weight: the division every Divided schedule ends in. ``--rule`` (on by
default) also times the planner's propagation rule (:class:`PropagationRule`) over a projection
of the same clusters, one policy with static weights and the same number of Deployments, in the
round that schedules their new bindings (reading each template and binding, the scheduler,
each binding's spec patch). Printed: bindings per
second and rounds over all bindings per second for each, and the ``ratio`` of the scheduler's
round to the division's. Times are this process's CPU time, so other work on the machine does not
count. Run: ``python -m bench.propagation_schedule [--bindings 10000]
[--clusters 20] [--rounds 1] [--no-rule]``.
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime
from typing import Any

import msgspec

from bench import _tiny
from bench.propagation_planner_round import Feed
from spreadbus.features.propagation.core.cluster import Cluster, from_object
from spreadbus.features.propagation.core.policy import defaulted_placement
from spreadbus.features.propagation.core.webster import allocate
from spreadbus.features.propagation.planning.rule import PropagationRule
from spreadbus.features.propagation.planning.schedule import Binding, schedule

NOW = datetime(2027, 1, 15, 12, 0, tzinfo=UTC)
REGIONS = ("eu", "us", "ap", "sa")


def cluster(i: int) -> Cluster:
    return from_object(cluster_object(i))


def cluster_object(i: int) -> dict[str, Any]:
    """A ready cluster serving Deployments, with room for 2,000 to 4,000 small pods."""
    pods = 2000 + 100 * i
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": f"member{i:02d}", "labels": {"tier": "gold" if i % 3 else "bronze"}},
        "spec": {"provider": "sim", "region": REGIONS[i % len(REGIONS)],
                 "zones": [f"{REGIONS[i % len(REGIONS)]}-{i % 2}"]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}],
                   "apiEnablements": [{"groupVersion": "apps/v1", "resources": [
                       {"name": "deployments", "kind": "Deployment"}]}],
                   "resourceSummary": {
                       "allocatable": {"cpu": str(pods // 10), "memory": f"{pods}Gi",
                                       "pods": str(pods)},
                       "allocated": {"cpu": str(i), "pods": str(10 * i)}}}}


def placement(i: int, names: list[str]) -> dict[str, Any]:
    """The ``i``-th binding's placement: one of four strategies, over every cluster."""
    affinity = {"clusterNames": names}
    kind = i % 4
    if kind == 1:
        scheduling: dict[str, Any] = {"replicaDivisionPreference": "Weighted",
                                      "weightPreference": {"dynamicWeight": "AvailableReplicas"}}
    elif kind == 2:
        scheduling = {"replicaDivisionPreference": "Aggregated"}
    else:
        scheduling = {"replicaDivisionPreference": "Weighted", "weightPreference": {
            "staticWeightList": [{"targetCluster": {"clusterNames": [name]},
                                  "weight": 1 + (j + i) % 5} for j, name in enumerate(names)]}}
    out: dict[str, Any] = {"clusterAffinity": affinity, "replicaScheduling": {
        "replicaSchedulingType": "Divided", **scheduling}}
    if kind == 3:
        out["spreadConstraints"] = [{"spreadByField": "region", "minGroups": 2, "maxGroups": 3},
                                    {"spreadByField": "cluster", "minGroups": 2}]
    return defaulted_placement(out)


def bindings(count: int, names: list[str]) -> list[Binding]:
    placements = [placement(i, names) for i in range(4)]
    return [Binding(api_version="apps/v1", kind="Deployment", placement=placements[i % 4],
                    replicas=1 + (i * 37) % 60, workload=True,
                    request={"cpu": 100, "memory": 128 * 2**20}, uid=f"uid-{i}")
            for i in range(count)]


def weights(binding: Binding, names: list[str]) -> dict[str, int]:
    """The static weights the placement gives (1 each for the other strategies)."""
    scheduling = binding.placement["replicaScheduling"]
    assert isinstance(scheduling, dict)
    rules = scheduling.get("weightPreference", {}).get("staticWeightList")
    if not rules:
        return dict.fromkeys(names, 1)
    return {r["targetCluster"]["clusterNames"][0]: r["weight"] for r in rules}


def schedule_round(work: list[Binding], clusters: list[Cluster]) -> tuple[float, list[Binding]]:
    """Seconds to schedule every binding, and the bindings as the round leaves them, scaled up
    by one (so the next round schedules each again, Steady, on top of this one's result)."""
    after: list[Binding] = []
    started = time.process_time()
    results = [schedule(b, clusters, NOW) for b in work]
    elapsed = time.process_time() - started
    for binding, result in zip(work, results, strict=True):
        if not result.succeeded:
            raise RuntimeError(f"{binding.uid}: {result.error}")
        if sum(t.replicas for t in result.clusters) != binding.replicas:
            raise RuntimeError(f"{binding.uid}: {result.clusters} do not sum to "
                               f"{binding.replicas}")
        after.append(msgspec.structs.replace(
            binding, replicas=binding.replicas + 1, clusters=result.clusters,
            annotations={}, last_scheduled_time=result.last_scheduled_time))
    return elapsed, after


def division_round(work: list[Binding], votes: list[dict[str, int]]) -> float:
    started = time.process_time()
    for binding, vote in zip(work, votes, strict=True):
        allocate(binding.replicas, vote, None, binding.uid)
    return time.process_time() - started


def rule_round(count: int, names: list[str]) -> float:
    """Seconds of the propagation rule's round that schedules ``count`` new bindings (static
    weights): the planner's whole work on them, reading the projection and writing each
    binding's spec, the scheduler inside it."""
    feed = Feed()
    for i in range(len(names)):
        feed.put("host", "cluster.karmada.io", "clusters", cluster_object(i))
    feed.put("host", "policy.karmada.io", "propagationpolicies", {
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "all", "namespace": "default"},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                 "placement": placement(0, names)}})
    for i in range(count):
        labels = {"app": f"web-{i}"}
        feed.put("host", "apps", "deployments", {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": f"web-{i}", "namespace": "default"},
            "spec": {"replicas": 1 + (i * 37) % 60, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [{
                         "name": "c", "image": "nginx",
                         "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}}})
    rule = PropagationRule("host")
    created = feed.apply(rule.desired(feed.view, feed.view.take_changed(), NOW.timestamp()))
    if created != count:
        raise RuntimeError(f"{created} bindings created for {count} Deployments")
    changed = feed.view.take_changed()
    started = time.process_time()
    wanted = rule.desired(feed.view, changed, NOW.timestamp() + 1)
    elapsed = time.process_time() - started
    specs = [w for w in wanted if w.verb == "patch" and w.target.resource == "resourcebindings"]
    if len(specs) != count:
        raise RuntimeError(f"{len(specs)} bindings scheduled of {count}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--bindings", type=int, default=10_000)
    parser.add_argument("--clusters", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=1,
                        help="first-time and Steady rounds over every binding, each")
    parser.add_argument("--rule", action=argparse.BooleanOptionalAction, default=True,
                        help="also time the planner's propagation rule scheduling them")
    args = _tiny.arguments(parser, argv, {"bindings": 40, "clusters": 5})
    clusters = [cluster(i) for i in range(args.clusters)]
    names = [c.name for c in clusters]
    work = bindings(args.bindings, names)
    votes = [weights(b, names) for b in work]
    first = steady = division = 0.0
    for _ in range(args.rounds):
        spent, scaled = schedule_round(work, clusters)
        first += spent
        spent, _ = schedule_round(scaled, clusters)
        steady += spent
        division += division_round(work, votes)
    per_round = {"first schedule": first / args.rounds, "Steady scale-up": steady / args.rounds,
                 "Webster alone": division / args.rounds}
    for what, seconds in per_round.items():
        print(f"{what}: {args.bindings} bindings over {args.clusters} clusters in "
              f"{seconds:.3f} s ({args.bindings / seconds:,.0f} bindings/s, "
              f"{1 / seconds:.2f} rounds/s)", flush=True)
    if args.rule:
        per_round["the propagation rule"] = rule_round(args.bindings, names)
        seconds = per_round["the propagation rule"]
        print(f"the propagation rule's round scheduling {args.bindings} new bindings "
              f"(static weights) over {args.clusters} clusters: {seconds:.3f} CPU s "
              f"({args.bindings / seconds:,.0f} bindings/s)", flush=True)
    base = per_round["Webster alone"]
    print(f"ratio first schedule/Webster alone: {per_round['first schedule'] / base:.2f}")
    print(f"ratio Steady scale-up/Webster alone: {per_round['Steady scale-up'] / base:.2f}")
    if args.rule:
        print(f"ratio the propagation rule/Webster alone: "
              f"{per_round['the propagation rule'] / base:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
