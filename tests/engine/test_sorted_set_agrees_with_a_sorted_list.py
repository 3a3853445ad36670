"""The tally's ordered sets answer as a sorted list of the same items would.

Blocks are made tiny so that random adds and removals split and empty them all the time.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.projection import sorted_set
from spreadbus.projection.sorted_set import SortedSet

steps = st.lists(st.tuples(st.booleans(), st.integers(0, 60)), max_size=200)


@settings(max_examples=200, deadline=None)
@given(steps, st.integers(0, 61), st.one_of(st.none(), st.integers(0, 61)))
def test_adds_removals_and_rank_queries_match_a_sorted_list(
    changes: list[tuple[bool, int]], probe: int, high: int | None
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sorted_set, "LOAD", 2)
        items: SortedSet[int] = SortedSet()
        model: set[int] = set()
        for add, item in changes:
            if add:
                items.add(item)
                model.add(item)
            else:
                items.discard(item)
                model.discard(item)
            ordered = sorted(model)
            assert list(items) == ordered
            assert len(items) == len(ordered)
            assert items.count_above(probe) == sum(1 for i in ordered if i > probe)
            assert list(items.below(probe)) == [i for i in ordered if i < probe]
            assert items.first_from(probe) == next((i for i in ordered if i >= probe), None)
            assert list(items.between(probe, high)) == [
                i for i in ordered if i >= probe and (high is None or i < high)]
            assert [items.at(i) for i in range(len(ordered))] == ordered
            if ordered:
                assert items.first() == ordered[0]
