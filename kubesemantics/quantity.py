"""Kubernetes resource quantities (``100m``, ``1.5Gi``, ``2e3``) read as exact fractions.

The API server refuses a pod whose quantity does not parse while decoding it, before any field
validation; the text below is the decoder's. Exact fractions keep comparisons such as
``requests <= limits`` free of floating-point error.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Final

_SUFFIXES: Final[dict[str, Fraction]] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_QUANTITY: Final = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$"
)
_MAX_EXPONENT: Final = 1000
"""Exponents beyond this are refused rather than computed (``1e999999999`` would take minutes);
the API server caps quantities far below it."""

PARSE_ERROR: Final = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


class QuantityError(ValueError):
    """A value that is not a Kubernetes quantity."""


def parse_quantity(value: object) -> Fraction:
    """The exact value of a quantity given as JSON (a string or a number)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise QuantityError(PARSE_ERROR)
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise QuantityError(PARSE_ERROR)
        return Fraction(str(value))
    match = _QUANTITY.match(value)
    if not match:
        raise QuantityError(PARSE_ERROR)
    number, exponent, suffix = match.groups()
    if exponent:
        power = int(exponent[1:])
        if abs(power) > _MAX_EXPONENT:
            raise QuantityError(PARSE_ERROR)
        return Fraction(number) * Fraction(10) ** power
    return Fraction(number) * _SUFFIXES[suffix or ""]


def quantity_text(value: object) -> str:
    """A quantity as the user wrote it, for messages."""
    return value if isinstance(value, str) else str(value)
