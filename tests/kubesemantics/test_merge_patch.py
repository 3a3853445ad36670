"""A merge patch computed as the difference turns the old document into the new one."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesemantics import merge_patch

scalars = st.one_of(st.integers(), st.text(max_size=3), st.booleans())
documents = st.recursive(
    st.dictionaries(st.sampled_from("abcd"), scalars, max_size=4),
    lambda inner: st.dictionaries(st.sampled_from("abcd"),
                                  st.one_of(scalars, inner, st.lists(scalars, max_size=3)),
                                  max_size=4),
    max_leaves=12,
)


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(documents, documents)
def test_applying_the_difference_gives_the_new_document(old: dict[str, Any],
                                                        new: dict[str, Any]) -> None:
    patch = merge_patch.diff(old, new)
    assert as_json(merge_patch.apply(old, patch)) == as_json(new)
    assert (patch == {}) == (as_json(old) == as_json(new))  # JSON's 0 and false differ


def as_json(document: dict[str, Any]) -> str:
    """Compared as JSON: Python's ``0 == False`` holds, JSON's does not."""
    return json.dumps(document, sort_keys=True)


def test_removed_keys_are_nulls_and_lists_are_replaced_whole() -> None:
    old = {"a": 1, "b": {"c": 2, "d": 3}, "l": [1, 2]}
    new = {"a": 1, "b": {"c": 2}, "l": [1]}
    assert merge_patch.diff(old, new) == {"b": {"d": None}, "l": [1]}


def test_a_value_of_another_type_is_a_change() -> None:
    assert merge_patch.diff({"a": 1}, {"a": True}) == {"a": True}
    assert merge_patch.diff({"a": {"x": 1}}, {"a": 5}) == {"a": 5}


def test_a_list_whose_zero_became_false_is_replaced() -> None:
    """Python's ``[0] == [False]`` holds; JSON's does not, so the list is sent again."""
    assert merge_patch.diff({"l": [0, {"a": 1}]}, {"l": [False, {"a": 1}]}) == {
        "l": [False, {"a": 1}]}
    assert merge_patch.diff({"l": [1, {"a": 1}]}, {"l": [1, {"a": True}]}) == {
        "l": [1, {"a": True}]}
    assert merge_patch.diff({"l": [1, 2]}, {"l": [1, 2]}) == {}
