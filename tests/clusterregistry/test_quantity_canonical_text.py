"""Quantities written back in Kubernetes' canonical text, per format (``Quantity.String``)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesemantics.quantity import parse_quantity
from kubesemantics.quantity_format import (
    QuantityFormat,
    canonical,
    format_of,
    milli_quantity,
    sum_quantities,
    whole_quantity,
)


@pytest.mark.parametrize(("milli", "text"), [
    (0, "0"), (250, "250m"), (1000, "1"), (1500, "1500m"), (12000, "12"), (3_000_000, "3k"),
])
def test_millicores_are_written_as_decimal_si(milli: int, text: str) -> None:
    assert milli_quantity(milli) == text


@pytest.mark.parametrize(("value", "text"), [
    (2**30, "1Gi"), (3 * 2**30, "3Gi"), (1536, "1536"), (1024, "1Ki"), (512, "512"),
    (1000, "1k"), (0, "0"),
])
def test_bytes_are_binary_si_unless_below_1024_or_not_a_power_multiple(value: int,
                                                                      text: str) -> None:
    assert whole_quantity(value, QuantityFormat.BINARY_SI) == text


def test_a_fraction_of_a_binary_value_is_written_as_decimal() -> None:
    assert canonical(Fraction(3, 2), QuantityFormat.BINARY_SI) == "1500m"


@pytest.mark.parametrize(("values", "text"), [
    (["4", "4", "4"], "12"), (["16Gi", "16Gi"], "32Gi"), (["110", "110"], "220"),
    (["500m", "1"], "1500m"), (["1Gi", "1000Mi"], "2024Mi"), (["1e3", "2e3"], "3e3"),
])
def test_a_sum_keeps_the_format_of_its_first_term(values: list[object], text: str) -> None:
    assert sum_quantities(values) == text


def test_formats_are_read_from_the_suffix() -> None:
    assert format_of("1Gi") is QuantityFormat.BINARY_SI
    assert format_of("1e3") is QuantityFormat.DECIMAL_EXPONENT
    assert format_of("2E") is QuantityFormat.DECIMAL_SI
    assert format_of(4) is QuantityFormat.DECIMAL_SI


@settings(max_examples=300, deadline=None)
@given(nanos=st.integers(-(10**21), 10**21), fmt=st.sampled_from(list(QuantityFormat)))
def test_the_canonical_text_reads_back_as_the_same_value(nanos: int, fmt: QuantityFormat) -> None:
    value = Fraction(nanos, 10**9)
    assert parse_quantity(canonical(value, fmt)) == value
