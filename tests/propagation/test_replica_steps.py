"""Moving replicas within a budget: the steps a rebalance or a failover takes, and the property
that no step takes the workload's summed available replicas below the budget's minimum."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.propagation.core.replica_steps import Copy, cost, settled, step

NAMES = ["member1", "member2", "member3"]


def test_without_a_budget_the_schedule_applies_at_once() -> None:
    copies = {"member2": Copy(replicas=4, available=4)}
    assert step(copies, {"member1": 2, "member2": 2}, None) == {"member1": 2, "member2": 2}
    assert step({"member1": Copy(2, 2)}, {"member2": 4}, None) == {"member1": 0, "member2": 4}


def test_a_rebalance_scales_the_old_copy_down_as_the_new_one_becomes_available() -> None:
    """Scenario 1's rebalance: 4 in member2 spread 2:2, at most one unavailable (minimum 3)."""
    targets = {"member1": 2, "member2": 2}
    # The new copy is made at once; the old one gives up the one replica the budget spares.
    assert step({"member2": Copy(4, 4)}, targets, 3) == {"member1": 2, "member2": 3}
    # The new pods are not available yet: nothing more goes.
    assert step({"member1": Copy(2, 0), "member2": Copy(3, 3)}, targets, 3) == {
        "member1": 2, "member2": 3}
    # One is: one more goes.
    assert step({"member1": Copy(2, 1), "member2": Copy(3, 3)}, targets, 3) == {
        "member1": 2, "member2": 2}


def test_a_failover_deletes_a_copy_only_once_its_replacements_are_available() -> None:
    targets = {"member2": 4}
    assert step({"member1": Copy(2, 2), "member2": Copy(2, 2)}, targets, 4) == {
        "member1": 2, "member2": 4}
    assert step({"member1": Copy(2, 2), "member2": Copy(4, 3)}, targets, 4) == {
        "member1": 1, "member2": 4}
    assert step({"member1": Copy(1, 1), "member2": Copy(4, 4)}, targets, 4) == {
        "member1": 0, "member2": 4}


def test_replicas_that_are_not_available_go_first_and_cost_nothing() -> None:
    # member1 runs 3, one available: two can go with no spare at all.
    assert step({"member1": Copy(3, 1), "member2": Copy(2, 2)}, {"member2": 4}, 3) == {
        "member1": 1, "member2": 4}
    assert cost(Copy(3, 1), 1) == 0
    assert cost(Copy(3, 1), 0) == 1


def test_where_any_replica_may_go_each_costs_one() -> None:
    """A StatefulSet removes its highest ordinals, ready or not."""
    copies = {"member1": Copy(3, 1, unavailable_first=False), "member2": Copy(2, 2)}
    # No spare: a ReplicaSet would drop its two unavailable replicas for free; here any of the
    # three may be the available one.
    assert step(copies, {"member2": 3}, 3) == {"member1": 3, "member2": 3}
    assert step({"member1": Copy(3, 1), "member2": Copy(2, 2)}, {"member2": 3}, 3) == {
        "member1": 1, "member2": 3}
    assert cost(Copy(3, 1, unavailable_first=False), 2) == 1
    assert cost(Copy(3, 1, unavailable_first=False), 0) == 1
    # Two spare, three available in the copy: two go; once every available one is paid for,
    # all go.
    assert step({"member1": Copy(4, 3, unavailable_first=False), "member2": Copy(3, 3)},
                {"member2": 4}, 4) == {"member1": 2, "member2": 4}
    assert step({"member1": Copy(3, 1, unavailable_first=False), "member2": Copy(3, 3)},
                {"member2": 3}, 3) == {"member1": 0, "member2": 3}


def test_a_cluster_that_is_not_ready_counts_nothing_and_its_copy_goes() -> None:
    """Its copy's pods are not known to serve: the budget counts them as gone already."""
    assert step({"member1": Copy(2, 0), "member2": Copy(2, 2)}, {"member2": 4}, 3) == {
        "member1": 0, "member2": 4}


def test_the_minimum_never_holds_more_than_the_schedule_asks_for() -> None:
    """The workload scaled from 4 to 2 under minAvailable 3: the budget cannot keep 3."""
    assert step({"member1": Copy(4, 4)}, {"member1": 2}, 3) == {"member1": 2}


def test_an_available_count_above_the_replicas_is_not_counted() -> None:
    """A status not yet updated after a scale-down: the pods beyond spec.replicas are going."""
    assert step({"member1": Copy(2, 4), "member2": Copy(2, 0)}, {"member2": 4}, 2) == {
        "member1": 2, "member2": 4}


