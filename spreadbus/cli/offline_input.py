"""The input of the offline commands (``validate``, ``admit``, ``plan``): FILE and ``--now``.

Each command reads YAML or JSON object files (``-`` is stdin) and, for ``admit`` and ``plan``, an
RFC 3339 time that defaults to the clock. Everything that makes the input unreadable, a missing
file, bad YAML, a bad time, a whitelist ConfigMap that does not decode, becomes one
:class:`InputError` whose text is the reason; the command prints it with :func:`fail` and exits 2.
The clock is read here, in the shell, and passed to the rules as a value.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

from kubesemantics.documents import JSON, DocumentError, parse_documents
from kubesemantics.timestamps import parse_time

EXIT_UNREADABLE = 2


class InputError(Exception):
    """The input cannot be read or decided on; the message is the reason shown to the user."""


def read_objects(path: str) -> list[JSON]:
    """Every object in a file (``-`` is stdin)."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        return parse_documents(text)
    except OSError as exc:
        raise InputError(str(exc)) from exc
    except (DocumentError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: {exc}") from exc


def read_now(text: str | None) -> datetime:
    """``--now`` as an aware UTC time; the clock when the option is absent."""
    if text is None:
        return datetime.now(UTC)
    now = parse_time(text)
    if now is None:
        raise InputError(f"--now: not an RFC 3339 time: {text!r}")
    return now


def fail(reason: object) -> int:
    """Report unreadable input on stderr; the exit code for it."""
    print(f"error: {reason}", file=sys.stderr)
    return EXIT_UNREADABLE
