"""A time plus a number of seconds, for deadlines read from stored objects.

A stored ``timeAdded``, ``creationTimestamp`` or seconds field may be anything: a deadline past
the end of the calendar is never reached, one before its start has long passed, so a plan
answers instead of failing on an out-of-range date.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Final

LATEST: Final = datetime.max.replace(tzinfo=UTC)
EARLIEST: Final = datetime.min.replace(tzinfo=UTC)


def after(start: datetime, seconds: float) -> datetime:
    try:
        return start + timedelta(seconds=seconds)
    except OverflowError:
        return LATEST if seconds > 0 else EARLIEST
