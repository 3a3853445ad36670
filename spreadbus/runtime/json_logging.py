"""JSON log lines on stderr, one object per line, so log shippers need no parsing rules.

Every line has ``ts`` (RFC 3339 UTC), ``level``, ``service``, ``logger`` and ``msg``; values passed
with ``extra={...}`` become top-level keys, and exceptions go to ``exc``.

Signature::

    configure_logging(service: str, level: str = "INFO", stream: TextIO | None = None) -> None
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any, Final, TextIO

import msgspec

_STANDARD: Final = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", None, None)).keys() | {"message", "asctime"}
)
_ENCODER: Final = msgspec.json.Encoder()


class JsonFormatter(logging.Formatter):
    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "service": self.service,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                line[key] = value
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        try:
            return _ENCODER.encode(line).decode()
        except (TypeError, msgspec.EncodeError):
            safe = {
                k: v if isinstance(v, int | float | str | bool) else str(v)
                for k, v in line.items()
            }
            return _ENCODER.encode(safe).decode()


def configure_logging(service: str, level: str = "INFO", stream: TextIO | None = None) -> None:
    """Replace the root handlers with one JSON handler."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter(service))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
