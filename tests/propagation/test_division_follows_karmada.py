"""Karmada's replica division, table by table: Webster's method with its tie-breaks and the four
strategies in Steady and Fresh mode. Each table is transcribed from the upstream test named in
its comment (karmada-io/karmada, v1.16 and later)."""

from __future__ import annotations

import pytest

from spreadbus.features.propagation.core.division import (
    Candidate,
    Mode,
    Strategy,
    Target,
    Unschedulable,
    assign,
)
from spreadbus.features.propagation.core.webster import Party, allocate, fnv1a32, names_descend

EVEN_UID = "4858ca61-3ff8-4095-8267-f3d059d8074c"
ODD_UID = "d43fdeeb-d750-4e2b-bee3-64eb94534f4c"

# pkg/util/helper/webstermethod_test.go: the classic Sainte-Laguë example, seat by seat.
CLASSIC = {"PartyA": 100000, "PartyB": 80000, "PartyC": 30000, "PartyD": 20000}
CLASSIC_ROUNDS = [
    (1, (1, 0, 0, 0)), (2, (1, 1, 0, 0)), (3, (2, 1, 0, 0)), (4, (2, 1, 1, 0)),
    (5, (2, 2, 1, 0)), (6, (2, 2, 1, 1)), (7, (3, 2, 1, 1)), (8, (3, 3, 1, 1)),
]


@pytest.mark.parametrize(("seats", "expected"), CLASSIC_ROUNDS)
def test_webster_classic_example(seats: int, expected: tuple[int, ...]) -> None:
    got = allocate(seats, CLASSIC)
    assert [p.name for p in got] == sorted(CLASSIC)
    assert tuple(p.seats for p in got) == expected


# pkg/util/helper/webstermethod_test.go: the edge cases and the default tie-breaks.
@pytest.mark.parametrize(("seats", "votes", "initial", "expected"), [
    (1, {}, None, []),
    (0, {"PartyA": 100, "PartyB": 200}, None, [("PartyA", 0), ("PartyB", 0)]),
    (0, {}, None, []),
    # fewer current seats wins a tie: A (3 votes, 1 seat) and B (1 vote, 0 seats) tie at 1.0
    (1, {"PartyA": 3, "PartyB": 1}, {"PartyA": 1}, [("PartyA", 1), ("PartyB", 1)]),
    # then the smaller name
    (1, {"PartyA": 1, "PartyB": 1}, None, [("PartyA", 1), ("PartyB", 0)]),
])
def test_webster_edges(seats: int, votes: dict[str, int], initial: dict[str, int] | None,
                       expected: list[tuple[str, int]]) -> None:
    assert allocate(seats, votes, initial) == [Party(n, s) for n, s in expected]


# pkg/util/helper/binding_test.go (Test_dispenser_AllocateByWeight).
@pytest.mark.parametrize(("seats", "initial", "weights", "uid", "expected"), [
    (6, {"A": 1, "B": 2, "C": 3}, {"A": 1, "B": 2, "C": 3}, "", {"A": 2, "B": 4, "C": 6}),
    (3, {"A": 1, "B": 2, "C": 3}, {"A": 1, "B": 2, "C": 3}, "", {"A": 2, "B": 3, "C": 4}),
    (2, {"A": 1, "B": 2, "C": 3}, {"A": 1, "B": 2, "C": 3}, "", {"A": 1, "B": 3, "C": 4}),
    (1, None, {"A": 2, "B": 1}, "", {"A": 1, "B": 0}),
    (2, None, {"A": 2, "B": 1}, "", {"A": 1, "B": 1}),
    (3, None, {"A": 2, "B": 1}, "", {"A": 2, "B": 1}),
    (5, None, {"A": 170, "B": 110, "C": 60}, "", {"A": 2, "B": 2, "C": 1}),
    (6, None, {"A": 170, "B": 110, "C": 60}, "", {"A": 3, "B": 2, "C": 1}),
    (5, None, {"A": 1, "B": 1}, ODD_UID, {"A": 2, "B": 3}),
    (5, None, {"A": 1, "B": 1}, EVEN_UID, {"A": 3, "B": 2}),
])
def test_dispenser(seats: int, initial: dict[str, int] | None, weights: dict[str, int], uid: str,
                   expected: dict[str, int]) -> None:
    assert {p.name: p.seats for p in allocate(seats, weights, initial, uid)} == expected


