"""The actuator's fair queue: per governor in order, the least-served governor first, in turns."""

from __future__ import annotations

from collections import deque

from hypothesis import given
from hypothesis import strategies as st

from services.actuator.fair_queue import FairQueue

KEYS = st.sampled_from(["a", "b", "c", "d"])
OPS = st.lists(st.one_of(st.tuples(st.just("push"), KEYS), st.tuples(st.just("pop"), KEYS),
                         st.tuples(st.just("done"), KEYS)), max_size=80)


@given(OPS)
def test_each_pop_is_the_oldest_plan_of_a_governor_with_the_fewest_running(
    ops: list[tuple[str, str]],
) -> None:
    queue: FairQueue[int] = FairQueue()
    model: dict[str, deque[int]] = {}
    running: dict[str, int] = {}
    counter = 0
    for op, key in ops:
        if op == "push":
            counter += 1
            queue.push(key, counter)
            model.setdefault(key, deque()).append(counter)
        elif op == "done":
            if running.get(key, 0) > 0:
                queue.done(key)
                running[key] -= 1
        else:
            popped = queue.pop()
            waiting = {k: q for k, q in model.items() if q}
            if not waiting:
                assert popped is None
                continue
            assert popped is not None
            chosen, item = popped
            assert item == waiting[chosen].popleft()
            assert running.get(chosen, 0) == min(running.get(k, 0) for k in waiting)
            running[chosen] = running.get(chosen, 0) + 1
        assert len(queue) == sum(len(q) for q in model.values())
        assert all(queue.running(k) == running.get(k, 0) for k in "abcd")


@given(st.lists(KEYS, min_size=1, max_size=40), st.integers(0, 40))
def test_a_governor_with_nothing_running_starts_within_one_turn_of_the_others(
    backlog: list[str], started: int
) -> None:
    queue: FairQueue[str] = FairQueue()
    for i, key in enumerate(backlog):
        queue.push(key, f"{key}{i}")
    for _ in range(started):
        queue.pop()  # plans started and still running
    queue.push("late", "late")
    turns = len({key for key in backlog}) + 1
    popped = [queue.pop() for _ in range(turns)]
    assert ("late", "late") in popped


def test_taken_out_at_shutdown_every_waiting_plan_once() -> None:
    queue: FairQueue[int] = FairQueue()
    for i in range(5):
        queue.push("ab"[i % 2], i)
    assert queue.pop() == ("a", 0)
    assert sorted(queue.drain()) == [1, 2, 3, 4]
    assert len(queue) == 0
    assert queue.pop() is None
