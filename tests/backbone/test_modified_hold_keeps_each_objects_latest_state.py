"""The watcher's hold on MODIFIED observations: fewer messages, never a stale or late state."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.watcher.modified_hold import ModifiedHold


@dataclass(frozen=True)
class Seen:
    index: int
    key: str
    event: str
    at: float


events = st.sampled_from(["ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED"])
steps = st.lists(
    st.tuples(st.sampled_from("abc"), events, st.floats(0, 0.2), st.booleans()), max_size=60
)


def run(seconds: float, script: list[tuple[str, str, float, bool]]) -> tuple[list[Seen], list[Seen],
                                                                             ModifiedHold[Seen]]:
    """Offer each step at a clock that moves forward, asking for due changes when the step says;
    returns what was offered and what went out, in order, drained at the end."""
    hold = ModifiedHold[Seen](seconds)
    offered: list[Seen] = []
    out: list[Seen] = []
    now = 0.0
    for i, (key, event, gap, ask) in enumerate(script):
        now += gap
        if ask:
            out.extend(hold.due(now))
            due = hold.next_due()
            assert due is None or due > now, "a window that has ended is still held"
        seen = Seen(i, key, event, now)
        offered.append(seen)
        published = hold.offer(key, event, seen, now)
        if event != "MODIFIED":
            assert published[-1] == seen, "ADDED and DELETED never wait"
        out.extend(published)
    out.extend(hold.drain())
    assert hold.next_due() is None
    return offered, out, hold


@given(st.sampled_from([0.01, 0.05, 0.3]), steps)
def test_each_object_ends_at_its_latest_state_in_watch_order(
    seconds: float, script: list[tuple[str, str, float, bool]]
) -> None:
    offered, out, hold = run(seconds, script)
    for key in "abc":
        mine = [s.index for s in offered if s.key == key]
        sent = [s.index for s in out if s.key == key]
        assert sent == sorted(sent), "an object's observations went out of order"
        assert sent[-1:] == mine[-1:], "an object's latest state did not go out"
        assert set(sent) <= set(mine)
    dropped = {s.index for s in offered} - {s.index for s in out}
    assert all(offered[i].event == "MODIFIED" for i in dropped), "only MODIFIED are replaced"
    assert hold.superseded == len(dropped)


@given(steps)
def test_a_modified_observation_waits_no_longer_than_the_hold(
    script: list[tuple[str, str, float, bool]]
) -> None:
    seconds = 0.05
    hold = ModifiedHold[Seen](seconds)
    now = 0.0
    waiting: dict[str, Seen] = {}  # key -> the first MODIFIED of its current window
    for i, (key, event, gap, _) in enumerate(script):
        now += gap
        for change in hold.due(now):
            first = waiting.pop(change.key)
            assert change.at - first.at <= seconds
        for first in waiting.values():
            assert now < first.at + seconds, "a window that ended was not handed out"
        seen = Seen(i, key, event, now)
        published = hold.offer(key, event, seen, now)
        if published:
            waiting.pop(key, None)
        elif event == "MODIFIED":
            waiting.setdefault(key, seen)


@given(steps)
def test_without_a_hold_everything_goes_out_as_offered(
    script: list[tuple[str, str, float, bool]]
) -> None:
    offered, out, hold = run(0.0, script)
    assert out == offered
    assert hold.superseded == 0


def test_a_pods_start_up_goes_out_as_its_creation_and_its_ready_state() -> None:
    hold = ModifiedHold[str](0.05)
    assert hold.offer("web-1", "ADDED", "created", 0.0) == ["created"]
    for at, state in [(0.001, "bound"), (0.012, "creating"), (0.032, "running")]:
        assert hold.offer("web-1", "MODIFIED", state, at) == []
    assert hold.offer("web-2", "MODIFIED", "other", 0.02) == []
    assert hold.offer("web-1", "MODIFIED", "ready", 0.042) == []
    assert hold.due(0.050) == []
    assert hold.next_due() == pytest.approx(0.051)
    assert hold.due(0.06) == ["ready"]
    assert hold.due(0.07) == ["other"]
    assert hold.superseded == 3


def test_a_deletion_replaces_what_is_held_and_a_creation_follows_it() -> None:
    hold = ModifiedHold[str](1.0)
    hold.offer("a", "MODIFIED", "a-terminating", 0.0)
    assert hold.offer("a", "DELETED", "a-gone", 0.1) == ["a-gone"]
    hold.offer("b", "MODIFIED", "b-changed", 0.0)
    assert hold.offer("b", "ADDED", "b-again", 0.1) == ["b-changed", "b-again"]
    assert hold.drain() == []
    assert hold.superseded == 1


@pytest.mark.parametrize("seconds", [-0.01, float("nan")])
def test_a_negative_or_unknown_hold_is_refused(seconds: float) -> None:
    with pytest.raises(ValueError, match="seconds must be >= 0"):
        ModifiedHold[str](seconds)
