"""How fast the taint manager evicts: Karmada's ``--resource-eviction-rate`` (0.5 per second by
default), so that a cluster going away does not move every binding on it in the same instant.

Pure: the time of the last eviction and ``now`` in, whether another may be made out. The rule
keeps the time; ``spreadbus plan`` makes every eviction due at ``--now`` at once, as one round.
"""

from __future__ import annotations

from typing import Final

DEFAULT_PER_SECOND: Final = 0.5


def next_allowed(last: float | None, per_second: float) -> float | None:
    """When the next eviction may be made after one at ``last`` (None: at once); a rate of 0 or
    less is no limit."""
    if last is None or per_second <= 0:
        return None
    return last + 1.0 / per_second


def allows(last: float | None, per_second: float, now: float) -> bool:
    allowed = next_allowed(last, per_second)
    return allowed is None or now >= allowed
