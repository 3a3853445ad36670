"""A pod observed again in the same subset and version moves only where it changed in the
tally (its place in the scale-in order, activity, pending since when, the key its creation is
recorded under); the plans stay those of the full recount.

The matched annotation here carries a uid now and then, so the key a creating entry is
recognised by (the annotation's uid, else the pod's name) changes while the pod stays put, with
creating entries in flight naming either.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spreadbus.features.workloadspread.core.model import MATCHED_ANNOTATION
from spreadbus.features.workloadspread.core.occupancy import Reservation
from spreadbus.features.workloadspread.planning.spread_tally import SpreadTally
from tests.workloadspread.core.test_spread_tally_matches_full_recount import (
    WHITELIST,
    World,
    expected_plan,
)

NAMES = ["p0", "p1", "p2", "p3"]
KEYS = ["uid-x", "uid-y", *NAMES]

change = st.fixed_dictionaries({
    "op": st.just("pod"),
    "name": st.sampled_from(NAMES),
    "match": st.sampled_from(["s0", "s0", "s1"]),
    "uid": st.sampled_from([None, None, "uid-x", "uid-y"]),
    "phase": st.sampled_from(["Running", "Running", "Pending", "Succeeded"]),
    "ready": st.booleans(),
    "created": st.integers(0, 2),
    "unschedulable": st.one_of(st.none(), st.integers(0, 20)),
    "node": st.just("node-1"),
})
ops = st.one_of(
    change, change, change,
    st.fixed_dictionaries({"op": st.just("time"), "seconds": st.integers(1, 20)}),
    st.fixed_dictionaries({
        "op": st.just("creating"),
        "entries": st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from(["s0", "s1"]),
                                      st.integers(0, 40)), max_size=4),
    }),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([None, 1, 3]), st.sampled_from([None, 5]),
       st.lists(ops, min_size=4, max_size=30))
def test_a_pod_that_stays_in_its_subset_is_counted_as_the_full_recount_counts(
    limit: int | None, adaptive: int | None, changes: list[dict[str, Any]]
) -> None:
    world = World([(limit, None), (None, 1)], adaptive=adaptive, unmatched=False)
    tally = SpreadTally(world.ws)
    for step in changes:
        if step["op"] == "pod":
            obj = world.make_pod({**step, "version": "aaa", "deleting": False, "cost": None})
            if step["uid"] is not None:
                body = {"name": world.ws.name, "subset": step["match"], "uid": step["uid"]}
                obj["metadata"]["annotations"][MATCHED_ANNOTATION] = json.dumps(body)
            world.pods[f"default/{step['name']}"] = obj
            tally.apply(f"default/{step['name']}", obj)
        elif step["op"] == "time":
            world.now += timedelta(seconds=step["seconds"])
        else:
            world.reservations = [
                Reservation(world.ws.key, "aaa", subset_name, who, "creating",
                            world.now - timedelta(seconds=age))
                for who, subset_name, age in step["entries"]
            ]
        expected = expected_plan(world, 300.0)
        got = tally.plan(world.ws, workload=world.deploy, latest=world.latest,
                         reservations=world.reservations, now=world.now, whitelist=WHITELIST,
                         nodes=lambda _: world.nodes)
        assert got.status == expected.status
        assert got.requeue_at == expected.requeue_at
        assert got.evictions == expected.evictions
        assert tally.differing() == expected.deletion_costs
