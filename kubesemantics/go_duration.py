"""Durations in Go's ``time.Duration`` text (``10s``, ``1m0s``, ``1.5s``, ``500ms``), in seconds.

The API server writes an admission call's deadline this way (``?timeout=10s``). The grammar is
Go's ``time.ParseDuration``: an optional sign, then one or more decimal numbers, each with a unit
(``ns``, ``us``/``µs``, ``ms``, ``s``, ``m``, ``h``); ``0`` alone is zero. Anything else is not a
duration and reads as None rather than raising: a caller falls back to its own default.
"""

from __future__ import annotations

import re
from typing import Final

_UNITS: Final = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART: Final = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")


def seconds(text: str) -> float | None:
    """``text`` as a number of seconds, or None when it is not a Go duration."""
    sign = 1.0
    rest = text
    if rest[:1] in ("+", "-"):
        sign = -1.0 if rest[0] == "-" else 1.0
        rest = rest[1:]
    if rest == "0":
        return 0.0
    if not rest:
        return None
    total = 0.0
    position = 0
    while position < len(rest):
        part = _PART.match(rest, position)
        if part is None or part.group(1) in ("", "."):
            return None
        total += float(part.group(1)) * _UNITS[part.group(2)]
        position = part.end()
    return sign * total
