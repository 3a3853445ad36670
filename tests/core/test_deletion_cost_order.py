"""Deletion costs: Kruise's exact values, per version, fake bucket, minReplicas protection."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.core.workloadspread import pod_state
from spreadbus.core.workloadspread.deletion_cost import (
    annotation_updates,
    deletion_costs,
    subset_costs,
)
from spreadbus.core.workloadspread.model import FAKE_SUBSET, from_object
from tests.core.builders import pod, subset, workloadspread

JSON = dict[str, Any]


def _pods(prefix: str, count: int, **kwargs: Any) -> list[JSON]:
    return [pod(f"{prefix}-{i}", **kwargs) for i in range(count)]


def test_kruise_example_three_subsets_with_twenty_pods_each() -> None:
    ws = from_object(workloadspread(subset("a", 10), subset("b", 10), subset("c")))
    buckets = {"a": _pods("a", 20), "b": _pods("b", 20), "c": _pods("c", 20)}
    costs = deletion_costs(ws, {"v1": buckets}, replicas=60, latest_version="v1")
    by_subset = {
        name: Counter(costs[pod_state.key(p)] for p in pods) for name, pods in buckets.items()
    }
    assert by_subset == {
        "a": Counter({300: 10, -100: 10}),
        "b": Counter({200: 10, -200: 10}),
        "c": Counter({100: 20}),
    }


def test_within_limits_costs_follow_subset_order() -> None:
    ws = from_object(workloadspread(subset("a", 10), subset("b", 10), subset("c")))
    buckets = {"a": _pods("a", 10), "b": _pods("b", 10), "c": _pods("c", 10)}
    costs = deletion_costs(ws, {"v1": buckets}, replicas=30, latest_version="v1")
    assert {costs[f"default/{n}-0"] for n in "abc"} == {300, 200, 100}
    assert costs["default/a-0"] == 300
    assert costs["default/c-9"] == 100


def test_older_versions_are_removed_from_the_first_subsets_first() -> None:
    ws = from_object(workloadspread(subset("a", 2), subset("b", 2), subset("c")))
    buckets = {"a": _pods("a", 3), "b": _pods("b", 2), "c": _pods("c", 1)}
    costs = deletion_costs(ws, {"old": buckets}, replicas=6, latest_version="new")
    assert sorted(costs.values()).count(-300) == 1  # the one overflowing pod of "a", idx 2
    assert costs["default/b-0"] == 200
    assert costs["default/c-0"] == 300
    assert {costs["default/a-0"], costs["default/a-1"], costs["default/a-2"]} == {100, -300}


def test_pods_in_no_subset_go_first() -> None:
    ws = from_object(workloadspread(subset("a", 2), subset("b")))
    buckets = {"a": _pods("a", 1), "b": [], FAKE_SUBSET: _pods("x", 2)}
    costs = deletion_costs(ws, {"v": buckets}, replicas=3, latest_version="v")
    assert costs == {"default/a-0": 200, "default/x-0": -300, "default/x-1": -300}


def test_inactive_pods_are_left_alone_and_statefulsets_get_no_costs() -> None:
    ws = from_object(workloadspread(subset("a", 1), subset("b")))
    done = pod("done", phase="Succeeded")
    costs = deletion_costs(ws, {"v": {"a": [done]}}, replicas=1, latest_version="v")
    assert "default/done" not in costs
    sts = from_object(workloadspread(subset("a", 1), subset("b"), kind="StatefulSet"))
    assert deletion_costs(sts, {"v": {"a": _pods("a", 3)}}, replicas=3, latest_version="v") == {}


def test_overflow_is_chosen_with_the_active_pods_order() -> None:
    pods = [
        pod("old-ready", created="2026-01-01T00:00:00Z"),
        pod("unassigned", phase="Pending", ready=False),
        pod("new-ready", created="2026-01-02T00:00:00Z", node="n1"),
        pod("not-ready", node="n1", ready=False),
    ]
    pods[0]["spec"]["nodeName"] = "n1"
    costs = subset_costs(pods, n=2, idx=0, limit=2)
    assert costs == {
        "default/unassigned": -100,
        "default/not-ready": -100,
        "default/new-ready": 200,
        "default/old-ready": 200,
    }
    costs = subset_costs(pods, n=2, idx=0, limit=1)
    assert costs["default/new-ready"] == -100
    assert costs["default/old-ready"] == 200


def test_annotation_updates_skip_equal_values_and_never_add_zero() -> None:
    a = pod("a")
    a["metadata"]["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": "200"}
    b, c = pod("b"), pod("c")
    updates = annotation_updates({"default/a": 200, "default/b": 0, "default/c": -100}, [a, b, c])
    assert updates == {"default/c": "-100"}


def test_min_replicas_protects_the_minimum_of_each_subset() -> None:
    ws = from_object(
        workloadspread(subset("a", 5, minReplicas=2), subset("b", minReplicas=1), subset("c"))
    )
    buckets = {"a": _pods("a", 4), "b": _pods("b", 3), "c": _pods("c", 2)}
    costs = deletion_costs(ws, {"v": buckets}, replicas=9, latest_version="v")
    assert Counter(costs[pod_state.key(p)] for p in buckets["a"]) == Counter({300: 2, 600: 2})
    assert Counter(costs[pod_state.key(p)] for p in buckets["b"]) == Counter({200: 2, 500: 1})
    assert Counter(costs[pod_state.key(p)] for p in buckets["c"]) == Counter({100: 2})


@st.composite
def layouts(draw: st.DrawFn) -> tuple[list[tuple[int | None, int]], list[int], int]:
    count = draw(st.integers(1, 4))
    spec: list[tuple[int | None, int]] = []
    for _ in range(count):
        maximum = draw(st.one_of(st.none(), st.integers(0, 5)))
        minimum = draw(st.integers(0, 5 if maximum is None else maximum))
        spec.append((maximum, minimum))
    pods = [draw(st.integers(0, 7)) for _ in range(count)]
    fake = draw(st.integers(0, 2))
    return spec, pods, fake


@settings(max_examples=300, deadline=None)
@given(layouts())
def test_scale_in_by_lowest_cost_follows_the_subset_rules(
    layout: tuple[list[tuple[int | None, int]], list[int], int],
) -> None:
    spec, counts, fake = layout
    names = [f"s{i}" for i in range(len(spec))]
    subsets = []
    for name, (maximum, minimum) in zip(names, spec, strict=True):
        subsets.append(subset(name, maximum, minReplicas=minimum))
    ws = from_object(workloadspread(*subsets))
    buckets: dict[str, list[JSON]] = {
        name: _pods(name, c) for name, c in zip(names, counts, strict=True)
    }
    buckets[FAKE_SUBSET] = _pods("fake", fake)
    limits = {name: maximum for name, (maximum, _) in zip(names, spec, strict=True)}
    minimums = {name: minimum for name, (_, minimum) in zip(names, spec, strict=True)}
    position = {name: i for i, name in enumerate(names)}
    while any(buckets.values()):
        costs = deletion_costs(ws, {"v": buckets}, replicas=10, latest_version="v")
        victim_bucket, victim = min(
            ((b, p) for b, pods in buckets.items() for p in pods),
            key=lambda bp: costs[pod_state.key(bp[1])],
        )
        sizes = {name: len(buckets[name]) for name in names}
        over_limit = [n for n in names if limits[n] is not None and sizes[n] > (limits[n] or 0)]
        above_min = [n for n in names if sizes[n] > minimums[n]]
        if buckets[FAKE_SUBSET]:
            assert victim_bucket == FAKE_SUBSET
        elif over_limit:
            # overflow goes first, from the later subsets first
            assert victim_bucket == max(over_limit, key=position.__getitem__)
        elif above_min:
            # never below a minimum while another subset is above its own; later subsets first
            assert victim_bucket == max(above_min, key=position.__getitem__)
        else:
            assert victim_bucket == max((n for n in names if sizes[n]), key=position.__getitem__)
        buckets[victim_bucket].remove(victim)