def test_the_uid_hash_is_fnv1a_32() -> None:
    assert fnv1a32(b"") == 2166136261
    assert fnv1a32(b"a") == 0xE40C292C  # the published FNV-1a test vector
    assert names_descend(ODD_UID)
    assert not names_descend(EVEN_UID)
    assert not names_descend("")


def _c(name: str, allocatable: int = 0, weight: int = 1) -> Candidate:
    return Candidate(name=name, allocatable=allocatable, weight=weight)


def _t(**replicas: int) -> list[Target]:
    return [Target(name, count) for name, count in replicas.items()]


def _as_dict(targets: list[Target]) -> dict[str, int]:
    return {t.name: t.replicas for t in targets}


# pkg/scheduler/core/assignment_test.go (Test_assignByStaticWeightStrategy).
@pytest.mark.parametrize(("replicas", "weights", "expected"), [
    (12, {"member1": 3, "member2": 2, "member3": 1}, {"member1": 6, "member2": 4, "member3": 2}),
    (12, {"member1": 1, "member2": 1, "member3": 1}, {"member1": 4, "member2": 4, "member3": 4}),
    (13, {"member1": 3, "member2": 2, "member3": 1}, {"member1": 7, "member2": 4, "member3": 2}),
    (14, {"member1": 3, "member2": 2, "member3": 1}, {"member1": 7, "member2": 5, "member3": 2}),
    (2, {"member1": 1, "member2": 0}, {"member1": 2}),  # a cluster without weight is ignored
    (3, {"member1": 2, "member2": 1}, {"member1": 2, "member2": 1}),  # the larger rule wins
])
def test_static_weight(replicas: int, weights: dict[str, int], expected: dict[str, int]) -> None:
    candidates = [_c(n, weight=w) for n, w in weights.items()]
    for mode in Mode:
        got = assign(Strategy.STATIC_WEIGHT, replicas, candidates, _t(member1=9), mode)
        assert _as_dict(got) == expected


def test_static_weight_zero_replicas_gives_nothing() -> None:
    # assignment_test.go "insufficient replica assignment should get 0 replica": the strategy
    # gives 0 each, and the zero entries are dropped after it.
    got = assign(Strategy.STATIC_WEIGHT, 0, [_c("member1"), _c("member2")], (),
                 workload=True)
    assert got == []


def test_static_weight_all_zero_weighs_each_one() -> None:
    got = assign(Strategy.STATIC_WEIGHT, 4, [_c("a", weight=0), _c("b", weight=0)])
    assert _as_dict(got) == {"a": 2, "b": 2}


