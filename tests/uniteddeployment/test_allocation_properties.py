"""What holds for every allocation, over UnitedDeployments hypothesis makes up.

- specific: when it answers, the subsets add up to ``spec.replicas`` (or, without it, to their
  fixed values), nobody is negative, and the order of the subset list does not matter;
- min/max: no subset goes below 0 or above its maximum, nor below its minimum while the minimums
  fit, and the total is used up whenever some subset is unlimited;
- adaptive: an unschedulable subset never gets more than its ready pods or its minimum;
- every allocator answers the same for the same inputs.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.uniteddeployment.core.allocation import (
    AllocationError,
    SubsetWorkload,
    allocate,
    specified_replicas,
    subset_bounds,
)
from spreadbus.features.uniteddeployment.core.model import UnitedDeployment
from tests.uniteddeployment.builders import ADAPTIVE, RESERVATION, subset_json, ud

_NAMES = st.lists(st.text("abcxyz-", min_size=1, max_size=4), min_size=1, max_size=6, unique=True)
_COUNT = st.integers(0, 40)
_INT_OR_PERCENT = _COUNT | st.integers(0, 100).map(lambda p: f"{p}%")
_FIXED = st.none() | _INT_OR_PERCENT | st.sampled_from(["x%", "12", -3, 1.5])
_BOUND = st.none() | _INT_OR_PERCENT | st.sampled_from(["x%", "7"])
_WORKLOAD = st.builds(
    SubsetWorkload,
    replicas=_COUNT,
    ready_replicas=_COUNT,
    reserved_pods=st.integers(0, 5),
    unschedulable=st.booleans(),
    marked_unschedulable=st.booleans(),
)


@st.composite
def _workloads(draw: st.DrawFn, names: list[str]) -> dict[str, SubsetWorkload]:
    return {name: draw(_WORKLOAD) for name in names if draw(st.booleans())}


@st.composite
def _specific(draw: st.DrawFn) -> tuple[UnitedDeployment, list[dict[str, Any]], dict[str, Any]]:
    names = draw(_NAMES)
    subsets = []
    for name in names:
        fixed = draw(_FIXED)
        subsets.append(subset_json(name) if fixed is None else subset_json(name, replicas=fixed))
    replicas = draw(st.none() | st.integers(0, 120))
    spread = ud(subsets, replicas=replicas)
    return spread, subsets, draw(_workloads(names))


@st.composite
def _elastic(draw: st.DrawFn, strategy: dict[str, Any] | None = None) -> UnitedDeployment:
    names = draw(_NAMES)
    subsets = []
    for name in names:
        low, high = draw(_BOUND), draw(_BOUND)
        extra: dict[str, Any] = {}
        if low is not None:
            extra["min_replicas"] = low
        if high is not None:
            extra["max_replicas"] = high
        if not extra:
            extra["max_replicas"] = None
        subsets.append(subset_json(name, **extra))
    if draw(st.booleans()):
        subsets.append(subset_json("unlimited", min_replicas=0))
    if not any("minReplicas" in s or s.get("maxReplicas") is not None for s in subsets):
        subsets[0]["minReplicas"] = 0
    return ud(subsets, replicas=draw(st.integers(0, 120)), strategy=strategy)


@settings(max_examples=300, deadline=None)
@given(_specific())
def test_specific_adds_up_to_spec_replicas_when_it_answers(
    case: tuple[UnitedDeployment, list[dict[str, Any]], dict[str, SubsetWorkload]],
) -> None:
    spread, _, workloads = case
    found = allocate(spread, workloads)
    if isinstance(found, AllocationError):
        return
    assert list(found) == [s.name for s in spread.subsets]
    assert all(count >= 0 for count in found.values())
    if spread.replicas is None:
        assert found == specified_replicas(spread)
    else:
        assert sum(found.values()) == spread.replicas


@settings(max_examples=200, deadline=None)
@given(_specific(), st.randoms(use_true_random=False))
def test_specific_does_not_depend_on_the_order_of_the_subset_list(
    case: tuple[UnitedDeployment, list[dict[str, Any]], dict[str, SubsetWorkload]],
    random: Any,
) -> None:
    spread, subsets, workloads = case
    shuffled = list(subsets)
    random.shuffle(shuffled)
    again = ud(shuffled, replicas=spread.replicas)

    assert allocate(spread, workloads) == allocate(again, workloads)


@settings(max_examples=300, deadline=None)
@given(_elastic())
def test_min_max_stays_within_every_subsets_bounds(spread: UnitedDeployment) -> None:
    found = allocate(spread, {})
    if isinstance(found, AllocationError):
        assert "must be more than or equal to minReplicas" in found.message
        return
    total = spread.replicas or 0
    bounds = {s.name: subset_bounds(total, s) for s in spread.subsets}
    assert all(0 <= found[name] <= bounds[name].maximum for name in found)
    assert sum(found.values()) <= total
    if sum(b.minimum for b in bounds.values()) <= total:
        assert all(found[name] >= bounds[name].minimum for name in found)
        if any(s.max_replicas is None for s in spread.subsets):
            assert sum(found.values()) == total


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_adaptive_never_grows_an_unschedulable_subset_past_its_ready_pods_or_minimum(
    data: st.DataObject,
) -> None:
    spread = data.draw(_elastic(ADAPTIVE))
    workloads = data.draw(_workloads([s.name for s in spread.subsets]))
    found = allocate(spread, workloads)
    if isinstance(found, AllocationError):
        return
    total = spread.replicas or 0
    for subset in spread.subsets:
        workload = workloads.get(subset.name)
        if workload is not None and workload.unschedulable:
            minimum = subset_bounds(total, subset).minimum
            assert found[subset.name] <= max(workload.ready_replicas, minimum)


@settings(max_examples=200, deadline=None)
@given(st.data(), st.sampled_from([None, ADAPTIVE, RESERVATION]))
def test_every_allocator_answers_the_same_for_the_same_inputs(
    data: st.DataObject, strategy: dict[str, Any] | None
) -> None:
    spread = data.draw(_elastic(strategy))
    workloads = data.draw(_workloads([s.name for s in spread.subsets]))
    reordered = dict(reversed(list(workloads.items())))

    assert allocate(spread, workloads) == allocate(spread, reordered)
