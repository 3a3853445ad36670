"""Deletion costs: Kruise's exact values, per version, fake bucket, minReplicas protection."""

from __future__ import annotations

from collections import Counter
from typing import Any, NamedTuple

from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.deletion_cost import (
    annotation_updates,
    deletion_costs,
    subset_costs,
)
from spreadbus.features.workloadspread.core.model import FAKE_SUBSET, WorkloadSpread, from_object
from tests.workloadspread.core.builders import pod, subset, workloadspread

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


def _next_victim_bucket(
    buckets: dict[str, list[JSON]],
    names: list[str],
    *,
    limits: dict[str, int | None],
    minimums: dict[str, int],
    idx: dict[str, int],
) -> str:
    """Where scale-in must take its next pod (reference section 5, with minReplicas protection).

    Pods in no subset first; then the overflow beyond a limit, from the highest ``idx``; then the
    pods above a minimum, from the highest ``idx``; then the rest, from the highest ``idx``.
    """
    if buckets[FAKE_SUBSET]:
        return FAKE_SUBSET
    sizes = {name: len(buckets[name]) for name in names}
    over_limit = [n for n in names if (limit := limits[n]) is not None and sizes[n] > limit]
    above_min = [n for n in names if sizes[n] > minimums[n]]
    for candidates in (over_limit, above_min, [n for n in names if sizes[n]]):
        if candidates:
            return max(candidates, key=idx.__getitem__)
    raise AssertionError("nothing left to scale in")


def _scale_in_checking_each_victim(
    ws: WorkloadSpread,
    pods: dict[str, dict[str, list[JSON]]],
    version: str,
    *,
    replicas: int,
    latest: str,
    limits: dict[str, int | None],
    minimums: dict[str, int],
) -> None:
    """Remove ``version``'s pods one at a time, lowest cost first, as its ReplicaSet would."""
    names = [s.name for s in ws.subsets]
    n = len(names)
    # Positions count backwards for older versions: their pods leave the first subsets first.
    idx = {name: i if version == latest else n - 1 - i for i, name in enumerate(names)}
    buckets = pods[version]
    while any(buckets.values()):
        costs = deletion_costs(ws, pods, replicas=replicas, latest_version=latest)
        victim_bucket, victim = min(
            ((b, p) for b, members in buckets.items() for p in members),
            key=lambda bp: costs[pod_state.key(bp[1])],
        )
        expected = _next_victim_bucket(buckets, names, limits=limits, minimums=minimums, idx=idx)
        assert victim_bucket == expected, (version, {b: len(m) for b, m in buckets.items()})
        buckets[victim_bucket].remove(victim)


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
    ws = from_object(
        workloadspread(
            *(subset(name, m, minReplicas=k) for name, (m, k) in zip(names, spec, strict=True))
        )
    )
    buckets = {name: _pods(name, c) for name, c in zip(names, counts, strict=True)}
    buckets[FAKE_SUBSET] = _pods("fake", fake)
    _scale_in_checking_each_victim(
        ws,
        {"v": buckets},
        "v",
        replicas=10,
        latest="v",
        limits={name: m for name, (m, _) in zip(names, spec, strict=True)},
        minimums={name: k for name, (_, k) in zip(names, spec, strict=True)},
    )


class RolloutLayout(NamedTuple):
    """Subsets (maxReplicas, minReplicas), workload replicas, and pods per version and subset."""

    spec: list[tuple[int | str | None, int]]
    replicas: int
    counts: dict[str, list[int]]  # version -> pods per subset
    fake: dict[str, int]  # version -> pods in no subset
    latest: str  # may name a version that has no pods yet


def _percent(value: int) -> str:
    return f"{value}%"


@st.composite
def rollout_layouts(draw: st.DrawFn) -> RolloutLayout:
    n = draw(st.integers(1, 4))
    limit: st.SearchStrategy[int | str] = (
        st.integers(0, 100).map(_percent) if draw(st.booleans()) else st.integers(0, 5)
    )
    spec: list[tuple[int | str | None, int]] = []
    for _ in range(n):
        maximum: int | str | None = draw(st.one_of(st.none(), limit))
        spec.append((maximum, draw(st.integers(0, maximum if isinstance(maximum, int) else 5))))
    versions = [f"v{i}" for i in range(draw(st.integers(1, 3)))]
    counts = {v: [draw(st.integers(0, 5)) for _ in range(n)] for v in versions}
    fake = {v: draw(st.integers(0, 2)) for v in versions}
    latest = draw(st.sampled_from([*versions, "v-next"]))
    return RolloutLayout(spec, draw(st.integers(0, 30)), counts, fake, latest)


def _scaled_limit(maximum: int | str | None, replicas: int) -> int | None:
    """maxReplicas against the workload's replicas, percentages rounded up."""
    if isinstance(maximum, str):
        return -(-int(maximum.removesuffix("%")) * replicas // 100)
    return maximum


@settings(max_examples=300, deadline=None)
@given(rollout_layouts())
def test_scale_in_of_each_version_follows_the_subset_rules_during_a_rollout(
    layout: RolloutLayout,
) -> None:
    names = [f"s{i}" for i in range(len(layout.spec))]
    ws = from_object(
        workloadspread(
            *(
                subset(name, m, minReplicas=k)
                for name, (m, k) in zip(names, layout.spec, strict=True)
            )
        )
    )
    limits = {
        name: _scaled_limit(m, layout.replicas)
        for name, (m, _) in zip(names, layout.spec, strict=True)
    }
    # A minimum is capped by the scaled limit, which a percentage can bring below it.
    minimums = {
        name: k if (limit := limits[name]) is None else min(k, limit)
        for name, (_, k) in zip(names, layout.spec, strict=True)
    }
    pods = {
        version: {
            **{name: _pods(f"{version}-{name}", c) for name, c in zip(names, counts, strict=True)},
            FAKE_SUBSET: _pods(f"{version}-fake", layout.fake[version]),
        }
        for version, counts in layout.counts.items()
    }
    # Each version (one ReplicaSet of a rollout) scales in on its own while the other versions'
    # pods stay: their presence must not change the order within the version.
    for version in layout.counts:
        _scale_in_checking_each_victim(
            ws,
            pods,
            version,
            replicas=layout.replicas,
            latest=layout.latest,
            limits=limits,
            minimums=minimums,
        )
