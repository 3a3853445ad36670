"""Quantities read as Kubernetes reads them, and as the simulator's scheduler reads them."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kubesemantics.quantity import PARSE_ERROR, QuantityError, parse_quantity
from kubesim.behaviour.quantity import QuantityError as SimQuantityError
from kubesim.behaviour.quantity import parse_quantity as sim_parse_quantity


@pytest.mark.parametrize(("text", "value"), [
    ("1", Fraction(1)), ("100m", Fraction(1, 10)), ("1.5Gi", Fraction(3 * 2**29)),
    ("2e3", Fraction(2000)), ("1E-3", Fraction(1, 1000)), (".5", Fraction(1, 2)),
    ("+1k", Fraction(1000)), ("-1", Fraction(-1)), ("5.", Fraction(5)),
    (3, Fraction(3)), (0.25, Fraction(1, 4)), ("1Ei", Fraction(2**60)),
])
def test_quantities_kubernetes_accepts_have_their_exact_value(
    text: str | int | float, value: Fraction
) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", [
    "", " 1", "1 ", "1Gx", "1e3m", "Mi", "1.2.3", "0x10", "1KI", "1e", "e3", "1e99999",
    True, None, [], {}, float("inf"), float("nan"),
])
def test_anything_else_is_refused_with_the_decoders_message(text: object) -> None:
    with pytest.raises(QuantityError, match=r"quantities must match") as refused:
        parse_quantity(text)
    assert str(refused.value) == PARSE_ERROR


def test_the_simulator_reads_quantities_through_the_same_rule_naming_the_value() -> None:
    assert sim_parse_quantity(" 1500m ") == parse_quantity("1500m") == Fraction(3, 2)
    with pytest.raises(SimQuantityError, match=r"regular expression.*got '1\.5x'"):
        sim_parse_quantity("1.5x")