# pkg/scheduler/core/assignment_test.go (Test_dynamicScale): Steady scale-down and scale-up.
DYNAMIC_STEADY = [
    ("replica 12 -> 6, dynamic weighted 1:1:1", Strategy.DYNAMIC_WEIGHT, 6,
     {"member1": 1, "member2": 1, "member3": 1}, {"member1": 2, "member2": 4, "member3": 6},
     {"member1": 1, "member2": 2, "member3": 3}),
    ("replica 12 -> 24, dynamic weighted 10:10:10", Strategy.DYNAMIC_WEIGHT, 24,
     {"member1": 10, "member2": 10, "member3": 10}, {"member1": 2, "member2": 4, "member3": 6},
     {"member1": 6, "member2": 8, "member3": 10}),
    ("replica 12 -> 24, dynamic weighted 1:1:1", Strategy.DYNAMIC_WEIGHT, 24,
     {"member1": 1, "member2": 1, "member3": 1}, {"member1": 2, "member2": 4, "member3": 6},
     None),
    ("replica 12 -> 6, aggregated 1:1:1", Strategy.AGGREGATED, 6,
     {"member1": 1, "member2": 1, "member3": 1}, {"member1": 4, "member2": 8},
     {"member2": 6}),
    ("replica 12 -> 8, aggregated 100:100", Strategy.AGGREGATED, 8,
     {"member1": 100, "member2": 100}, {"member1": 4, "member2": 8}, {"member2": 8}),
    ("replica 12 -> 24, aggregated 4:6:8", Strategy.AGGREGATED, 24,
     {"member1": 4, "member2": 6, "member3": 8}, {"member1": 4, "member2": 8},
     {"member1": 7, "member2": 12, "member3": 5}),
    ("replica 12 -> 24, aggregated 6:6:20", Strategy.AGGREGATED, 24,
     {"member1": 6, "member2": 6, "member3": 20}, {"member1": 4, "member2": 8},
     {"member1": 10, "member2": 14}),
    ("replica 12 -> 24, aggregated 1:1:1", Strategy.AGGREGATED, 24,
     {"member1": 1, "member2": 1, "member3": 1}, {"member1": 4, "member2": 8}, None),
    ("replica 12 -> 24, aggregated 4:8:12, cluster2 gone and cluster4 new", Strategy.AGGREGATED,
     24, {"member1": 4, "member3": 8, "member4": 12}, {"member1": 4, "member2": 8},
     {"member1": 7, "member3": 7, "member4": 10}),
    # Test_dynamicScaleUp: the first schedule is a scale-up from nothing.
    ("replica 12, dynamic weight 6:8:10", Strategy.DYNAMIC_WEIGHT, 12,
     {"member1": 6, "member2": 8, "member3": 10}, {},
     {"member1": 3, "member2": 4, "member3": 5}),
    ("replica 12, dynamic weight 8:8:10", Strategy.DYNAMIC_WEIGHT, 12,
     {"member1": 8, "member2": 8, "member3": 10}, {},
     {"member1": 4, "member2": 4, "member3": 4}),
    ("replica 12, dynamic weight 3:3:3", Strategy.DYNAMIC_WEIGHT, 12,
     {"member1": 3, "member2": 3, "member3": 3}, {}, None),
    ("replica 12, aggregated 6:8:10", Strategy.AGGREGATED, 12,
     {"member1": 6, "member2": 8, "member3": 10}, {}, {"member2": 5, "member3": 7}),
    ("replica 12, aggregated 12:8:10", Strategy.AGGREGATED, 12,
     {"member1": 12, "member2": 8, "member3": 10}, {}, {"member1": 12}),
    ("replica 12, aggregated 3:3:3", Strategy.AGGREGATED, 12,
     {"member1": 3, "member2": 3, "member3": 3}, {}, None),
    ("replica 12, dynamic weight 3:3, cluster3 gone and cluster2 new", Strategy.DYNAMIC_WEIGHT,
     12, {"member1": 3, "member2": 3}, {"member1": 6, "member3": 6},
     {"member1": 9, "member2": 3}),
]


@pytest.mark.parametrize(("strategy", "replicas", "allocatable", "previous", "expected"),
                         [pytest.param(*case[1:], id=case[0]) for case in DYNAMIC_STEADY])
def test_dynamic_and_aggregated_steady(strategy: Strategy, replicas: int,
                                       allocatable: dict[str, int], previous: dict[str, int],
                                       expected: dict[str, int] | None) -> None:
    candidates = sorted((_c(n, a) for n, a in allocatable.items()),
                        key=lambda c: (-c.allocatable, c.name))
    if expected is None:
        with pytest.raises(Unschedulable, match="are not enough to schedule"):
            assign(strategy, replicas, candidates, _t(**previous))
        return
    assert _as_dict(assign(strategy, replicas, candidates, _t(**previous))) == expected


