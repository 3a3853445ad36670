"""IntOrString values ("25%" or 3) scaled against a total, as upstream ``intstr`` does."""

from __future__ import annotations


class ScaledValueError(ValueError):
    """Neither an integer nor a percentage string."""


def scaled_value(raw: int | str | None, total: int, *, round_up: bool, default: int = 0) -> int:
    if raw is None:
        return default
    if isinstance(raw, bool):
        raise ScaledValueError(f"invalid value for IntOrString: {raw!r}")
    if isinstance(raw, int):
        return raw
    text = raw.strip()
    if not text.endswith("%"):
        try:
            return int(text)
        except ValueError as exc:
            raise ScaledValueError(
                f"invalid value for IntOrString: invalid type: string is not a percentage ({raw!r})"
            ) from exc
    try:
        percent = int(text[:-1])
    except ValueError as exc:
        raise ScaledValueError(f"invalid value {raw!r}: percentage is not an integer") from exc
    exact = percent * total
    return -(-exact // 100) if round_up else exact // 100


def is_percent(raw: int | str | None) -> bool:
    return isinstance(raw, str) and raw.strip().endswith("%")


__all__ = ["ScaledValueError", "is_percent", "scaled_value"]
