"""Indexes dropped for a bulk load are made again by ``finish`` (or by opening the file after an
interrupted load), and the finished file is the one a load keeping its indexes writes."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from events.codec import encode
from events.messages import Event
from spreadbus.audit.store import AuditStore
from tests.audit.database_files import content
from tests.audit.history_messages import story


def _messages() -> list[tuple[int, str, bytes]]:
    events: list[Any] = story()
    return [(seq, "history.x", encode(event)) for seq, event in enumerate(events, start=1)
            if isinstance(event, Event)]


def _indexes(path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT name, sql FROM sqlite_schema WHERE type = 'index' "
                            "AND sql IS NOT NULL ORDER BY rowid").fetchall()


def _load(path: Path, *, defer: bool, reopen_after: int | None = None) -> None:
    messages = _messages()
    store = AuditStore(path)
    if defer:
        store.defer_indexes()
    cut = len(messages) if reopen_after is None else reopen_after
    store.apply(messages[:cut])
    if reopen_after is not None:
        store.close()  # interrupted: no finish
        store = AuditStore(path)
        assert _indexes(path), "opening the file makes the dropped indexes again"
        store.defer_indexes()
        store.apply(messages[cut:])
    store.finish()
    store.close()


def test_a_bulk_load_ends_with_the_indexes_and_the_file_of_a_plain_one(tmp_path: Path) -> None:
    plain, deferred, interrupted = (tmp_path / f"{n}.db" for n in ("plain", "deferred", "cut"))
    _load(plain, defer=False)
    _load(deferred, defer=True)
    _load(interrupted, defer=True, reopen_after=5)
    assert len(_messages()) > 5
    assert _indexes(plain)
    assert _indexes(deferred) == _indexes(plain)
    assert _indexes(interrupted) == _indexes(plain)
    assert content(deferred) == content(plain)
    assert content(interrupted) == content(plain)


def test_deferring_drops_every_secondary_index(tmp_path: Path) -> None:
    store = AuditStore(tmp_path / "a.db")
    assert _indexes(store.path)
    store.defer_indexes()
    assert _indexes(store.path) == []
    store.close()
