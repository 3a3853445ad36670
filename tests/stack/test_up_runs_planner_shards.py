"""``spreadbus up --shards 2`` runs two planner shard groups, each the leader of its own lease and
each planning for the namespaces of its partition: a WorkloadSpread in a namespace of either
partition gets its status written, and both shards published plans."""

from __future__ import annotations

import argparse
import functools
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from events.shards import partition
from spreadbus.cli import up
from spreadbus.cli.local_stack import Stack
from tests.fixtures.stack_outages import plans_and_outcomes
from tests.workloadspread_e2e.stack import (
    create_spread,
    deployment,
    running_stack,
    spread,
    spread_status,
    subset_field,
    wait_for,
    zone_subset,
)

SHARDS = 2
NAMESPACES = ("team-0", "team-1")
"""One namespace in each partition of two (checked below)."""


def metric_sum(stack: Stack, child: str, name: str) -> float:
    """The sum over its labels of one metric of a running service."""
    port = next(c.health_port for c in stack.services if c.name == child)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        lines = response.read().decode().splitlines()
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines
               if line.startswith((f"{name} ", f"{name}{{")))


def subsets_counted(api: client.ApiClient, namespace: str) -> dict[str, Any] | None:
    """The status's missing replicas by subset, once the planner has written them."""
    return subset_field(spread_status(api, namespace, "ws"), "missingReplicas") or None


def test_up_takes_shards_within_the_partition_functions_range() -> None:
    parser = argparse.ArgumentParser()
    up.add_arguments(parser)
    assert parser.parse_args(["--shards", "3"]).shards == 3
    assert up.run(parser.parse_args(["--shards", "0"])) == 2


@pytest.mark.e2e
def test_two_planner_shards_each_plan_for_their_namespaces(tmp_path: Path) -> None:
    assert sorted(partition(ns, SHARDS) for ns in NAMESPACES) == [0, 1]
    with running_stack(tmp_path / "stack", "three-zones", {}, planner_shards=SHARDS) as (
            stack, api):
        planners = [c.name for c in stack.services if c.name.startswith("planner")]
        assert planners == ["planner-0", "planner-1"]
        for namespace in NAMESPACES:
            create_spread(api, namespace, spread("ws", "web", [
                zone_subset("a", "zone-a"), zone_subset("b", "zone-b")]))
            apps: Any = client.AppsV1Api(api)
            apps.create_namespaced_deployment(namespace, deployment("web", 2))
        for namespace in NAMESPACES:
            wait_for(f"the WorkloadSpread's status in {namespace}",
                     functools.partial(subsets_counted, api, namespace), 90)
        plans, _ = plans_and_outcomes(stack)
        assert set(NAMESPACES) <= {p.target.namespace for p in plans}
        for planner in planners:
            assert metric_sum(stack, planner, "spreadbus_planner_leader") == 1, planner
            assert metric_sum(stack, planner, "spreadbus_planner_plans_total") > 0, planner
