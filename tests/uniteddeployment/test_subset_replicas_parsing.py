"""A subset's replicas read against the UD's total, with Kruise's error texts.

The values and messages are those of Kruise's ``ParseSubsetReplicas`` (percentages round half up,
0..100 only, no percentage without a total), the ``strconv.ParseInt`` errors worded and quoted as
Go words them.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spreadbus.features.uniteddeployment.core.replicas import (
    SubsetReplicasError,
    go_quote,
    parse_int32,
    parse_subset_replicas,
)


@pytest.mark.parametrize(
    ("total", "value", "expected"),
    [
        pytest.param(10, 0, 0, id="zero"),
        pytest.param(10, 4, 4, id="an-integer-as-is"),
        pytest.param(-1, 4, 4, id="an-integer-needs-no-total"),
        pytest.param(3, 7, 7, id="an-integer-may-exceed-the-total"),
        pytest.param(10, "71%", 7, id="71-percent-of-10"),
        pytest.param(10, "29%", 3, id="29-percent-of-10"),
        pytest.param(3, "25%", 1, id="25-percent-of-3-rounds-up"),
        pytest.param(1, "25%", 0, id="25-percent-of-1-rounds-down"),
        pytest.param(1, "50%", 1, id="50-percent-of-1-half-rounds-up"),
        pytest.param(5, "50%", 3, id="50-percent-of-5-half-rounds-up"),
        pytest.param(0, "50%", 0, id="a-percentage-of-nothing"),
        pytest.param(7, "100%", 7, id="all"),
        pytest.param(7, "0%", 0, id="none"),
        pytest.param(10, "+50%", 5, id="a-plus-sign-is-accepted"),
        pytest.param(10, "-0%", 0, id="minus-zero-is-zero"),
        pytest.param(10, "007%", 1, id="leading-zeros"),
    ],
)
def test_values_read_as_kruise_reads_them(total: int, value: object, expected: int) -> None:
    assert parse_subset_replicas(total, value) == expected


@pytest.mark.parametrize(
    ("total", "value", "message"),
    [
        pytest.param(10, -1, "subset replicas (-1) should not be less than 0", id="negative"),
        pytest.param(
            -1, "50%",
            "subsetReplicas (50%) should not be string when unitedDeployment replicas is empty",
            id="percentage-without-total",
        ),
        pytest.param(
            -1, "five",
            "subsetReplicas (five) should not be string when unitedDeployment replicas is empty",
            id="any-string-without-total",
        ),
        pytest.param(
            10, "5",
            "subset replicas (5) only support integer value or percentage value with a suffix '%'",
            id="digits-in-a-string",
        ),
        pytest.param(
            10, "abc%",
            'subset replicas (abc%) should be correct percentage integer: '
            'strconv.ParseInt: parsing "abc": invalid syntax',
            id="letters",
        ),
        pytest.param(
            10, "%",
            'subset replicas (%) should be correct percentage integer: '
            'strconv.ParseInt: parsing "": invalid syntax',
            id="only-the-sign",
        ),
        pytest.param(
            10, "+%",
            'subset replicas (+%) should be correct percentage integer: '
            'strconv.ParseInt: parsing "+": invalid syntax',
            id="a-plus-and-nothing",
        ),
        pytest.param(
            10, "5.5%",
            'subset replicas (5.5%) should be correct percentage integer: '
            'strconv.ParseInt: parsing "5.5": invalid syntax',
            id="a-fraction",
        ),
        pytest.param(
            10, " 5%",
            'subset replicas ( 5%) should be correct percentage integer: '
            'strconv.ParseInt: parsing " 5": invalid syntax',
            id="a-space",
        ),
        pytest.param(
            10, "\t5%",
            'subset replicas (\t5%) should be correct percentage integer: '
            'strconv.ParseInt: parsing "\\t5": invalid syntax',
            id="a-tab-is-quoted-as-go-quotes-it",
        ),
        pytest.param(
            10, "2147483648%",
            'subset replicas (2147483648%) should be correct percentage integer: '
            'strconv.ParseInt: parsing "2147483648": value out of range',
            id="beyond-int32",
        ),
        pytest.param(
            10, "4294967296x%",
            'subset replicas (4294967296x%) should be correct percentage integer: '
            'strconv.ParseInt: parsing "4294967296x": value out of range',
            id="overflow-is-seen-before-a-later-bad-character",
        ),
        pytest.param(
            10, "12x%",
            'subset replicas (12x%) should be correct percentage integer: '
            'strconv.ParseInt: parsing "12x": invalid syntax',
            id="a-bad-character-after-digits",
        ),
        pytest.param(10, "101%", "subset replicas (101%) should be in range [0, 100]",
                     id="above-100"),
        pytest.param(10, "-5%", "subset replicas (-5%) should be in range [0, 100]",
                     id="negative-percentage"),
        pytest.param(10, 1.5, "subset replicas (1.5) should be an integer or a string",
                     id="a-json-fraction"),
        pytest.param(10, True, "subset replicas (true) should be an integer or a string",
                     id="a-boolean"),
    ],
)  # fmt: skip
def test_unreadable_values_are_refused_in_kruises_words(
    total: int, value: object, message: str
) -> None:
    with pytest.raises(SubsetReplicasError) as refused:
        parse_subset_replicas(total, value)
    assert str(refused.value) == message


@given(total=st.integers(min_value=0, max_value=2**31 - 1), percent=st.integers(0, 100))
def test_a_percentage_rounds_half_up_like_exact_arithmetic(total: int, percent: int) -> None:
    assert parse_subset_replicas(total, f"{percent}%") == (total * percent * 2 + 100) // 200


@given(st.integers(min_value=-(2**31), max_value=2**31 - 1))
def test_every_int32_reads_back_with_or_without_a_sign(number: int) -> None:
    assert parse_int32(str(number)) == number
    if number >= 0:
        assert parse_int32(f"+{number}") == number


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        pytest.param("abc", '"abc"', id="plain"),
        pytest.param('a"b\\c', '"a\\"b\\\\c"', id="quote-and-backslash"),
        pytest.param("\x00\x7f", '"\\x00\\x7f"', id="ascii-controls"),
        pytest.param("é雪", '"é雪"', id="printable-unicode-as-is"),
        pytest.param("\u00a0\u2028", '"\\u00a0\\u2028"', id="unicode-spaces-and-separators"),
    ],
)
def test_go_quote_escapes_what_strconv_quote_escapes(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted
