"""Points in time as a person types them: ISO 8601, Unix seconds, or a duration ago."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Final

_AGO: Final = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNIT: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_time(text: str, *, now: float) -> float:
    """Unix seconds of ``2026-11-26T10:00:00Z`` (no zone: UTC), ``1764151200``, or ``2h``
    (``now`` minus two hours; units s, m, h, d). Raises ValueError naming the text."""
    text = text.strip()
    ago = _AGO.fullmatch(text)
    if ago:
        return now - float(ago.group(1)) * _UNIT[ago.group(2)]
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{text!r} is not a time: give ISO 8601, Unix seconds or a duration like 2h"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def show_time(ts: float) -> str:
    """``2026-11-26T10:00:00.250Z``: UTC, milliseconds."""
    moment = datetime.fromtimestamp(ts, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
