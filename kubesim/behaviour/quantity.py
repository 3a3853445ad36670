"""Kubernetes resource quantities ("100m", "1.5Gi", "2e3") as exact fractions.

The scheduler compares requests with allocatable in integer units: millicores for cpu (rounded up,
as ``Quantity.MilliValue`` does) and whole units for everything else (rounded up, as ``Value``).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_SUFFIXES: dict[str, Fraction] = {
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
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$"
)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(text: str | int | float) -> Fraction:
    """The exact value of a quantity; raises :class:`QuantityError` when malformed."""
    if isinstance(text, bool):
        raise QuantityError(f"quantities must match the regular expression, got {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        return Fraction(str(text))
    match = _QUANTITY.match(text.strip())
    if not match:
        raise QuantityError(
            f"quantities must match the regular expression "
            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {text!r}"
        )
    number, exponent, suffix = match.groups()
    value = Fraction(number)
    if exponent:
        return value * Fraction(10) ** int(exponent[1:])
    return value * _SUFFIXES[suffix or ""]


def milli_value(text: str | int | float) -> int:
    """Millicores (or milli-units), rounded up."""
    return math.ceil(parse_quantity(text) * 1000)


def value(text: str | int | float) -> int:
    """Whole units (bytes, pods), rounded up."""
    return math.ceil(parse_quantity(text))


_DECIMAL_SUFFIXES = ("", "k", "M", "G", "T", "P", "E")


def format_milli(milli: int) -> str:
    """A milli-value in upstream's canonical DecimalSI form: ``250m``, ``2``, ``1500m``, ``3k``."""
    if milli % 1000:
        return f"{milli}m"
    whole, exponent = milli // 1000, 0
    while whole and whole % 1000 == 0 and exponent < len(_DECIMAL_SUFFIXES) - 1:
        whole //= 1000
        exponent += 1
    return f"{whole}{_DECIMAL_SUFFIXES[exponent]}"
