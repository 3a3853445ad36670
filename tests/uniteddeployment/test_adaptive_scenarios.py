"""Kruise's Adaptive end-to-end scenarios, replayed round by round on a simulated cluster.

The steps and expectations follow Kruise's e2e suite ("adaptive united deployment basic",
"... with min replicas", "... with unschedulable pods reserved", "... with reserved pods and min
replicas"): like those, each expectation is polled until it holds, within a deadline.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from tests.uniteddeployment.builders import subset_json, ud_json
from tests.uniteddeployment.cluster_sim import Cluster

START = datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)


def until(
    cluster: Cluster,
    check: Callable[[], bool],
    within: int,
    what: str,
    *,
    min_ready: int | None = None,
) -> int:
    """Tick until ``check`` holds; answer the seconds it took. With ``min_ready``, at least that
    many pods must be ready at every step on the way."""
    for second in range(within + 1):
        if min_ready is not None:
            assert cluster.ready_total() >= min_ready, f"{what}: availability dropped at {second}s"
        if check():
            return second
        cluster.tick()
    raise AssertionError(
        f"{what} not reached in {within}s: pods {cluster.counts()}, "
        f"reserved {cluster.reserved()}, unschedulable {cluster.unschedulable()}"
    )


def pods(cluster: Cluster, *expected: int) -> Callable[[], bool]:
    return lambda: list(cluster.counts().values()) == list(expected)


def marks(cluster: Cluster, *expected: bool) -> Callable[[], bool]:
    return lambda: list(cluster.unschedulable().values()) == list(expected)


def reserved(
    cluster: Cluster, counts: tuple[int, ...], held: tuple[int, ...]
) -> Callable[[], bool]:
    return lambda: (
        list(cluster.counts().values()) == list(counts)
        and list(cluster.reserved().values()) == list(held)
    )


def both(*checks: Callable[[], bool]) -> Callable[[], bool]:
    return lambda: all(check() for check in checks)


def adaptive(critical: int, duration: int, reserve: bool = False) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "rescheduleCriticalSeconds": critical,
        "unschedulableDuration": duration,
    }
    if reserve:
        settings["reserveUnschedulablePods"] = True
    return {"type": "Adaptive", "adaptive": settings}


def test_adaptive_basic() -> None:
    ud = ud_json(
        [
            subset_json("subset-0", max_replicas=2),
            subset_json("subset-1", max_replicas=2),
            subset_json("subset-2"),
        ],
        replicas=3,
        strategy=adaptive(10, 10),
    )
    cluster = Cluster(ud, START, full={"subset-1"})
    # the stuck pod moves on within rescheduleCriticalSeconds + 5 s
    took = until(
        cluster,
        both(marks(cluster, False, True, False), pods(cluster, 2, 0, 1)),
        15,
        "rescheduling",
    )
    assert took <= 10 + 5
    cluster.set_replicas(5)
    until(cluster, pods(cluster, 2, 0, 3), 3, "scale up while unschedulable")
    cluster.set_replicas(4)
    until(cluster, pods(cluster, 2, 0, 2), 3, "scale down while unschedulable")
    until(
        cluster,
        both(marks(cluster, False, False, False), pods(cluster, 2, 0, 2)),
        12,
        "subset recovery",
    )
    cluster.set_replicas(5)
    until(cluster, pods(cluster, 2, 1, 2), 3, "scale up after recovery")
    cluster.set_replicas(4)
    until(cluster, pods(cluster, 2, 0, 2), 3, "scale down after recovery, pending first")
    cluster.set_replicas(3)
    until(cluster, pods(cluster, 2, 0, 1), 3, "scale down after recovery, goes to running")
    cluster.fix("subset-1")
    cluster.set_replicas(6)
    until(
        cluster,
        both(marks(cluster, False, False, False), pods(cluster, 2, 2, 2)),
        30,
        "fixed subset takes its share",
    )
    cluster.tick(10)
    cluster.set_replicas(3)
    until(cluster, pods(cluster, 2, 1, 0), 3, "scale down after fixed")
    cluster.set_replicas(5)
    until(cluster, pods(cluster, 2, 2, 1), 3, "scale up after fixed")


def test_adaptive_with_min_replicas_keeps_min_pending_until_fixed() -> None:
    ud = ud_json(
        [subset_json("subset-0", min_replicas=1, max_replicas=2), subset_json("subset-1")],
        replicas=3,
        strategy=adaptive(10, 20),
    )
    cluster = Cluster(ud, START, full={"subset-0"})
    until(cluster, both(marks(cluster, True, False), pods(cluster, 1, 2)), 15, "rescheduling")
    cluster.set_replicas(4)
    until(cluster, pods(cluster, 1, 3), 3, "scale up while unschedulable")
    cluster.set_replicas(3)
    until(cluster, pods(cluster, 1, 2), 3, "scale down while unschedulable")
    # the minimum pins a pending pod: the subset never recovers on its own
    cluster.tick(60)
    assert list(cluster.unschedulable().values()) == [True, False]
    cluster.fix("subset-0")
    until(cluster, both(marks(cluster, False, False), pods(cluster, 1, 2)), 25, "recovery")
    cluster.set_replicas(5)
    until(cluster, pods(cluster, 2, 3), 3, "scale up after recovery")
    cluster.tick(10)
    cluster.set_replicas(4)
    until(cluster, pods(cluster, 2, 2), 3, "scale down after recovery")
    cluster.set_replicas(3)
    until(cluster, pods(cluster, 2, 1), 3, "scale down again")
    cluster.set_replicas(1)
    until(cluster, pods(cluster, 1, 0), 3, "scale down again and again")


def test_reserved_pods_are_kept_and_substituted() -> None:
    ud = ud_json(
        [subset_json("subset-0"), subset_json("subset-1"), subset_json("subset-2")],
        replicas=2,
        strategy=adaptive(20, 1, reserve=True),
    )
    cluster = Cluster(ud, START, full={"subset-0", "subset-1"}, startup=5)
    until(
        cluster,
        both(marks(cluster, True, True, False), reserved(cluster, (2, 2, 2), (2, 2, 0))),
        60,
        "rescheduling",
    )
    assert cluster.last_requeue is not None
    cluster.set_replicas(4)
    until(cluster, reserved(cluster, (2, 2, 4), (2, 2, 0)), 3, "scale up while unschedulable")
    cluster.set_replicas(2)
    until(cluster, reserved(cluster, (2, 2, 2), (2, 2, 0)), 3, "scale down while unschedulable")
    cluster.set_replicas(4)
    until(cluster, reserved(cluster, (2, 2, 4), (2, 2, 0)), 3, "scale up again")
    until(cluster, lambda: cluster.ready_total() == 4, 5, "substitutes ready")
    cluster.fix("subset-0")
    # the substitutes go only once subset-0's pods have proven healthy: never fewer than 4 ready
    until(
        cluster,
        both(marks(cluster, False, False, False), reserved(cluster, (4, 0, 0), (0, 0, 0))),
        30,
        "recover subset-0",
        min_ready=4,
    )
    cluster.set_replicas(5)
    until(cluster, reserved(cluster, (5, 0, 0), (0, 0, 0)), 10, "scale up after recovery")


def test_reserved_pods_with_min_replicas() -> None:
    ud = ud_json(
        [
            subset_json("subset-0", min_replicas=1),
            subset_json("subset-1", min_replicas=1),
            subset_json("subset-2"),
        ],
        replicas=2,
        strategy=adaptive(10, 1, reserve=True),
    )
    cluster = Cluster(ud, START, full={"subset-0", "subset-1"}, startup=5)
    until(
        cluster,
        both(marks(cluster, True, True, False), reserved(cluster, (1, 1, 2), (1, 1, 0))),
        40,
        "rescheduling",
    )
    cluster.set_replicas(4)
    until(cluster, reserved(cluster, (1, 1, 4), (1, 1, 0)), 3, "scale up while unschedulable")
    cluster.set_replicas(2)
    until(cluster, reserved(cluster, (1, 1, 2), (1, 1, 0)), 3, "scale down while unschedulable")
    cluster.set_replicas(4)
    until(cluster, reserved(cluster, (1, 1, 4), (1, 1, 0)), 3, "scale up again")
    until(cluster, lambda: cluster.ready_total() == 4, 5, "substitutes ready")
    cluster.fix("subset-0")
    until(
        cluster,
        both(marks(cluster, False, True, False), reserved(cluster, (4, 1, 0), (0, 1, 0))),
        30,
        "recover subset-0",
        min_ready=4,
    )
    cluster.set_replicas(5)
    until(cluster, reserved(cluster, (5, 1, 0), (0, 1, 0)), 10, "scale up after recovery")


def test_rebalance_brings_moved_pods_back_without_losing_availability() -> None:
    ud = ud_json(
        [
            subset_json("subset-0", max_replicas=2),
            subset_json("subset-1", max_replicas=2),
            subset_json("subset-2"),
        ],
        replicas=5,
        strategy=adaptive(10, 10),
    )
    cluster = Cluster(ud, START, full={"subset-1"}, startup=3)
    until(cluster, pods(cluster, 2, 0, 3), 20, "stuck pods moved to subset-2")
    cluster.fix("subset-1")
    cluster.tick(30)
    # Adaptive keeps running pods where they are
    assert list(cluster.counts().values()) == [2, 0, 3]
    assert cluster.ready_total() == 5
    cluster.request_rebalance("wr-1")
    most = 0
    for _ in range(60):
        cluster.tick()
        assert cluster.ready_total() >= 5
        most = max(most, sum(cluster.counts().values()))
        if cluster.rebalance_handled() == "wr-1":
            break
    else:
        raise AssertionError(f"rebalance not handled: {cluster.counts()}")
    assert most <= 5 + 1  # one replica in motion at a time (25% of 5, at least 1)
    until(cluster, pods(cluster, 2, 2, 1), 5, "fresh placement", min_ready=5)
    cluster.tick(20)
    assert list(cluster.counts().values()) == [2, 2, 1]  # and it stays
