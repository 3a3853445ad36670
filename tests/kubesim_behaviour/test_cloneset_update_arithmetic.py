"""The step a CloneSet takes next: Kruise's scale and update arithmetic, row by row."""

from __future__ import annotations

from dataclasses import asdict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesim.behaviour.cloneset_diffs import PodFacts, Strategy, calculate, partition_replicas


def pods(*codes: str) -> list[PodFacts]:
    """``o``/``n`` old or new revision, ``+``/``-`` available or not, ``d`` specified delete."""
    return [
        PodFacts(updated=code[0] == "n", available=code[1] == "+", specified_delete="d" in code)
        for code in codes
    ]


def nonzero(strategy: Strategy, facts: list[PodFacts]) -> dict[str, int]:
    return {k: v for k, v in asdict(calculate(strategy, facts)).items() if v}


# (scenario, strategy, pods, the non-zero parts of the step)
ROWS = [
    ("an empty set", Strategy(0, 0, 0, 1), [], {}),
    (
        "five replicas from nothing",
        Strategy(5, 0, 0, 1),
        [],
        {"scale_up": 5, "scale_up_limit": 5},
    ),
    (
        "one ready pod specified for deletion",
        Strategy(5, 0, 0, 1),
        pods("n+d", "n+", "n+", "n+", "n+"),
        {"delete_ready_limit": 1},
    ),
    (
        "its replacement comes after it is gone",
        Strategy(5, 0, 0, 1),
        pods("n+", "n+", "n+", "n+"),
        {"scale_up": 1, "scale_up_limit": 1},
    ),
    (
        "two unready pods deleted while replicas go to four",
        Strategy(4, 0, 0, 1),
        pods("n-d", "n-d", "n+", "n+", "n+"),
        {"delete_ready_limit": 2},
    ),
    (
        "partition 3 of 5 updates two pods, one at a time",
        Strategy(5, 3, 0, 1),
        pods("o+", "o+", "o+", "o+", "o+"),
        {"update": 2, "update_max_unavailable": 1},
    ),
    (
        "partition 3 of 5 with one pod updated",
        Strategy(5, 3, 0, 1),
        pods("n+", "o+", "o+", "o+", "o+"),
        {"update": 1, "update_max_unavailable": 1},
    ),
    (
        "partition 3 with a surge pod: create it first",
        Strategy(5, 3, 1, 1),
        pods("o+", "o+", "o+", "o+", "o+"),
        {
            "scale_up": 1,
            "scale_up_limit": 1,
            "use_surge": 1,
            "update": 2,
            "update_max_unavailable": 1,
        },
    ),
    (
        "partition 3 with the surge pod starting",
        Strategy(5, 3, 1, 1),
        pods("o+", "o+", "o+", "o+", "o+", "n-"),
        {"use_surge": 1, "update": 1, "update_max_unavailable": 2},
    ),
    (
        "partition 3 with an old pod marked for recreation",
        Strategy(5, 3, 1, 1),
        pods("o+", "o+", "o+", "o+", "o+d", "n-"),
        {
            "use_surge": 1,
            "use_surge_old_revision": 1,
            "delete_ready_limit": 1,
            "update": 1,
            "update_max_unavailable": 2,
        },
    ),
    (
        "partition 3 with two new pods starting: an old one goes, no ready one yet",
        Strategy(5, 3, 1, 1),
        pods("o+", "o+", "o+", "o+", "n-", "n-"),
        {"scale_down": 1, "scale_down_old_revision": 1},
    ),
    ("partition 3 done", Strategy(5, 3, 1, 1), pods("o+", "o+", "o+", "n+", "n+"), {}),
    (
        "partition 99% keeps four of five, surge 30% and unavailable 40% round to 2 and 2",
        Strategy(5, "99%", "30%", "40%"),
        pods("o+", "o+", "o+", "o+", "o+"),
        {
            "scale_up": 1,
            "scale_up_limit": 1,
            "use_surge": 1,
            "update": 1,
            "update_max_unavailable": 2,
        },
    ),
    (
        "partition 99% with its new pod created: one old pod goes",
        Strategy(5, "99%", "30%", "40%"),
        pods("o+", "o+", "o+", "o+", "o+", "n-"),
        {"scale_down": 1, "scale_down_old_revision": 1, "delete_ready_limit": 2},
    ),
    (
        "a specified deletion with maxUnavailable 0 surges first",
        Strategy(5, 0, 1, 0),
        pods("n+d", "n+", "n+", "n+", "n+"),
        {"scale_up": 1, "scale_up_limit": 1, "use_surge": 1},
    ),
    (
        "a specified deletion with its surge pod ready may delete",
        Strategy(5, 0, 1, 0),
        pods("n+d", "n+", "n+", "n+", "n+", "n+"),
        {"use_surge": 1, "delete_ready_limit": 1},
    ),
    (
        "scaleStrategy.maxUnavailable 2 with one pod unavailable creates one",
        Strategy(6, 0, 0, 1, scale_max_unavailable=2),
        pods("n+", "n+", "n-"),
        {"scale_up": 3, "scale_up_limit": 1},
    ),
    (
        "paused: no surge",
        Strategy(5, 0, 1, 1, paused=True),
        pods("o+", "o+", "o+", "o+", "o+"),
        {"update": 5, "update_max_unavailable": 1},
    ),
]


@pytest.mark.parametrize(
    ("strategy", "facts", "expected"),
    [row[1:] for row in ROWS],
    ids=[row[0] for row in ROWS],
)
def test_the_next_step_matches_kruise(
    strategy: Strategy, facts: list[PodFacts], expected: dict[str, int]
) -> None:
    assert nonzero(strategy, facts) == expected


@pytest.mark.parametrize(
    ("partition", "replicas", "kept"),
    [
        (3, 5, 3),
        ("0%", 5, 0),
        ("30%", 5, 2),
        ("50%", 5, 3),
        ("99%", 5, 4),
        ("100%", 5, 5),
        ("99%", 1, 1),
        (None, 5, 0),
    ],
)
def test_a_percentage_partition_rounds_up_but_leaves_one_pod_to_update(
    partition: int | str | None, replicas: int, kept: int
) -> None:
    assert partition_replicas(partition, replicas) == kept


@given(
    replicas=st.integers(1, 12),
    partition=st.integers(0, 12),
    old=st.integers(0, 12),
    new=st.integers(0, 12),
    max_unavailable=st.integers(1, 4),
)
def test_an_update_never_moves_more_pods_than_the_partition_allows(
    replicas: int, partition: int, old: int, new: int, max_unavailable: int
) -> None:
    facts = pods(*(["o+"] * old + ["n+"] * new))
    step = calculate(Strategy(replicas, partition, 0, max_unavailable), facts)
    assert 0 <= step.update <= max(old - min(partition, replicas), 0)
    assert step.scale_up == max(replicas - old - new, 0)
    assert step.scale_down == max(old + new - replicas, 0)
