"""A connection opened on the audit database before a replay's final vacuum (Datasette keeps
its connections) reads the vacuumed file right: the vacuum is made in place, and the schema
cookie it leaves differs whenever the tables' root pages moved."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from events.codec import encode
from spreadbus.audit.store import COOKIE_FLOOR, AuditStore, schema_cookie
from tests.audit.history_messages import story

MESSAGES = [(seq, "history.x", encode(e))  # type: ignore[arg-type]
            for seq, e in enumerate(story(), start=1)]
LAYOUT = "SELECT type, name, tbl_name, rootpage, sql FROM sqlite_schema ORDER BY rowid"


def roots(conn: sqlite3.Connection) -> dict[str, int]:
    return {row[0]: row[1] for row in conn.execute("SELECT name, rootpage FROM sqlite_schema")}


def story_of(conn: sqlite3.Connection) -> tuple[object, ...]:
    """What a reader asks through the tables and their indexes."""
    return (conn.execute("SELECT COUNT(*) FROM pod_events").fetchone()[0],
            conn.execute("SELECT node FROM pods WHERE namespace = 'ns' AND name = 'web-3'")
            .fetchall(),
            conn.execute("SELECT COUNT(*) FROM admissions_fts WHERE admissions_fts MATCH "
                         "'full'").fetchone()[0])


def test_a_reader_open_before_the_vacuum_reads_the_vacuumed_file(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    store = AuditStore(db)
    store.apply(MESSAGES[:6])
    reader = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        assert story_of(reader) == (4, [], 0)
        before = roots(reader)
        store.apply(MESSAGES[6:])
        store.finish()
        assert roots(reader) != before, "the vacuum moved root pages: the reader rereads them"
        assert story_of(reader) == (9, [("elastic-1",)], 1)
    finally:
        reader.close()
        store.close()


def test_a_schema_changed_between_two_vacuums_is_reread(tmp_path: Path) -> None:
    """A file a newer release added a table to: the next vacuum moves the indexes after it,
    and a reader that read the schema before must not reuse its root pages."""
    db = tmp_path / "audit.db"
    store = AuditStore(db)
    store.apply(MESSAGES)
    store.finish()
    reader = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        expected = story_of(reader)
        before = roots(reader)
        store.conn.execute("CREATE TABLE a_later_table (id INTEGER PRIMARY KEY, value TEXT)")
        store.finish()
        moved = {name for name, page in roots(reader).items() if before.get(name) != page}
        assert "idx_pods_namespace_name" in moved
        assert story_of(reader) == expected
    finally:
        reader.close()
        store.close()


def test_the_cookie_is_one_per_layout_and_above_any_count_of_schema_changes(
    tmp_path: Path,
) -> None:
    store = AuditStore(tmp_path / "audit.db")
    layout = store.conn.execute(LAYOUT).fetchall()
    store.close()
    moved = [(*row[:3], row[3] + 1 if row[3] else row[3], row[4]) for row in layout]
    assert schema_cookie(layout) == schema_cookie(list(layout))
    assert schema_cookie(moved) != schema_cookie(layout)
    assert min(schema_cookie(layout), schema_cookie(moved)) >= COOKIE_FLOOR
    assert max(schema_cookie(layout), schema_cookie(moved)) < 1 << 31
