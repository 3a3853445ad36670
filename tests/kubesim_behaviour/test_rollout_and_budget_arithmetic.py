"""Deployment rollout arithmetic and PodDisruptionBudget status, as upstream computes them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesim.behaviour.disruption_budget import budget_status
from kubesim.behaviour.rollout import (
    ReplicaSetSize,
    new_replicaset_target,
    old_scale_down_budget,
    proportional_targets,
    resolve_fenceposts,
)
from kubesim.behaviour.scaled_value import ScaledValueError, scaled_value


@pytest.mark.parametrize(
    ("surge", "unavailable", "desired", "expected"),
    [
        ("25%", "25%", 10, (3, 2)),
        (1, 0, 10, (1, 0)),
        (0, 0, 10, (0, 1)),
        ("0%", "0%", 3, (0, 1)),
        ("50%", 2, 5, (3, 2)),
        (None, None, 4, (0, 1)),
    ],
)
def test_surge_rounds_up_and_unavailable_rounds_down(
    surge: int | str | None, unavailable: int | str | None, desired: int, expected: tuple[int, int]
) -> None:
    assert resolve_fenceposts(surge, unavailable, desired) == expected


def test_bad_intstr_is_an_error_not_a_crash() -> None:
    with pytest.raises(ScaledValueError):
        scaled_value("ten", 10, round_up=True)
    with pytest.raises(ScaledValueError):
        scaled_value("x%", 10, round_up=True)


def test_the_new_replicaset_grows_only_within_surge() -> None:
    assert new_replicaset_target(desired=10, surge=3, total_current=10, new_current=0) == 3
    assert new_replicaset_target(desired=10, surge=3, total_current=13, new_current=3) == 3
    assert new_replicaset_target(desired=10, surge=3, total_current=11, new_current=8) == 10


def test_old_replicasets_shrink_only_within_unavailability() -> None:
    # 10 old ready pods, 3 new not yet available, 2 may be unavailable
    assert (
        old_scale_down_budget(
            desired=10, unavailable=2, total_current=13, new_replicas=3, new_available=0
        )
        == 2
    )
    assert (
        old_scale_down_budget(
            desired=10, unavailable=0, total_current=11, new_replicas=1, new_available=1
        )
        == 1
    )


def test_resizing_mid_rollout_shares_the_change_in_proportion() -> None:
    sets = [
        ReplicaSetSize("old", 8, 12, "2026-01-01T00:00:00Z"),
        ReplicaSetSize("new", 4, 12, "2026-01-02T00:00:00Z"),
    ]
    targets = proportional_targets(sets, desired=20, surge=2, status_replicas=12)
    assert targets == {"old": 15, "new": 7}
    assert sum(targets.values()) == 22
    down = proportional_targets(sets, desired=5, surge=1, status_replicas=12)
    assert sum(down.values()) == 6
    assert down["old"] >= down["new"]


@given(
    st.lists(st.integers(0, 50), min_size=1, max_size=4),
    st.integers(0, 100),
    st.integers(0, 5),
)
def test_proportional_scaling_grows_to_the_allowed_total_and_never_undershoots_shrinking(
    sizes: list[int], desired: int, surge: int
) -> None:
    total = sum(sizes)
    sets = [
        ReplicaSetSize(f"rs{i}", size, total + surge, f"2026-01-0{i + 1}T00:00:00Z")
        for i, size in enumerate(sizes)
    ]
    targets = proportional_targets(sets, desired=desired, surge=surge, status_replicas=total)
    assert all(v >= 0 for v in targets.values())
    allowed = desired + surge
    if total and allowed >= total:
        assert sum(targets.values()) == allowed
    elif total:
        # upstream clamps the largest set's leftover at zero, so shrinking may stop short;
        # the rolling update then removes the rest within its budget
        assert allowed <= sum(targets.values()) <= total
        assert all(targets[rs.name] <= rs.replicas for rs in sets)


@pytest.mark.parametrize(
    ("spec", "pods", "scale", "healthy", "expected"),
    [
        ({"minAvailable": 2}, 3, 3, 3, (3, 2, 3, 1)),
        ({"minAvailable": 3}, 3, 3, 3, (3, 3, 3, 0)),
        ({"minAvailable": "50%"}, 3, 4, 3, (4, 2, 3, 1)),
        ({"maxUnavailable": 1}, 3, 3, 3, (3, 2, 3, 1)),
        ({"maxUnavailable": 1}, 3, 3, 2, (3, 2, 2, 0)),
        ({"maxUnavailable": "30%"}, 10, 10, 10, (10, 7, 10, 3)),
        ({"maxUnavailable": 0}, 0, 0, 0, (0, 0, 0, 0)),
        ({"minAvailable": 0}, 0, 0, 0, (0, 0, 0, 0)),
    ],
)
def test_budget_status_matches_the_disruption_controller(
    spec: dict[str, int | str],
    pods: int,
    scale: int,
    healthy: int,
    expected: tuple[int, int, int, int],
) -> None:
    status = budget_status(spec, pod_count=pods, controller_scale=scale, current_healthy=healthy)
    assert (
        status.expected_pods,
        status.desired_healthy,
        status.current_healthy,
        status.disruptions_allowed,
    ) == expected
