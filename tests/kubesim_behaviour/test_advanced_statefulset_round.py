"""One round of an Advanced StatefulSet, decided from a snapshot (no cluster needed)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesim.behaviour.advanced_statefulset_plan import (
    Member,
    Shape,
    ordinal_slots,
    plan_round,
    replica_status,
    reserved_ordinals,
    shape_of,
    stale_revisions,
)

OLD, NEW = "set-old", "set-new"


def up(ordinal: int, revision: str = NEW) -> Member:
    return Member(ordinal, revision, "Running", ready=True, available=True)


def starting(ordinal: int, revision: str = NEW) -> Member:
    return Member(ordinal, revision, "Pending")


def test_reserved_ordinals_take_numbers_and_inclusive_ranges() -> None:
    assert reserved_ordinals([1, "3-5"]) == {1, 3, 4, 5}
    assert reserved_ordinals(None) == frozenset()


def test_one_bad_range_voids_every_reserved_ordinal_as_kruise_parses_them() -> None:
    assert reserved_ordinals([1, "5-3"]) == frozenset()
    assert reserved_ordinals([2, "x"]) == frozenset()


def test_the_wanted_ordinals_skip_the_reserved_ones() -> None:
    assert ordinal_slots(4, frozenset({1, 3})) == [0, 2, 4, 5]
    assert ordinal_slots(0, frozenset({0})) == []


def test_limits_scale_against_replicas_rounding_down_and_never_below_one() -> None:
    spec = {
        "replicas": 12,
        "podManagementPolicy": "Parallel",
        "scaleStrategy": {"maxUnavailable": "25%"},
        "updateStrategy": {"rollingUpdate": {"maxUnavailable": "10%", "partition": 2}},
    }
    shape = shape_of(spec, OLD, NEW)
    assert (shape.scale_max_unavailable, shape.update_max_unavailable) == (3, 1)
    assert (shape.parallel, shape.rolling, shape.partition) == (True, True, 2)
    assert shape_of({"replicas": 3}, OLD, NEW).scale_max_unavailable is None
    assert (
        shape_of({"scaleStrategy": {"maxUnavailable": "1%"}}, OLD, NEW).scale_max_unavailable == 1
    )


def test_ordered_ready_creates_the_lowest_missing_ordinal_only() -> None:
    shape = Shape(replicas=3, current_revision=NEW, update_revision=NEW)
    assert plan_round(shape, {}).create == [(0, NEW)]
    assert plan_round(shape, {0: up(0)}).create == [(1, NEW)]


def test_ordered_ready_waits_for_a_pod_that_is_not_available() -> None:
    shape = Shape(replicas=3, current_revision=NEW, update_revision=NEW)
    assert plan_round(shape, {0: starting(0)}).create == []


def test_new_pods_below_the_partition_are_created_at_the_current_revision() -> None:
    shape = Shape(replicas=4, current_revision=OLD, update_revision=NEW, parallel=True, partition=2)
    assert plan_round(shape, {}).create == [(0, OLD), (1, OLD), (2, NEW), (3, NEW)]


def test_ordered_ready_scales_down_from_the_highest_ordinal_one_at_a_time() -> None:
    shape = Shape(replicas=1, current_revision=NEW, update_revision=NEW)
    assert plan_round(shape, {i: up(i) for i in range(3)}).delete == [2]


def test_a_rolling_update_replaces_the_highest_stale_ordinal_at_or_above_the_partition() -> None:
    shape = Shape(replicas=5, current_revision=OLD, update_revision=NEW, partition=3)
    pods = {i: up(i, OLD) for i in range(5)}
    assert plan_round(shape, pods).delete == [4]
    pods[4] = up(4)
    assert plan_round(shape, pods).delete == [3]
    pods[3] = up(3)
    assert plan_round(shape, pods).delete == []


def test_a_rolling_update_replaces_up_to_max_unavailable_pods_at_once() -> None:
    shape = Shape(
        replicas=5,
        current_revision=OLD,
        update_revision=NEW,
        parallel=True,
        update_max_unavailable=2,
    )
    pods = {i: up(i, OLD) for i in range(5)}
    assert plan_round(shape, pods).delete == [4, 3]


def test_paused_and_on_delete_sets_replace_nothing() -> None:
    pods = {i: up(i, OLD) for i in range(3)}
    shape = Shape(replicas=3, current_revision=OLD, update_revision=NEW)
    assert plan_round(replace(shape, paused=True), pods).delete == []
    assert plan_round(replace(shape, rolling=False), pods).delete == []


def test_a_finished_rolling_update_makes_the_update_revision_current() -> None:
    shape = Shape(replicas=2, current_revision=OLD, update_revision=NEW)
    status = replica_status([up(0), up(1)], shape)
    assert (status["currentRevision"], status["currentReplicas"]) == (NEW, 2)
    partial = replica_status([up(0, OLD), up(1)], shape)
    assert (partial["currentRevision"], partial["currentReplicas"]) == (OLD, 1)
    assert (partial["updatedReplicas"], partial["updatedReadyReplicas"]) == (1, 1)


def test_history_beyond_the_limit_goes_oldest_first_and_live_revisions_stay() -> None:
    revisions = {"r1": 1, "r2": 2, "r3": 3, "r4": 4, "r5": 5}
    assert stale_revisions(revisions, {"r5", "r1"}, 2) == ["r2"]
    assert stale_revisions(revisions, {"r5"}, 10) == []
    assert stale_revisions(revisions, {"r5"}, 0) == ["r1", "r2", "r3", "r4"]


# -- the scale-up limit ----------------------------------------------------------------------

member_states = st.sampled_from(["up", "starting", "failed", "terminating"])


def member(ordinal: int, state: str) -> Member:
    return {
        "up": up(ordinal),
        "starting": starting(ordinal),
        "failed": Member(ordinal, NEW, "Failed"),
        "terminating": Member(ordinal, NEW, "Running", True, True, terminating=True),
    }[state]


def unavailable_after(pods: dict[int, Member], created: int) -> int:
    return sum(1 for p in pods.values() if not (p.available and not p.terminating)) + created


@settings(max_examples=200, deadline=None)
@given(
    replicas=st.integers(min_value=1, max_value=30),
    limit=st.integers(min_value=1, max_value=10),
    states=st.lists(member_states, max_size=30),
)
def test_a_rate_limited_scale_up_never_adds_unavailable_pods_beyond_the_limit(
    replicas: int, limit: int, states: list[str]
) -> None:
    shape = Shape(
        replicas=replicas,
        current_revision=NEW,
        update_revision=NEW,
        parallel=True,
        scale_max_unavailable=limit,
    )
    pods = {i: member(i, s) for i, s in enumerate(states[:replicas])}
    plan = plan_round(shape, pods)
    before = unavailable_after(pods, 0)
    assert unavailable_after(pods, len(plan.create)) <= max(limit, before)
    if before < limit and len(pods) < replicas:
        assert plan.create, "a round with room to spare makes progress"


@settings(max_examples=60, deadline=None)
@given(
    replicas=st.integers(min_value=1, max_value=25),
    limit=st.integers(min_value=1, max_value=6),
    ready_each_round=st.lists(st.sets(st.integers(min_value=0, max_value=24)), max_size=60),
)
def test_rounds_of_a_rate_limited_scale_up_reach_every_replica_within_the_limit(
    replicas: int, limit: int, ready_each_round: list[set[int]]
) -> None:
    shape = Shape(
        replicas=replicas,
        current_revision=NEW,
        update_revision=NEW,
        parallel=True,
        scale_max_unavailable=limit,
    )
    pods: dict[int, Member] = {}
    rounds = iter(ready_each_round)
    for _ in range(replicas * 2 + 60):
        for ordinal, revision in plan_round(shape, pods).create:
            pods[ordinal] = starting(ordinal, revision)
        assert unavailable_after(pods, 0) <= limit
        # between rounds some starting pods turn ready (all of them once the script runs out)
        turned = next(rounds, None)
        for ordinal, pod in list(pods.items()):
            if not pod.available and (turned is None or ordinal in turned):
                pods[ordinal] = up(ordinal)
        if len(pods) == replicas and unavailable_after(pods, 0) == 0:
            break
    assert sorted(pods) == list(range(replicas))


@settings(max_examples=200, deadline=None)
@given(
    replicas=st.integers(min_value=1, max_value=12),
    partition=st.integers(min_value=0, max_value=14),
    most=st.integers(min_value=1, max_value=5),
    stale=st.lists(st.booleans(), min_size=12, max_size=12),
    parallel=st.booleans(),
)
def test_a_rolling_update_never_touches_ordinals_below_the_partition_nor_exceeds_its_limit(
    replicas: int, partition: int, most: int, stale: list[bool], parallel: bool
) -> None:
    shape = Shape(
        replicas=replicas,
        current_revision=OLD,
        update_revision=NEW,
        parallel=parallel,
        partition=partition,
        update_max_unavailable=most,
    )
    pods = {i: up(i, OLD if stale[i] else NEW) for i in range(replicas)}
    deleted = plan_round(shape, pods).delete
    assert all(o >= partition and pods[o].revision == OLD for o in deleted)
    assert len(deleted) <= most
    assert deleted == sorted(deleted, reverse=True), "highest ordinal first"
    if any(stale[o] for o in range(partition, replicas)):
        assert deleted, "a stale pod at or above the partition is replaced"
