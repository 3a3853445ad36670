"""Which pods a ReplicaSet removes first (upstream ActivePodsWithRanks)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kubesim.behaviour.pod_ranking import DELETION_COST, pods_to_delete, rank_for_deletion
from kubesim.behaviour.timestamps import format_time

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def pod(
    name: str,
    *,
    node: str = "n1",
    phase: str = "Running",
    ready: bool = True,
    cost: str | None = None,
    age: timedelta = timedelta(hours=1),
    ready_for: timedelta | None = None,
    restarts: int = 0,
) -> dict[str, Any]:
    annotations = {DELETION_COST: cost} if cost is not None else {}
    ready_since = NOW - (ready_for if ready_for is not None else age)
    return {
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "annotations": annotations,
            "creationTimestamp": format_time(NOW - age),
        },
        "spec": {"nodeName": node},
        "status": {
            "phase": phase,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "lastTransitionTime": format_time(ready_since),
                }
            ],
            "containerStatuses": [{"name": "c", "restartCount": restarts}],
        },
    }


def names(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def ranked(pods: list[dict[str, Any]], related: list[dict[str, Any]] | None = None) -> list[str]:
    shuffled = pods[:]
    random.Random(7).shuffle(shuffled)
    return names(rank_for_deletion(shuffled, related if related is not None else pods, NOW))


def test_unassigned_then_pending_then_unknown_then_running() -> None:
    pods = [
        pod("running"),
        pod("unknown", phase="Unknown"),
        pod("pending", phase="Pending", ready=False),
        pod("unassigned", node="", phase="Pending", ready=False),
    ]
    assert ranked(pods) == ["unassigned", "pending", "unknown", "running"]


def test_not_ready_goes_before_ready() -> None:
    assert ranked([pod("ready"), pod("not-ready", ready=False)]) == ["not-ready", "ready"]


def test_lower_deletion_cost_goes_first_whatever_the_age() -> None:
    pods = [
        pod("cost-100", cost="100", age=timedelta(seconds=5)),
        pod("cost-none", age=timedelta(days=3)),
        pod("cost-minus", cost="-5", age=timedelta(days=9)),
        pod("cost-bad", cost="lots", age=timedelta(days=1)),
    ]
    order = ranked(pods)
    assert order[0] == "cost-minus"
    assert order[-1] == "cost-100"
    assert set(order[1:3]) == {"cost-none", "cost-bad"}


def test_pods_doubled_up_on_a_node_go_before_lonely_ones() -> None:
    lonely = pod("lonely", node="n2")
    crowded = [pod("crowded-1", node="n1"), pod("crowded-2", node="n1")]
    assert ranked([lonely, *crowded])[-1] == "lonely"


def test_recently_ready_goes_before_long_ready_and_restarts_break_ties() -> None:
    pods = [
        pod("ready-long", ready_for=timedelta(days=2), node="a"),
        pod("ready-new", ready_for=timedelta(seconds=3), node="b"),
    ]
    assert ranked(pods) == ["ready-new", "ready-long"]
    same_time = [pod("calm", node="a"), pod("crashy", node="b", restarts=4)]
    assert ranked(same_time) == ["crashy", "calm"]


def test_newer_pods_go_first_when_everything_else_is_equal() -> None:
    pods = [
        pod("old", age=timedelta(days=30), ready_for=timedelta(hours=1), node="a"),
        pod("new", age=timedelta(minutes=2), ready_for=timedelta(hours=1), node="b"),
    ]
    assert ranked(pods) == ["new", "old"]


def test_scale_down_to_ten_removes_the_twenty_cheapest() -> None:
    pods = [pod(f"p{i}", cost=str(i % 30), node=f"n{i % 12}") for i in range(30)]
    victims = pods_to_delete(pods, pods, 20, NOW)
    assert sorted(int(p["metadata"]["annotations"][DELETION_COST]) for p in victims) == list(
        range(20)
    )


@given(st.lists(st.integers(-1000, 1000), min_size=1, max_size=30), st.data())
def test_victims_never_cost_more_than_survivors_among_equal_running_ready_pods(
    costs: list[int], data: st.DataObject
) -> None:
    pods = [pod(f"p{i}", cost=str(c), node=f"n{i}") for i, c in enumerate(costs)]
    count = data.draw(st.integers(0, len(pods)))
    victims = pods_to_delete(pods, pods, count, NOW)
    assert len(victims) == count
    survivors = [p for p in pods if p not in victims]
    if victims and survivors:
        worst = max(int(v["metadata"]["annotations"][DELETION_COST]) for v in victims)
        best = min(int(s["metadata"]["annotations"][DELETION_COST]) for s in survivors)
        assert worst <= best
