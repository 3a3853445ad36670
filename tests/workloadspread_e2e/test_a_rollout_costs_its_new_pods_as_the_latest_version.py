"""A rollout right after a scale-out: the new ReplicaSet's pods are never costed as old ones.

The watcher publishes the new ReplicaSet and its pods (ADDED, at once) before the Deployment's
new template (MODIFIED, held for a moment), so the planner can hold the rollout's pods next to the
previous template. Reading the previous ReplicaSet as the latest version then costs the new pods
as an older version's (the fixed pool's pods cheapest), corrected a moment later; a scale-in in
between, or a planner that dies in between, removes fixed-pool pods before elastic ones. Each
pod's costs on ``PLANS`` may only age: once costed as an older version's pod, never as the latest
version's again.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
from pathlib import Path
from typing import Any

import pytest

from events.streams import PLANS
from tests.backbone.bus_recording import read_stream
from tests.workloadspread_e2e.elastic_workload import SpreadWorkload, converge
from tests.workloadspread_e2e.stack import (
    DELETION_COST,
    node_zones,
    running_stack,
    subset_of,
    wait_for,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROUNDS = 3
AGE = {("ACK", "200"): "latest", ("ACK", "100"): "older", ("ECI", "100"): "latest",
       ("ECI", "200"): "older"}
"""A subset's cost for the latest version's pods and for an older version's (positions counted
backwards), with two subsets."""


def test_the_new_pods_of_a_rollout_right_after_a_scale_out_are_never_costed_as_older(
    tmp_path: Path,
) -> None:
    with running_stack(tmp_path, "elastic", {}) as (stack, api):
        assert stack.nats is not None
        workload = SpreadWorkload(api, "rollouts", node_zones(api))
        workload.create()
        wait_for("the first status", workload.status, 60)
        subsets: dict[str, str] = {}

        def seen(pods: list[Any] | None) -> list[Any] | None:
            for p in pods or ():
                subsets[p.metadata.name] = subset_of(p)
            return pods

        for revision in range(2, 2 + ROUNDS):
            workload.apply(("replicas", 12))
            wait_for("12 pods", lambda: seen(workload.rolled_out_pods()), 60, workload.describe)
            workload.apply(("template", revision))
            wait_for("the rollout", lambda: seen(workload.rolled_out_pods()), 60,
                     workload.describe)
            converge(stack, workload)
            seen(workload.pods())
            workload.apply(("replicas", 3))
            converge(stack, workload)
        reader = stack.bus_options()
        plans = [p for _, p in asyncio.run(read_stream(stack.nats.url, PLANS.name, **reader))]

    ages: dict[str, list[str]] = collections.defaultdict(list)
    for plan in plans:
        if plan.target.resource != "pods":
            continue
        cost = plan.patch["metadata"]["annotations"][DELETION_COST]
        age = AGE.get((subsets.get(plan.target.name, ""), cost))
        if age is not None:
            ages[plan.target.name].append(age)
    assert ages, "the rollouts made the planner cost pods"
    rejuvenated = {name: seq for name, seq in ages.items()
                   if any(a == "older" and b == "latest" for a, b in itertools.pairwise(seq))}
    assert not rejuvenated, f"pods costed as older, then as the latest version: {rejuvenated}"
