"""Reading fields of Kubernetes JSON that may hold anything: the wrong type reads as absent.

The rules read objects as stored, which admission may not have checked (an object written before
a webhook existed, a field the schema leaves open), and must decide on them rather than raise;
validation is where a wrong type becomes an error. Conditions (``metav1.Condition`` and the older
per-kind condition types) are read the same way, with their transition time as a datetime.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import msgspec

from kubesemantics.timestamps import parse_time


def as_map(value: object) -> Mapping[str, Any]:
    """The mapping, else an empty one; decoded JSON's dicts skip the abstract class check (this
    runs for several fields of every pod of every plan)."""
    if type(value) is dict:
        return value
    return value if isinstance(value, Mapping) else {}


def as_str(value: object) -> str:
    return value if isinstance(value, str) else ""


def as_int(value: object) -> int | None:
    """An integer, never a boolean (JSON ``true`` is not 1 here)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class Condition(msgspec.Struct, frozen=True):
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: datetime | None = None


def conditions(value: object) -> tuple[Condition, ...]:
    """The conditions of a ``status.conditions``-shaped list; entries that are not objects skip."""
    if not isinstance(value, list):
        return ()
    return tuple(
        Condition(
            type=as_str(c.get("type")),
            status=as_str(c.get("status")),
            reason=as_str(c.get("reason")),
            message=as_str(c.get("message")),
            last_transition_time=parse_time(c.get("lastTransitionTime")),
        )
        for c in value
        if isinstance(c, Mapping)
    )
