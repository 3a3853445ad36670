"""IntOrString values (``3`` or ``"30%"``) scaled against a total the way Kubernetes does.

Kubernetes keeps the JSON type: ``3`` is an Int, ``"3"`` is a String, and a String must end in
``%`` to scale. The percentage is parsed with Go's ``strconv.Atoi`` rules (optional sign, ASCII
digits, nothing else), so ``"0.2%"`` and ``" 5%"`` are errors. Scaling with ``round_up`` is
``ceil(pct * total / 100)``: 34%/33%/33% of 10 is 4/4/4, which is how WorkloadSpread limits can
sum above the total.
"""

from __future__ import annotations

import re

IntOrStr = int | str

_ATOI = re.compile(r"^[+-]?[0-9]+$")
_INT64_MAX = 2**63 - 1


class IntOrStrError(ValueError):
    """The value cannot be scaled (not an int, not an ``N%`` string)."""


def is_int(value: object) -> bool:
    """Whether a decoded JSON value is an IntOrString of the Int type (bool is not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_intorstr(value: object) -> bool:
    return is_int(value) or isinstance(value, str)


def _atoi(text: str) -> int:
    if not _ATOI.match(text):
        raise IntOrStrError(
            f'invalid value "{text}": strconv.Atoi: parsing "{text}": invalid syntax'
        )
    number = int(text)
    if abs(number) > _INT64_MAX:
        raise IntOrStrError(
            f'invalid value "{text}": strconv.Atoi: parsing "{text}": value out of range'
        )
    return number


def percent(value: str) -> int:
    """The number in ``"N%"``; raises :class:`IntOrStrError` like ``getIntOrPercentValueSafely``."""
    if not value.endswith("%"):
        raise IntOrStrError("invalid type: string is not a percentage")
    return _atoi(value[:-1])


def scaled_value(value: object, total: int, *, round_up: bool) -> int:
    """``GetScaledValueFromIntOrPercent``: an Int as is, ``"N%"`` of ``total``."""
    if is_int(value):
        assert isinstance(value, int)
        return value
    if isinstance(value, str):
        pct = percent(value)
        exact = pct * total
        return -((-exact) // 100) if round_up else exact // 100
    raise IntOrStrError("invalid type: neither int nor percentage")


def int_value(value: object) -> int:
    """``IntOrString.IntValue()``: a String is Atoi'd, and any parse error yields 0."""
    if is_int(value):
        assert isinstance(value, int)
        return value
    if isinstance(value, str):
        try:
            return _atoi(value)
        except IntOrStrError:
            return 0
    return 0


__all__ = [
    "IntOrStr",
    "IntOrStrError",
    "int_value",
    "is_int",
    "is_intorstr",
    "percent",
    "scaled_value",
]
