"""Properties of the division: every replica is placed, Steady scale-up never takes a replica
away, and neither the candidates' nor Webster's input order changes the answer."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.propagation.core.cluster import Cluster
from spreadbus.features.propagation.core.division import (
    Candidate,
    Mode,
    Strategy,
    Target,
    Unschedulable,
    assign,
)
from spreadbus.features.propagation.core.webster import allocate
from spreadbus.features.propagation.planning.schedule import Binding, schedule

NAMES = [f"member{i}" for i in range(1, 7)]
EARLIER = datetime(2024, 5, 22, 11, 0, tzinfo=UTC)
NOW = datetime(2024, 5, 22, 11, 36, 10, tzinfo=UTC)
DIVIDED = [Strategy.STATIC_WEIGHT, Strategy.DYNAMIC_WEIGHT, Strategy.AGGREGATED]

clusters = st.lists(
    st.builds(Candidate, name=st.sampled_from(NAMES), allocatable=st.integers(0, 40),
              weight=st.integers(0, 5)),
    min_size=1, max_size=6, unique_by=lambda c: c.name)
uids = st.sampled_from(["", "4858ca61-3ff8-4095-8267-f3d059d8074c",
                        "d43fdeeb-d750-4e2b-bee3-64eb94534f4c"])


def _ordered(candidates: list[Candidate]) -> list[Candidate]:
    """The scheduler's order: capacity descending, then name."""
    return sorted(candidates, key=lambda c: (-c.allocatable, c.name))


def _total(targets: list[Target]) -> int:
    return sum(t.replicas for t in targets)


@settings(max_examples=300, deadline=None)
@given(strategy=st.sampled_from(DIVIDED), candidates=clusters, replicas=st.integers(1, 60),
       mode=st.sampled_from(list(Mode)), uid=uids)
def test_the_sum_is_the_replicas(strategy: Strategy, candidates: list[Candidate], replicas: int,
                                 mode: Mode, uid: str) -> None:
    try:
        got = assign(strategy, replicas, _ordered(candidates), (), mode, uid)
    except Unschedulable:
        assert strategy is not Strategy.STATIC_WEIGHT
        assert sum(c.allocatable for c in candidates) < replicas
        return
    assert _total(got) == replicas
    assert all(t.replicas > 0 for t in got)
    assert len({t.name for t in got}) == len(got)


@settings(max_examples=300, deadline=None)
@given(strategy=st.sampled_from(DIVIDED), candidates=clusters, first=st.integers(1, 40),
       more=st.integers(0, 40), uid=uids)
def test_steady_scale_up_never_takes_a_replica_away(
        strategy: Strategy, candidates: list[Candidate], first: int, more: int,
        uid: str) -> None:
    ordered = _ordered(candidates)
    try:
        before = assign(strategy, first, ordered, (), Mode.STEADY, uid)
        after = assign(strategy, first + more, ordered, before, Mode.STEADY, uid)
    except Unschedulable:
        return
    had = {t.name: t.replicas for t in before}
    now = {t.name: t.replicas for t in after}
    assert all(now.get(name, 0) >= count for name, count in had.items())


@settings(max_examples=300, deadline=None)
@given(strategy=st.sampled_from([Strategy.DUPLICATED, Strategy.STATIC_WEIGHT,
                                 Strategy.DYNAMIC_WEIGHT]),
       candidates=clusters, replicas=st.integers(0, 60), uid=uids, data=st.data())
def test_the_result_does_not_depend_on_input_order(strategy: Strategy,
                                                   candidates: list[Candidate], replicas: int,
                                                   uid: str, data: st.DataObject) -> None:
    """Webster's ties are total, so the candidates' order does not matter (Aggregated's prefix
    follows the scheduler's order by design: see the round's own order test)."""
    shuffled = data.draw(st.permutations(candidates))
    try:
        expected = assign(strategy, replicas, candidates, (), Mode.STEADY, uid)
    except Unschedulable:
        return
    again = assign(strategy, replicas, list(shuffled), (), Mode.STEADY, uid)
    assert {t.name: t.replicas for t in again} == {t.name: t.replicas for t in expected}


@settings(max_examples=300, deadline=None)
@given(votes=st.dictionaries(st.sampled_from(NAMES), st.integers(0, 50), max_size=6),
       seats=st.integers(0, 80), uid=uids, data=st.data())
def test_webster_ignores_input_order_and_is_house_monotone(votes: dict[str, int], seats: int,
                                                          uid: str, data: st.DataObject) -> None:
    order = data.draw(st.permutations(list(votes)))
    shuffled = {name: votes[name] for name in order}
    got = allocate(seats, votes, None, uid)
    assert got == allocate(seats, shuffled, None, uid)
    assert sum(p.seats for p in got) == (seats if votes else 0)
    bigger = {p.name: p.seats for p in allocate(seats + 1, votes, None, uid)}
    assert all(bigger[p.name] >= p.seats for p in got)


@settings(max_examples=200, deadline=None)
@given(placement=st.sampled_from([
    {"replicaScheduling": {"replicaSchedulingType": "Divided",
                           "replicaDivisionPreference": "Aggregated"}},
    {"replicaScheduling": {"replicaSchedulingType": "Divided",
                           "replicaDivisionPreference": "Weighted",
                           "weightPreference": {"dynamicWeight": "AvailableReplicas"}}},
    {"replicaScheduling": {"replicaSchedulingType": "Divided",
                           "replicaDivisionPreference": "Weighted"}},
    {}]),
    rooms=st.lists(st.integers(0, 20), min_size=1, max_size=6),
    held=st.lists(st.integers(0, 5), min_size=6, max_size=6),
    replicas=st.integers(1, 40), fresh=st.booleans(), data=st.data())
def test_a_round_does_not_depend_on_the_order_clusters_are_listed(
        placement: dict[str, object], rooms: list[int], held: list[int], replicas: int,
        fresh: bool, data: st.DataObject) -> None:
    clusters = [Cluster(name=NAMES[i], api_enablements={"apps/v1": frozenset({"Deployment"})},
                        summary={"allocatable": {"pods": str(room)}})
                for i, room in enumerate(rooms)]
    previous = tuple(Target(NAMES[i], held[i]) for i in range(len(rooms)) if held[i])
    binding = Binding(api_version="apps/v1", kind="Deployment", placement=placement,
                      replicas=replicas, workload=True, clusters=previous,
                      last_scheduled_time=EARLIER, reschedule_triggered_at=NOW if fresh else None)
    expected = schedule(binding, clusters, NOW)
    again = schedule(binding, data.draw(st.permutations(clusters)), NOW)
    assert again.error == expected.error
    assert ({t.name: t.replicas for t in again.clusters}
            == {t.name: t.replicas for t in expected.clusters})