def test_an_equal_sum_keeps_the_layout_in_steady_mode() -> None:
    # assignment.go: assigned == replicas returns the previous result even if another cluster
    # has more room now.
    got = assign(Strategy.DYNAMIC_WEIGHT, 6, [_c("a", 100), _c("b", 0)], _t(a=1, b=5))
    assert _as_dict(got) == {"a": 1, "b": 5}


def test_fresh_divides_by_room_plus_what_each_holds() -> None:
    # division_algorithm.go dynamicFreshScale: b's 5 count as room, a has 10 more.
    got = assign(Strategy.DYNAMIC_WEIGHT, 6, [_c("a", 10), _c("b", 0)], _t(a=1, b=5),
                 Mode.FRESH)
    assert _as_dict(got) == {"a": 4, "b": 2}


def test_fresh_aggregated_consolidates_on_the_largest() -> None:
    got = assign(Strategy.AGGREGATED, 6, [_c("a", 10), _c("b", 0)], _t(a=1, b=5), Mode.FRESH)
    assert _as_dict(got) == {"a": 6}


def test_aggregated_is_not_fill_first() -> None:
    # The reference's worked example: capacities 10 and 8 with 12 replicas give 7:5.
    got = assign(Strategy.AGGREGATED, 12, [_c("member3", 10), _c("member2", 8)])
    assert _as_dict(got) == {"member2": 5, "member3": 7}


def test_duplicated_gives_every_candidate_all() -> None:
    got = assign(Strategy.DUPLICATED, 3, [_c("b"), _c("a")])
    assert got == [Target("b", 3), Target("a", 3)]


def test_non_workloads_list_every_candidate_with_zero() -> None:
    # common.go AssignReplicas: no replicas and no requirements bypass the strategy.
    got = assign(Strategy.DYNAMIC_WEIGHT, 0, [_c("a"), _c("b")], workload=False)
    assert got == [Target("a", 0), Target("b", 0)]


def test_no_candidates_is_an_error() -> None:
    with pytest.raises(ValueError, match="no clusters available to schedule"):
        assign(Strategy.DUPLICATED, 1, [])


# pkg/scheduler/core/common_test.go (the "Overflow: ..." cases of assignReplicas): each tier
# takes min(remaining, its available replicas), divided by the strategy within the tier.
OVERFLOW = [
    ("primary group has enough capacity", 5, {"member1": (0, 10), "member2": (1, 10)}, {},
     {"member1": 5}),
    ("primary group exhausted, the rest overflows", 5,
     {"member1": (0, 2), "member2": (1, 10)}, {}, {"member1": 2, "member2": 3}),
    ("all tiers exhausted", 10, {"member1": (0, 2), "member2": (1, 2)}, {}, None),
    ("available counts what the binding holds", 8, {"member1": (0, 2), "member2": (1, 10)},
     {"member1": 3}, {"member1": 5, "member2": 3}),
]


@pytest.mark.parametrize(("replicas", "tiers", "previous", "expected"),
                         [pytest.param(*case[1:], id=case[0]) for case in OVERFLOW])
def test_overflow_tiers(replicas: int, tiers: dict[str, tuple[int, int]],
                        previous: dict[str, int], expected: dict[str, int] | None) -> None:
    candidates = [Candidate(n, allocatable=a, tier=t) for n, (t, a) in tiers.items()]
    if expected is None:
        with pytest.raises(Unschedulable, match="Clusters available replicas are not enough"):
            assign(Strategy.DYNAMIC_WEIGHT, replicas, candidates, _t(**previous), overflow=True)
        return
    got = assign(Strategy.DYNAMIC_WEIGHT, replicas, candidates, _t(**previous), overflow=True)
    assert _as_dict(got) == expected
