"""Rebalancing steps: destinations grow first, sources shrink only against gained ready pods."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.uniteddeployment.core.allocation import SubsetWorkload
from spreadbus.features.uniteddeployment.core.rebalance import (
    fresh_allocation,
    motion_bound,
    pending_request,
    rebalance_step,
)
from tests.uniteddeployment.builders import elastic_subsets, subset_json, ud


def w(replicas: int, ready: int | None = None) -> SubsetWorkload:
    return SubsetWorkload(replicas=replicas, ready_replicas=replicas if ready is None else ready)


def test_pending_request() -> None:
    assert pending_request(None) is None
    assert pending_request({}) is None
    assert pending_request({"rebalance.spreadbus.io/request": "u1"}) == "u1"
    assert (
        pending_request(
            {"rebalance.spreadbus.io/request": "u1", "rebalance.spreadbus.io/handled": "u1"}
        )
        is None
    )
    assert (
        pending_request(
            {"rebalance.spreadbus.io/request": "u2", "rebalance.spreadbus.io/handled": "u1"}
        )
        == "u2"
    )


@pytest.mark.parametrize(("total", "bound"), [(0, 1), (3, 1), (4, 1), (8, 2), (10, 2), (100, 25)])
def test_motion_bound(total: int, bound: int) -> None:
    assert motion_bound(total) == bound


def test_fresh_allocation_ignores_where_pods_run_now() -> None:
    # Adaptive: subset-1 kept ready pods that moved there; fresh fills subset-0 to its max first.
    adaptive = ud(
        elastic_subsets([None, None], [3, None]),
        replicas=5,
        strategy={"type": "Adaptive"},
    )
    assert fresh_allocation(adaptive) == {"subset-0": 3, "subset-1": 2}
    # Specific: the remainder goes by name, as for a UD created now.
    specific = ud([subset_json("a"), subset_json("b")], replicas=3)
    assert fresh_allocation(specific) == {"a": 1, "b": 2}


def test_walks_back_in_safe_steps() -> None:
    fresh = {"a": 6, "b": 4}
    first = rebalance_step(fresh, {"a": w(2), "b": w(8)}, total=10)
    assert first.allocation == {"a": 4, "b": 8}  # grow first, 2 in motion
    assert first.in_motion == 2
    assert not first.done
    waiting = rebalance_step(fresh, {"a": w(4, 2), "b": w(8)}, total=10)
    assert waiting.allocation == {"a": 4, "b": 8}  # nothing new is ready: hold
    assert not waiting.done
    second = rebalance_step(fresh, {"a": w(4), "b": w(8)}, total=10)
    assert second.allocation == {"a": 6, "b": 6}
    third = rebalance_step(fresh, {"a": w(6), "b": w(6)}, total=10)
    assert third.allocation == {"a": 6, "b": 4}
    assert third.done
    assert third.reached
    assert third.in_motion == 0


def test_not_ready_source_pods_go_at_once() -> None:
    step = rebalance_step({"a": 5, "b": 5}, {"a": w(5), "b": w(8, 5)}, total=10)
    assert step.allocation == {"a": 5, "b": 5}
    assert step.done


def test_statefulset_sources_pay_every_removal_from_spare_ready_pods() -> None:
    step = rebalance_step(
        {"a": 5, "b": 5}, {"a": w(5), "b": w(8, 5)}, total=10, removes_unready_first=False
    )
    assert step.allocation == {"a": 5, "b": 8}
    assert not step.done  # b's not-ready pods may become ready and pay for the move
    all_ready = rebalance_step(
        {"a": 5, "b": 5}, {"a": w(5), "b": w(8, 8)}, total=10, removes_unready_first=False
    )
    assert all_ready.allocation == {"a": 5, "b": 5}


def test_missing_workloads_are_destinations() -> None:
    step = rebalance_step({"a": 2, "b": 2}, {}, total=4)
    assert step.allocation == {"a": 2, "b": 2}  # nothing runs: plain scale-up
    assert step.done


def test_already_there_is_done() -> None:
    step = rebalance_step({"a": 3, "b": 1}, {"a": w(3, 0), "b": w(1)}, total=4)
    assert step.allocation == {"a": 3, "b": 1}
    assert step.done


# --- simulation ------------------------------------------------------------------------------


@dataclass
class Sim:
    spec: dict[str, int]
    ready: dict[str, int]

    def workloads(self) -> dict[str, SubsetWorkload]:
        return {
            n: SubsetWorkload(replicas=self.spec[n], ready_replicas=self.ready[n])
            for n in self.spec
        }

    def apply(self, allocation: dict[str, int], unready_first: bool) -> None:
        for name, target in allocation.items():
            drop = self.spec[name] - target
            if drop > 0:
                unready = self.spec[name] - self.ready[name]
                ready_lost = (
                    max(0, drop - unready) if unready_first else min(drop, self.ready[name])
                )
                self.ready[name] -= ready_lost
            self.spec[name] = target

    def available(self, total: int) -> int:
        return min(sum(self.ready.values()), total)


names = ["s0", "s1", "s2", "s3"]


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    count = draw(st.integers(min_value=1, max_value=4))
    chosen = names[:count]
    total = draw(st.integers(min_value=0, max_value=40))
    cuts = sorted(draw(st.lists(st.integers(0, total), min_size=count - 1, max_size=count - 1)))
    bounds = [0, *cuts, total]
    fresh = {n: bounds[i + 1] - bounds[i] for i, n in enumerate(chosen)}
    cuts = sorted(draw(st.lists(st.integers(0, total), min_size=count - 1, max_size=count - 1)))
    bounds = [0, *cuts, total]
    spec = {n: bounds[i + 1] - bounds[i] for i, n in enumerate(chosen)}
    ready = {n: draw(st.integers(0, spec[n])) for n in chosen}
    return fresh, spec, ready


@settings(max_examples=150, deadline=None)
@given(scenarios(), st.booleans(), st.randoms(use_true_random=False))
def test_simulated_rebalance_is_safe_bounded_and_converges(
    scenario: tuple[dict[str, int], dict[str, int], dict[str, int]],
    unready_first: bool,
    rng: object,
) -> None:
    import random

    assert isinstance(rng, random.Random)
    fresh, spec, ready = scenario
    total = sum(fresh.values())
    bound = motion_bound(total)
    sim = Sim(dict(spec), dict(ready))
    available = sim.available(total)
    for round_ in range(400):
        before = dict(sim.spec)
        step = rebalance_step(
            fresh, sim.workloads(), total=total, removes_unready_first=unready_first
        )
        for name in fresh:
            low, high = sorted((before[name], fresh[name]))
            assert low <= step.allocation[name] <= high
        assert step.in_motion <= max(bound, sum(before.values()) - total)
        assert step.in_motion == max(0, sum(step.allocation.values()) - total)
        sim.apply(step.allocation, unready_first)
        assert sim.available(total) >= available
        available = sim.available(total)
        if step.done:
            break
        # some not-ready pods become ready (every pod, now and then); nothing ready fails
        for name in fresh:
            pending = sim.spec[name] - sim.ready[name]
            sim.ready[name] += pending if round_ % 5 == 4 else rng.randint(0, pending)
        assert sim.available(total) >= available
        available = sim.available(total)
    else:
        pytest.fail("rebalance did not finish")
    # every pod becomes ready sooner or later here, so done means the fresh placement
    assert step.allocation == fresh


def test_frozen_destinations_do_not_grow_and_are_not_waited_for() -> None:
    fresh = {"a": 6, "b": 4}
    step = rebalance_step(fresh, {"a": w(4, 2), "b": w(8)}, total=10, frozen={"a"})
    assert step.allocation == {"a": 4, "b": 8}
    assert step.done  # nothing can move: a cannot take pods, and b has no spare ready pod
    assert not step.reached
    free = rebalance_step(fresh, {"a": w(4, 2), "b": w(8)}, total=10)
    assert not free.done  # a's pending pods may still become ready


def test_disruption_allowance_caps_ready_removals() -> None:
    fresh = {"a": 6, "b": 4}
    capped = rebalance_step(fresh, {"a": w(6), "b": w(8)}, total=10, disruptions_allowed=1)
    assert capped.allocation == {"a": 6, "b": 7}
    none_allowed = rebalance_step(fresh, {"a": w(6), "b": w(8, 6)}, total=10, disruptions_allowed=0)
    assert none_allowed.allocation == {"a": 6, "b": 6}  # not-ready pods still go
