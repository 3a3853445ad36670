"""Kruise's own allocator test vectors, and the worked examples of its UnitedDeployment docs.

``data/kruise_allocator_cases.yaml`` carries every case of Kruise's ``allocator_test.go``
(min/max, default adaptive, reservation) as data; the specific allocator's cases, which upstream
writes as expected strings of the sorted list, are the table below. Each runs through the
dispatcher from a UnitedDeployment decoded from JSON, so the choice of allocator is checked too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.features.uniteddeployment.core.allocation import (
    AllocationError,
    Allocator,
    SubsetWorkload,
    allocate,
    allocator_for,
)
from tests.uniteddeployment.builders import (
    ADAPTIVE,
    RESERVATION,
    elastic_subsets,
    subset_json,
    ud,
)

_CASES: dict[str, list[dict[str, Any]]] = yaml.safe_load(
    (Path(__file__).parent / "data" / "kruise_allocator_cases.yaml").read_text()
)


def _rows(section: str) -> list[Any]:
    return [pytest.param(row, id=row["id"]) for row in _CASES[section]]


def _names(count: int) -> list[str]:
    return [f"subset-{i}" for i in range(count)]


@pytest.mark.parametrize("row", _rows("min_max"))
def test_min_max_fills_minimums_then_maximums_in_spec_order(row: dict[str, Any]) -> None:
    spread = ud(elastic_subsets(row["min"], row["max"]), replicas=row["replicas"])

    assert allocator_for(spread) is Allocator.MIN_MAX
    assert allocate(spread, {}) == dict(zip(_names(len(row["expect"])), row["expect"], strict=True))


@pytest.mark.parametrize("row", _rows("adaptive"))
def test_adaptive_moves_pending_replicas_on_and_keeps_ready_ones(row: dict[str, Any]) -> None:
    spread = ud(
        elastic_subsets(row["min"], row["max"]), replicas=row["replicas"], strategy=ADAPTIVE
    )
    workloads = {
        name: SubsetWorkload(
            replicas=pods,
            ready_replicas=pods - max(0, pending),
            unschedulable=pending != 0,
        )
        for name, pods, pending in zip(
            _names(len(row["pods"])), row["pods"], row["pending"], strict=True
        )
    }

    assert allocator_for(spread) is Allocator.ADAPTIVE
    assert allocate(spread, workloads) == dict(
        zip(_names(len(row["expect"])), row["expect"], strict=True)
    )


@pytest.mark.parametrize("row", _rows("reservation"))
def test_reservation_allocates_substitutes_for_reserved_pods(row: dict[str, Any]) -> None:
    spread = ud(
        elastic_subsets(row["min"], row["max"]), replicas=row["replicas"], strategy=RESERVATION
    )
    workloads = {
        name: SubsetWorkload(
            replicas=current,
            ready_replicas=current - max(0, reserved),
            reserved_pods=max(0, reserved),
            unschedulable=reserved > 0,
            marked_unschedulable=reserved != 0,
        )
        for name, current, reserved in zip(
            _names(len(row["current"])), row["current"], row["reserved"], strict=True
        )
    }

    assert allocator_for(spread) is Allocator.RESERVATION
    assert allocate(spread, workloads) == dict(
        zip(_names(len(row["expect"])), row["expect"], strict=True)
    )


# --- specific: TestScaleReplicas, TestSpecifyValidReplicas, TestSpecifyInvalidReplicas ----------

_SPECIFIC: list[Any] = [
    # (spec.replicas, current replicas by subset, fixed subset replicas, expected)
    pytest.param(
        5, {"t1": 1, "t2": 4, "t3": 2, "t4": 2}, {}, {"t1": 1, "t2": 2, "t3": 1, "t4": 1},
        id="scale-to-5-remainder-to-the-largest-subset",
    ),
    pytest.param(0, {"t1": 2}, {}, {"t1": 0}, id="scale-to-0"),
    pytest.param(
        17, {"t1": 1, "t2": 4, "t3": 2, "t4": 2}, {}, {"t1": 4, "t2": 5, "t3": 4, "t4": 4},
        id="scale-to-17",
    ),
    pytest.param(
        9, {"t1": 2, "t2": 4, "t3": 2, "t4": 2}, {}, {"t1": 2, "t2": 3, "t3": 2, "t4": 2},
        id="scale-to-9",
    ),
    pytest.param(19, {"t1": 0, "t2": 10}, {}, {"t1": 9, "t2": 10}, id="scale-to-19"),
    pytest.param(21, {"t1": 0, "t2": 10}, {}, {"t1": 10, "t2": 11}, id="scale-to-21"),
    pytest.param(
        27, {"t1": 1, "t2": 4, "t3": 2, "t4": 2}, {"t1": 4, "t3": 4},
        {"t1": 4, "t2": 10, "t3": 4, "t4": 9},
        id="two-fixed-the-rest-split",
    ),
    pytest.param(
        8, {"t1": 2, "t2": 4, "t3": 2, "t4": 2}, {"t1": 4, "t3": 4},
        {"t1": 4, "t2": 0, "t3": 4, "t4": 0},
        id="fixed-take-everything",
    ),
    pytest.param(
        16, {"t1": 2, "t2": 4, "t3": 2, "t4": 2}, {"t1": 4, "t2": 4, "t3": 4, "t4": 4},
        {"t1": 4, "t2": 4, "t3": 4, "t4": 4},
        id="all-fixed-summing-to-replicas",
    ),
    pytest.param(
        10, {"t1": 4, "t2": 2, "t3": 2, "t4": 2}, {"t1": 1, "t2": 2, "t3": 3},
        {"t1": 1, "t2": 2, "t3": 3, "t4": 4},
        id="three-fixed-one-takes-the-rest",
    ),
    pytest.param(
        10, {"t1": 4, "t2": 2, "t3": 2, "t4": 2}, {"t1": 1, "t2": 2, "t3": 3, "t4": 4},
        {"t1": 1, "t2": 2, "t3": 3, "t4": 4},
        id="all-fixed-with-replicas",
    ),
    pytest.param(
        None, {"t1": 4, "t2": 2, "t3": 2, "t4": 2}, {"t1": 1, "t2": 2, "t3": 3, "t4": 4},
        {"t1": 1, "t2": 2, "t3": 3, "t4": 4},
        id="all-fixed-without-replicas",
    ),
    pytest.param(
        14, {"t1": 10, "t2": 4}, {"t1": 6, "t2": 6},
        "specified subsets' replica (12) is less than UnitedDeployment replica (14)",
        id="all-fixed-below-replicas-is-refused",
    ),
    pytest.param(
        14, {"t1": 10, "t2": 4}, {"t1": 10, "t2": 11},
        "specified subsets' replica (21) is greater than UnitedDeployment replica (14)",
        id="fixed-above-replicas-is-refused",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("replicas", "current", "fixed", "expected"), _SPECIFIC)
def test_specific_honours_fixed_replicas_and_splits_the_rest(
    replicas: int | None,
    current: dict[str, int],
    fixed: dict[str, int],
    expected: dict[str, int] | str,
) -> None:
    subsets = [
        subset_json(name, replicas=fixed[name]) if name in fixed else subset_json(name)
        for name in current
    ]
    spread = ud(subsets, replicas=replicas)
    workloads = {name: SubsetWorkload(replicas=count) for name, count in current.items()}

    assert allocator_for(spread) is Allocator.SPECIFIC
    found = allocate(spread, workloads)
    if isinstance(expected, str):
        assert found == AllocationError(expected)
    else:
        assert found == expected


# --- specific: the controller tests' sequences and the reference's examples ----------------------

_SEQUENCE: list[Any] = [
    # Kruise's StatefulSet controller test: ten replicas over subset-a and subset-b (and subset-c
    # for one step), subset-a's replicas changed step by step; current = the step before.
    pytest.param({}, {"subset-a": 0, "subset-b": 0}, {"subset-a": 5, "subset-b": 5}, id="even"),
    pytest.param(
        {"subset-a": 9}, {"subset-a": 5, "subset-b": 5}, {"subset-a": 9, "subset-b": 1},
        id="fixed-9",
    ),
    pytest.param(
        {"subset-a": "40%"}, {"subset-a": 9, "subset-b": 1}, {"subset-a": 4, "subset-b": 6},
        id="fixed-40-percent",
    ),
    pytest.param(
        {"subset-a": "30%"}, {"subset-a": 4, "subset-b": 6}, {"subset-a": 3, "subset-b": 7},
        id="fixed-30-percent",
    ),
    pytest.param(
        {"subset-a": "20%"}, {"subset-a": 3, "subset-b": 7, "subset-c": 0},
        {"subset-a": 2, "subset-b": 4, "subset-c": 4},
        id="fixed-20-percent-new-subset-c",
    ),
    pytest.param(
        {"subset-a": "10%"}, {"subset-a": 2, "subset-b": 4}, {"subset-a": 1, "subset-b": 9},
        id="fixed-10-percent-subset-c-removed",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("fixed", "current", "expected"), _SEQUENCE)
def test_specific_follows_the_controller_test_sequence(
    fixed: dict[str, int | str], current: dict[str, int], expected: dict[str, int]
) -> None:
    subsets = [
        subset_json(name, replicas=fixed[name]) if name in fixed else subset_json(name)
        for name in current
    ]
    workloads = {name: SubsetWorkload(replicas=count) for name, count in current.items() if count}

    assert allocate(ud(subsets, replicas=10), workloads) == expected


def test_a_new_ud_of_one_replica_gives_it_to_the_later_name() -> None:
    spread = ud([subset_json("subset-a"), subset_json("subset-b")], replicas=1)

    assert allocate(spread, {}) == {"subset-a": 0, "subset-b": 1}


def test_the_remainder_goes_to_the_subsets_running_the_most_replicas_not_the_first_listed() -> None:
    spread = ud([subset_json("a"), subset_json("b"), subset_json("c")], replicas=5)
    workloads = {"b": SubsetWorkload(replicas=1), "c": SubsetWorkload(replicas=3)}

    assert allocate(spread, workloads) == {"a": 1, "b": 2, "c": 2}


def test_without_spec_replicas_every_subset_must_be_fixed() -> None:
    spread = ud([subset_json("a", replicas=2), subset_json("b")])

    assert allocate(spread, {}) == AllocationError(
        "all subsets must be specified when UnitedDeployment replica is unspecified"
    )


def test_without_spec_replicas_a_percentage_is_unparsable_and_so_unspecified() -> None:
    spread = ud([subset_json("a", replicas="50%"), subset_json("b", replicas=1)])

    assert allocate(spread, {}) == AllocationError(
        "all subsets must be specified when UnitedDeployment replica is unspecified"
    )


@pytest.mark.parametrize(
    "bad", [pytest.param("abc", id="no-percent"), pytest.param(-2, id="negative"),
            pytest.param("150%", id="over-100-percent"), pytest.param(1.5, id="not-an-integer")],
)  # fmt: skip
def test_an_unparsable_fixed_value_leaves_its_subset_to_share_the_rest(bad: object) -> None:
    spread = ud([subset_json("a", replicas=bad), subset_json("b", replicas=3)], replicas=8)

    assert allocate(spread, {}) == {"a": 5, "b": 3}


def test_spec_replicas_without_subsets_is_refused_as_less_than_specified() -> None:
    assert allocate(ud([], replicas=3), {}) == AllocationError(
        "specified subsets' replica (0) is less than UnitedDeployment replica (3)"
    )


# --- min/max beyond the upstream table -----------------------------------------------------------


def test_min_above_max_is_refused_naming_the_subset_index() -> None:
    spread = ud(
        [subset_json("a", min_replicas=1), subset_json("b", min_replicas=3, max_replicas=2)],
        replicas=5,
    )

    assert allocate(spread, {}) == AllocationError(
        "subset[1].maxReplicas(2) must be more than or equal to minReplicas(3)"
    )


def test_an_unparsable_maximum_reads_as_zero() -> None:
    spread = ud(
        [subset_json("a", max_replicas="lots"), subset_json("b", min_replicas=1)], replicas=4
    )

    assert allocate(spread, {}) == {"a": 0, "b": 4}


def test_percent_bounds_scale_against_spec_replicas() -> None:
    spread = ud(
        [subset_json("a", min_replicas="25%", max_replicas="50%"), subset_json("b")], replicas=10
    )

    assert allocate(spread, {}) == {"a": 5, "b": 5}


def test_percent_bounds_without_spec_replicas_read_as_zero_and_nothing_is_allocated() -> None:
    spread = ud([subset_json("a", min_replicas="50%"), subset_json("b")])

    assert allocate(spread, {}) == {"a": 0, "b": 0}


def test_replicas_left_when_every_subset_is_capped_stay_unallocated() -> None:
    spread = ud([subset_json("a", max_replicas=2), subset_json("b", max_replicas=1)], replicas=6)

    assert allocate(spread, {}) == {"a": 2, "b": 1}


def test_min_max_ignores_the_current_workloads() -> None:
    spread = ud([subset_json("a", max_replicas=2), subset_json("b")], replicas=3)

    assert allocate(spread, {"b": SubsetWorkload(replicas=3, ready_replicas=3)}) == {"a": 2, "b": 1}


# --- which allocator ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "subsets", "expected"),
    [
        pytest.param(None, [subset_json("a", replicas=1)], Allocator.SPECIFIC, id="fixed"),
        pytest.param(None, [subset_json("a")], Allocator.SPECIFIC, id="nothing-set"),
        pytest.param(
            None, [subset_json("a"), subset_json("b", max_replicas=1)], Allocator.MIN_MAX,
            id="one-maximum",
        ),
        pytest.param(
            None, [subset_json("a", min_replicas=None)], Allocator.SPECIFIC,
            id="null-minimum-is-unset",
        ),
        pytest.param({"type": "Fixed"}, [subset_json("a", min_replicas=1)], Allocator.MIN_MAX,
                     id="fixed-strategy"),
        pytest.param(ADAPTIVE, [subset_json("a")], Allocator.ADAPTIVE, id="adaptive"),
        pytest.param(
            {"type": "Adaptive", "adaptive": {"reserveUnschedulablePods": False}},
            [subset_json("a")], Allocator.ADAPTIVE, id="adaptive-without-reservation",
        ),
        pytest.param(RESERVATION, [subset_json("a")], Allocator.RESERVATION, id="reservation"),
        pytest.param(
            {"type": "Fixed", "adaptive": {"reserveUnschedulablePods": True}},
            [subset_json("a", max_replicas=1)], Allocator.MIN_MAX,
            id="reservation-needs-adaptive",
        ),
    ],
)  # fmt: skip
def test_the_allocator_is_chosen_from_strategy_then_bounds(
    strategy: dict[str, Any] | None, subsets: list[dict[str, Any]], expected: Allocator
) -> None:
    assert allocator_for(ud(subsets, replicas=3, strategy=strategy)) is expected
