"""Which pods a CloneSet removes first: Kruise's eight rules and its spread rank."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesim.behaviour.cloneset_ranking import (
    choose_pods_to_delete,
    compare,
    rank_for_scale_in,
    same_node_ranks,
    spread_ranks,
)
from kubesim.behaviour.pod_ranking import DELETION_COST
from kubesim.behaviour.timestamps import format_time

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def pod(
    name: str = "p",
    *,
    node: str = "n1",
    phase: str = "Running",
    ready: bool = True,
    cost: str | None = None,
    ready_for: timedelta | None = HOUR,
    restarts: int = 0,
    age: timedelta | None = 2 * HOUR,
) -> dict[str, Any]:
    """A pod; ``ready_for``/``age`` None leave the ready or creation time out."""
    condition: dict[str, Any] = {"type": "Ready", "status": "True" if ready else "False"}
    if ready_for is not None:
        condition["lastTransitionTime"] = format_time(NOW - ready_for)
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}"}
    if cost is not None:
        meta["annotations"] = {DELETION_COST: cost}
    if age is not None:
        meta["creationTimestamp"] = format_time(NOW - age)
    return {
        "metadata": meta,
        "spec": {"nodeName": node},
        "status": {
            "phase": phase,
            "conditions": [condition],
            "containerStatuses": [{"name": "c", "restartCount": restarts}],
        },
    }


# One row per rule. ``first`` must go before ``second``: the two tie on every earlier rule, and
# on every later rule ``first`` is the one to keep, so only the row's rule can decide.
LATER_RULES_FAVOUR_SECOND = {
    "cost": "9",
    "ready_for": 3 * HOUR,
    "restarts": 0,
    "age": 3 * HOUR,
}
FAVOURS_DELETION = {"cost": "-9", "ready_for": timedelta(minutes=1), "restarts": 5, "age": HOUR}
RULES: list[tuple[str, dict[str, Any], dict[str, Any], float, float]] = [
    (
        "1 node unassigned before assigned",
        {"node": "", "phase": "Running", **LATER_RULES_FAVOUR_SECOND},
        {"node": "n1", "phase": "Pending", "ready": False, **FAVOURS_DELETION},
        1.0,
        9.0,
    ),
    (
        "2 Pending before Running",
        {"phase": "Pending", **LATER_RULES_FAVOUR_SECOND},
        {"phase": "Running", "ready": False, **FAVOURS_DELETION},
        1.0,
        9.0,
    ),
    (
        "2 Pending before Unknown",
        {"phase": "Pending", **LATER_RULES_FAVOUR_SECOND},
        {"phase": "Unknown", "ready": False, **FAVOURS_DELETION},
        1.0,
        9.0,
    ),
    (
        "2 Unknown before Running",
        {"phase": "Unknown", **LATER_RULES_FAVOUR_SECOND},
        {"phase": "Running", "ready": False, **FAVOURS_DELETION},
        1.0,
        9.0,
    ),
    (
        "3 not ready before ready",
        {"ready": False, **LATER_RULES_FAVOUR_SECOND},
        {"ready": True, **FAVOURS_DELETION},
        1.0,
        9.0,
    ),
    (
        "4 lower deletion cost before higher",
        {"cost": "-10", **{k: v for k, v in LATER_RULES_FAVOUR_SECOND.items() if k != "cost"}},
        {"cost": "10", **{k: v for k, v in FAVOURS_DELETION.items() if k != "cost"}},
        1.0,
        9.0,
    ),
    (
        "5 higher spread rank before lower",
        {"ready_for": 3 * HOUR, "restarts": 0, "age": 3 * HOUR},
        {"ready_for": timedelta(minutes=1), "restarts": 5, "age": HOUR},
        2.5,
        1.5,
    ),
    (
        "6 ready for less time before more",
        {"ready_for": timedelta(minutes=1), "restarts": 0, "age": 3 * HOUR},
        {"ready_for": HOUR, "restarts": 5, "age": HOUR},
        0.0,
        0.0,
    ),
    (
        "6 ready for no recorded time before any time",
        {"ready_for": None, "restarts": 0, "age": 3 * HOUR},
        {"ready_for": timedelta(seconds=1), "restarts": 5, "age": HOUR},
        0.0,
        0.0,
    ),
    (
        "7 more restarts before fewer",
        {"restarts": 4, "age": 3 * HOUR},
        {"restarts": 1, "age": HOUR},
        0.0,
        0.0,
    ),
    ("8 newer before older", {"age": HOUR}, {"age": 3 * HOUR}, 0.0, 0.0),
    ("8 no creation time before any", {"age": None}, {"age": timedelta(seconds=1)}, 0.0, 0.0),
]


@pytest.mark.parametrize(
    ("first", "second", "rank_first", "rank_second"),
    [row[1:] for row in RULES],
    ids=[row[0] for row in RULES],
)
def test_each_rule_decides_when_every_earlier_rule_ties(
    first: dict[str, Any], second: dict[str, Any], rank_first: float, rank_second: float
) -> None:
    a, b = pod("a", **first), pod("b", **second)
    assert compare(a, b, rank_first, rank_second) < 0
    assert compare(b, a, rank_second, rank_first) > 0


def test_pods_equal_on_every_rule_tie() -> None:
    assert compare(pod("a"), pod("b")) == 0


def test_malformed_deletion_costs_count_as_zero() -> None:
    for cost in ("+10", "007", " 5", "lots", "2147483648"):
        assert compare(pod("zero"), pod("odd", cost=cost)) == 0, cost
    assert compare(pod("neg", cost="-1"), pod("zero")) < 0


def test_an_unavailable_pod_goes_before_an_available_one() -> None:
    young, old = pod("young", ready_for=timedelta(seconds=5)), pod("old", cost="-9")

    def available(p: Any) -> bool:
        return bool(p["metadata"]["name"] == "old")

    assert compare(young, old, available=available) < 0
    assert compare(young, old) > 0, "without minReadySeconds the deletion cost decides"


def test_pods_sharing_a_node_rank_by_how_crowded_it_is() -> None:
    pods = [
        pod("a1", node="a", ready_for=HOUR),
        pod("a2", node="a", ready_for=2 * HOUR),
        pod("a3", node="a", ready_for=3 * HOUR),
        pod("b1", node="b"),
        pod("c1", node="c"),
        pod("c2", node="c", ready_for=2 * HOUR),
    ]
    ranks = same_node_ranks(pods)
    assert ranks == {"uid-a1": 2.0, "uid-a2": 1.0, "uid-c1": 1.0}


def test_spread_rank_weights_each_domain_by_the_number_of_domains() -> None:
    zones = {"n1": {"zone": "a"}, "n2": {"zone": "a"}, "n3": {"zone": "b"}, "n4": {}}
    pods = [
        pod("a1", node="n1", ready_for=HOUR),
        pod("a2", node="n2", ready_for=2 * HOUR),
        pod("a3", node="n2", ready_for=3 * HOUR),
        pod("b1", node="n3"),
        pod("x1", node="n4"),
        pod("gone", node="n9"),
    ]
    weight = math.log(2 + 2)
    ranks = spread_ranks(pods, ["zone"], zones)
    # in zone a, same-node rank puts a2 (sharing n2 with a3, ready for less time) first
    assert ranks == {
        "uid-a2": 3 * weight,
        "uid-a1": 2 * weight,
        "uid-a3": 1 * weight,
        "uid-b1": 1 * weight,
    }


def test_scale_in_takes_from_the_most_crowded_zone_first() -> None:
    zones = {f"{z}{i}": {"zone": z} for z in "abc" for i in range(3)}
    pods = [
        pod("a-old", node="a0", age=9 * HOUR, ready_for=9 * HOUR),
        pod("a-mid", node="a1", age=8 * HOUR, ready_for=8 * HOUR),
        pod("a-new", node="a2", age=7 * HOUR, ready_for=7 * HOUR),
        pod("b-old", node="b0", age=9 * HOUR, ready_for=9 * HOUR),
        pod("b-new", node="b1", age=8 * HOUR, ready_for=8 * HOUR),
        pod("c-newest", node="c0", age=HOUR, ready_for=HOUR),
    ]
    order = rank_for_scale_in(pods, topology_keys=["zone"], node_labels=zones)
    names = [p["metadata"]["name"] for p in order]
    assert names[:3] == ["a-new", "a-mid", "b-new"], "crowded zones lose first"
    assert names[3] == "c-newest", "the newest pod, alone in its zone, ties with the oldest"
    plain = [p["metadata"]["name"] for p in rank_for_scale_in(pods)]
    assert plain[0] == "c-newest", "without spread constraints the newest goes first"


def test_old_revision_pods_are_chosen_first_up_to_their_share() -> None:
    old = [pod("o1", age=HOUR), pod("o2", age=2 * HOUR)]
    new = [pod("n1", age=HOUR), pod("n2", age=2 * HOUR)]

    def rank(group: Any) -> list[dict[str, Any]]:
        return rank_for_scale_in(group)

    def names(chosen: list[dict[str, Any]]) -> list[str]:
        return [p["metadata"]["name"] for p in chosen]

    assert names(choose_pods_to_delete(2, 2, old, new, rank)) == ["o1", "o2"]
    assert names(choose_pods_to_delete(2, 1, old, new, rank)) == ["o1", "n1"]
    assert names(choose_pods_to_delete(1, 0, old, new, rank)) == ["n1"]


pods_strategy = st.builds(
    pod,
    node=st.sampled_from(["", "n1", "n2"]),
    phase=st.sampled_from(["Pending", "Unknown", "Running"]),
    ready=st.booleans(),
    cost=st.sampled_from([None, "-1", "0", "3"]),
    ready_for=st.sampled_from([None, HOUR, 2 * HOUR]),
    restarts=st.integers(0, 2),
    age=st.sampled_from([None, HOUR, 2 * HOUR]),
)


@given(a=pods_strategy, b=pods_strategy, ranks=st.tuples(st.integers(0, 2), st.integers(0, 2)))
def test_the_order_is_antisymmetric(
    a: dict[str, Any], b: dict[str, Any], ranks: tuple[int, int]
) -> None:
    assert compare(a, b, *ranks) == -compare(b, a, ranks[1], ranks[0])
