"""Quantities written back as the API server serializes them (``1500m``, ``48Gi``, ``3k``).

A sum of quantities keeps the format of its first term, and the text is Kubernetes' canonical
form of that format: the largest power of 1000 (DecimalSI) or 1024 (BinarySI) whose multiple
the value is; a BinarySI value below 1024 in magnitude, or not whole, is written as DecimalSI.
Values are kept to nano units, the finest a quantity holds.
"""

from __future__ import annotations

import math
from enum import Enum
from fractions import Fraction
from typing import Final

from kubesemantics.quantity import parse_quantity


class QuantityFormat(Enum):
    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


_DECIMAL_SUFFIXES: Final = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T",
                            15: "P", 18: "E"}
_BINARY_SUFFIXES: Final = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_NANO: Final = Fraction(1, 10**9)


def format_of(value: object) -> QuantityFormat:
    """The format a quantity was written in: a binary suffix, an exponent, or decimal."""
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("i"):
            return QuantityFormat.BINARY_SI
        if "e" in text.lower() and not text.endswith(("E", "e")):
            return QuantityFormat.DECIMAL_EXPONENT
    return QuantityFormat.DECIMAL_SI


def _nano_rounded(value: Fraction) -> Fraction:
    """Rounded up to a whole number of nano units, as a parsed quantity is."""
    return Fraction(math.ceil(value / _NANO)) * _NANO


def canonical(value: Fraction, fmt: QuantityFormat) -> str:
    """The canonical text of ``value`` in ``fmt``."""
    value = _nano_rounded(value)
    if fmt is QuantityFormat.BINARY_SI and abs(value) >= 1024 and value.denominator == 1:
        number, power = int(value), 0
        while power < len(_BINARY_SUFFIXES) - 1 and number % 1024 == 0:
            number //= 1024
            power += 1
        return f"{number}{_BINARY_SUFFIXES[power]}"
    mantissa, exponent = int(value / _NANO), -9
    while mantissa and mantissa % 1000 == 0 and exponent < 18:
        mantissa //= 1000
        exponent += 3
    if mantissa == 0:
        return "0"
    if fmt is QuantityFormat.DECIMAL_EXPONENT:
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    return f"{mantissa}{_DECIMAL_SUFFIXES[exponent]}"


def milli_quantity(milli: int) -> str:
    """``resource.NewMilliQuantity(milli, DecimalSI)`` as text."""
    return canonical(Fraction(milli, 1000), QuantityFormat.DECIMAL_SI)


def whole_quantity(value: int, fmt: QuantityFormat) -> str:
    """``resource.NewQuantity(value, fmt)`` as text."""
    return canonical(Fraction(value), fmt)


def sum_quantities(values: list[object]) -> str:
    """The sum of parsed quantities in the format of the first, as ``Quantity.Add`` leaves it."""
    total = sum((parse_quantity(v) for v in values), Fraction(0))
    return canonical(total, format_of(values[0]) if values else QuantityFormat.DECIMAL_SI)