# -- properties ---------------------------------------------------------------------------------

states = st.dictionaries(
    st.sampled_from(NAMES),
    st.integers(0, 8).flatmap(lambda r: st.tuples(st.just(r), st.integers(0, r))),
    min_size=1)
target_maps = st.dictionaries(st.sampled_from(NAMES), st.integers(0, 8), min_size=1)


Pods = dict[str, tuple[int, int]]
"""Cluster -> (replicas, available replicas)."""


def _applied(pods: Pods, wanted: dict[str, int], any_first: bool = False) -> Pods:
    """The copies after the workload controllers carried a step out: a scale-down removes the
    pods that are not available first (``any_first``: the available ones first, the worst a
    StatefulSet's ordinals can do); a scale-up adds pods not available yet."""
    out: dict[str, tuple[int, int]] = {}
    for name, replicas in wanted.items():
        have, available = pods.get(name, (0, 0))
        if replicas <= have:
            removed = have - replicas
            available -= (min(removed, available) if any_first
                          else max(0, removed - (have - available)))
        out[name] = (replicas, available)
    return out


def _copies(pods: dict[str, tuple[int, int]], any_first: bool = False) -> dict[str, Copy]:
    return {n: Copy(replicas=r, available=a, unavailable_first=not any_first)
            for n, (r, a) in pods.items()}


@settings(max_examples=200, deadline=None)
@given(start=states, targets=target_maps, minimum=st.integers(0, 10),
       allowed=st.none() | st.integers(-2, 10), any_first=st.booleans(),
       became=st.lists(st.dictionaries(st.sampled_from(NAMES), st.integers(0, 8)), max_size=12))
def test_no_step_takes_the_summed_available_replicas_below_the_minimum(
        start: Pods, targets: dict[str, int], minimum: int, allowed: int | None,
        any_first: bool, became: list[dict[str, int]]) -> None:
    """Whatever the pods do in between (any of them becoming available at any time), carrying
    out a step never leaves fewer available replicas than the budget's minimum (capped at the
    replicas scheduled), or than there were before it when there were fewer already; whatever
    the budget's status allows."""
    floor = min(minimum, sum(targets.values()))
    pods = dict(start)
    for ready in [{}, *became]:
        pods = {n: (r, min(r, a + ready.get(n, 0))) for n, (r, a) in pods.items()}
        before = sum(a for _, a in pods.values())
        wanted = step(_copies(pods, any_first), targets, minimum, allowed)
        pods = _applied(pods, wanted, any_first)
        after = sum(a for _, a in pods.values())
        assert after >= min(before, floor), (pods, wanted, before, floor)
        # A copy never goes below its share.
        assert all(r >= targets.get(n, 0) for n, (r, _) in pods.items())


@settings(max_examples=150, deadline=None)
@given(start=states, targets=target_maps, minimum=st.integers(0, 10), any_first=st.booleans())
def test_once_new_pods_become_available_the_steps_reach_the_schedule(
        start: dict[str, tuple[int, int]], targets: dict[str, int], minimum: int,
        any_first: bool) -> None:
    """Every step moves on as soon as the pods it made are available: the schedule is reached
    in at most two steps per cluster."""
    pods = dict(start)
    for _ in range(2 * len(NAMES) + 1):
        wanted = step(_copies(pods, any_first), targets, minimum)
        pods = {n: (r, r) for n, (r, _) in _applied(pods, wanted, any_first).items()}
        if settled(_copies(pods), targets):
            break
    assert settled(_copies(pods), targets), (pods, targets, minimum)


@settings(max_examples=200, deadline=None)
@given(start=states, targets=target_maps)
def test_without_a_budget_one_step_is_the_schedule(start: dict[str, tuple[int, int]],
                                                   targets: dict[str, int]) -> None:
    wanted = step(_copies(start), targets, None)
    assert settled(_copies(_applied(start, wanted)), targets)


def test_the_status_s_allowance_caps_the_spare() -> None:
    """What the members' webhooks let go counts in the host budget's status."""
    copies = {"member1": Copy(2, 2), "member2": Copy(4, 4)}
    assert step(copies, {"member2": 4}, 3, allowed=1) == {"member1": 1, "member2": 4}
    assert step(copies, {"member2": 4}, 3, allowed=0) == {"member1": 2, "member2": 4}
    assert step(copies, {"member2": 4}, 3, allowed=None) == {"member1": 0, "member2": 4}
    # A minimum above the schedule: neither it nor the status computed from it is kept.
    assert step({"member1": Copy(4, 4)}, {"member1": 2}, 3, allowed=0) == {"member1": 2}
