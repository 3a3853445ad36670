"""The input of the offline commands (``validate``, ``admit``, ``plan``): FILE and ``--now``.

Each command reads YAML or JSON object files (``-`` is stdin) and, for ``admit`` and ``plan``, an
RFC 3339 time that defaults to the clock. Everything that makes the input unreadable, a missing
file, bad YAML, a bad time, a whitelist ConfigMap that does not decode, becomes one
:class:`InputError` whose text is the reason, naming the file it is about; the command prints it
with :func:`fail` and exits 2: ``error: FILE: reason`` on stderr, and with ``-o json`` also
``{"error": reason, "file": FILE}`` on stdout (``file`` null when the reason is about no file),
so a script reading the JSON answer gets one. The clock is read here, in the shell, and passed to
the rules as a value.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from kubesemantics.documents import JSON, DocumentError, parse_documents
from kubesemantics.timestamps import parse_time

EXIT_UNREADABLE = 2


class InputError(Exception):
    """The input cannot be read or decided on; the message is the reason shown to the user,
    ``file`` the input file it is about, if one."""

    def __init__(self, reason: str, *, file: str | None = None) -> None:
        super().__init__(reason)
        self.reason, self.file = reason, file

    def __str__(self) -> str:
        return self.reason if self.file is None else f"{self.file}: {self.reason}"


def read_objects(path: str, option: str = "-f") -> list[JSON]:
    """Every object in a file (``-`` is stdin); ``option`` is the one that named it."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        return parse_documents(text)
    except OSError as exc:
        raise InputError(f"{exc.strerror or exc} ({option})", file=path) from exc
    except (DocumentError, UnicodeDecodeError) as exc:
        raise InputError(str(exc), file=path) from exc


def read_now(text: str | None) -> datetime:
    """``--now`` as an aware UTC time; the clock when the option is absent."""
    if text is None:
        return datetime.now(UTC)
    now = parse_time(text)
    if now is None:
        raise InputError(f"--now: not an RFC 3339 time: {text!r}")
    return now


def fail(reason: object, output: str = "text", *, file: str | None = None) -> int:
    """Report unreadable input on stderr (and as JSON on stdout for ``-o json``); the exit code
    for it. An :class:`InputError` names its own file."""
    text = str(reason)
    if isinstance(reason, InputError):
        text, file = reason.reason, reason.file
    print(f"error: {text}" if file is None else f"error: {file}: {text}", file=sys.stderr)
    if output == "json":
        print(json.dumps({"error": text, "file": file}))
    return EXIT_UNREADABLE
