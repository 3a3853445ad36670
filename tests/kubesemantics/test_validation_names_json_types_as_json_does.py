"""Errors about a value of the wrong type name its type as JSON does, whatever the value."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesemantics.json_type import json_type

JSON_NAMES = {"null", "boolean", "number", "string", "array", "object"}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


@pytest.mark.parametrize(
    ("value", "name"),
    [(None, "null"), (True, "boolean"), (0, "number"), (1.5, "number"), ("", "string"),
     ([], "array"), ({}, "object")],
)
def test_each_json_type_has_its_json_name(value: object, name: str) -> None:
    assert json_type(value) == name


def test_a_value_json_cannot_hold_is_named_by_its_python_type() -> None:
    assert json_type(datetime.date(2026, 1, 1)) == "date"  # YAML decodes unquoted dates


@given(json_values)
def test_every_decoded_json_value_gets_one_of_the_six_names(value: object) -> None:
    assert json_type(value) in JSON_NAMES
