"""Kubernetes timestamps (RFC 3339, as ``metav1.Time`` writes them) read as aware UTC datetimes."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 timestamp as an aware UTC datetime; anything unparseable is None."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def format_time(moment: datetime) -> str:
    """``moment`` as ``metav1.Time`` writes it: UTC, whole seconds (an aware datetime)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def time_map(value: object) -> dict[str, datetime]:
    """A JSON map of name -> timestamp (a status's ``disruptedPods``, an annotation's timers),
    its unreadable entries dropped."""
    if not isinstance(value, Mapping):
        return {}
    out: dict[str, datetime] = {}
    for name, raw in value.items():
        when = parse_time(raw)
        if isinstance(name, str) and when is not None:
            out[name] = when
    return out
