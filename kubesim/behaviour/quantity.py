"""Kubernetes resource quantities ("100m", "1.5Gi", "2e3") as exact fractions.

The scheduler compares requests with allocatable in integer units: millicores for cpu (rounded up,
as ``Quantity.MilliValue`` does) and whole units for everything else (rounded up, as ``Value``).
"""

from __future__ import annotations

import math
from fractions import Fraction

from kubesemantics.quantity import QuantityError
from kubesemantics.quantity import parse_quantity as read_quantity

__all__ = ["QuantityError", "format_milli", "milli_value", "parse_quantity", "value"]

def parse_quantity(text: str | int | float) -> Fraction:
    """The exact value of a quantity (read by :mod:`kubesemantics.quantity`, as spreadbus
    validation reads it); raises :class:`QuantityError` naming the value when malformed."""
    try:
        return read_quantity(text.strip() if isinstance(text, str) else text)
    except QuantityError as exc:
        raise QuantityError(f"{exc}, got {text!r}") from None


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
