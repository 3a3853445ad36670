"""Go duration text (the API server's ``?timeout=10s``) read as seconds, and only that."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesemantics.go_duration import seconds


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10s", 10.0),
        ("3s", 3.0),
        ("1m0s", 60.0),
        ("1h2m3.5s", 3723.5),
        ("1.5s", 1.5),
        ("500ms", 0.5),
        ("250us", 0.00025),
        ("250µs", 0.00025),
        ("7ns", 7e-9),
        (".5s", 0.5),
        ("1.s", 1.0),
        ("0", 0.0),
        ("-2s", -2.0),
        ("+2s", 2.0),
    ],
)
def test_go_durations_are_read_in_seconds(text: str, expected: float) -> None:
    value = seconds(text)
    assert value is not None
    assert math.isclose(value, expected, rel_tol=1e-12)


@pytest.mark.parametrize(
    "text", ["", "10", "s", ".s", "1x", "1s2", "1 s", "ten s", "-", "1sec", "1d"]
)
def test_anything_else_is_not_a_duration(text: str) -> None:
    assert seconds(text) is None


@given(
    st.integers(min_value=0, max_value=1000),
    st.integers(min_value=0, max_value=59),
    st.integers(min_value=0, max_value=59_999),
)
def test_go_s_own_formatting_reads_back(hours: int, minutes: int, millis: int) -> None:
    """Go prints a duration of a second or more as ``[Nh][Nm]N[.fff]s``, trailing zeros cut."""
    whole, fraction = divmod(millis, 1000)
    text = f"{whole}.{fraction:03d}".rstrip("0").rstrip(".") + "s"
    if hours:
        text = f"{hours}h{minutes}m{text}"
    elif minutes:
        text = f"{minutes}m{text}"
    value = seconds(text)
    assert value is not None
    expected = hours * 3600 + minutes * 60 + millis / 1000
    assert math.isclose(value, expected, rel_tol=1e-12, abs_tol=1e-12)
