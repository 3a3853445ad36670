"""A rule's wake-ups: the last time set for a key counts, or the earliest where asked; each key
is handed out once, when due, in any interleaving of sets, cancels and questions."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from spreadbus.projection.wake_schedule import WakeSchedule

KEYS = st.sampled_from(["a", "b", "c"])
OPS = st.lists(st.one_of(
    st.tuples(st.just("set"), KEYS, st.one_of(st.none(), st.integers(0, 20).map(float))),
    st.tuples(st.just("earliest"), KEYS, st.integers(0, 20).map(float)),
    st.tuples(st.just("due"), st.just(""), st.integers(0, 20).map(float)),
), max_size=40)


@given(OPS)
def test_the_schedule_answers_as_a_plain_dictionary_would(ops: list[tuple[str, str, float | None]]
                                                          ) -> None:
    schedule, model = WakeSchedule(), {}
    for op, key, value in ops:
        if op == "set":
            schedule.set(key, value)
            if value is None:
                model.pop(key, None)
            else:
                model[key] = value
        elif op == "earliest":
            assert value is not None
            schedule.earliest(key, value)
            model[key] = min(model.get(key, value), value)
        else:
            assert value is not None
            due = schedule.due(value)
            expected = {k for k, at in model.items() if at <= value}
            assert sorted(due) == sorted(expected)
            for k in expected:
                del model[k]
        assert schedule.next_wake() == (min(model.values()) if model else None)
        for k in ("a", "b", "c"):
            assert schedule.get(k) == model.get(k)
