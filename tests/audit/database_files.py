"""An audit database's bytes as the fold makes them a function of its content."""

from __future__ import annotations

from pathlib import Path

COUNTERS = (24, 92)
"""Offsets of SQLite's file change counter and its copy in the header (four bytes each): it
counts the writes, and the file is written in place, so it counts the runs too."""


def content(path: Path) -> bytes:
    """The file's bytes with the change counter zeroed."""
    data = bytearray(path.read_bytes())
    for offset in COUNTERS:
        data[offset:offset + 4] = bytes(4)
    return bytes(data)
