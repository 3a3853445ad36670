"""The audit database: its schema, the fold's rows written in order, and the stream position.

Tables (primary key first; ``*_json`` columns hold JSON text, keys sorted):

- ``admissions`` (``seq``) and ``admission_subsets`` (``admission_seq`` -> admissions, position):
  each webhook decision and every subset as it saw them;
- ``pod_events`` (``seq``): every pod lifecycle point; ``pods`` (``uid``): one row per pod with
  the first sequence and time of each point, its node, subset and the key of the admission that
  placed it (``admission_key`` = ``admissions.pod_key``), and the columns the features add (the
  object that placed it: :mod:`spreadbus.audit.schema`);
- ``plans`` (``id``) and ``outcomes`` (``plan_id`` -> plans): every plan and its one outcome;
  a pod's deletion cost, when a plan sets one, in ``plans.deletion_cost``;
- ``status_changes`` (``seq``) and ``subset_counts`` (``status_seq`` -> status_changes):
  governing objects' status transitions and each subset's counts in them; ``deletions``
  (``seq``): when a governing object was deleted;
- ``unknown_messages`` (``seq``): messages this release cannot decode, kept raw;
- ``replay_position`` (``stream``): the last sequence folded, and counts.

Foreign keys are declared (Datasette links them, tools can join on them) but not enforced: a
window can start after a plan and before its outcome.

Determinism: rows are written strictly in stream order, every message once (a sequence at or
below the stored position is skipped, so redelivery changes nothing), in transactions that end
with the position. :meth:`AuditStore.finish` rebuilds the full-text indexes and vacuums, so the
file's bytes depend only on the messages folded, not on how the replay was split into runs or
batches: the same range gives the same file.

Readers while it is written: the file is kept in WAL mode, so a reader (``audit serve``,
``why``) sees each committed batch and never blocks the writer, and every change, the vacuum
included, is made in place through the WAL (the file is never replaced under an open
connection, which would keep reading the old one).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

import sqlite_utils

from spreadbus.audit.fold import Row, fold
from spreadbus.audit.registered import or_registered
from spreadbus.audit.schema import ORDER, AuditSchema
from spreadbus.projection.tracking import StreamPosition, Tracked

STREAM: Final = "HISTORY"
COOKIE_FLOOR: Final = 1 << 20
"""Schema cookies :func:`schema_cookie` gives are at least this, above any count of schema
changes a new file's cookie holds."""

class AuditStore:
    """One audit database file, opened for folding; ``schema``: the features' parts of it, the
    built-in features' by default."""

    def __init__(self, path: str | Path, schema: AuditSchema | None = None) -> None:
        self.schema = schema = or_registered(schema)
        self._tables = schema.tables
        self.path = Path(path)
        # Used by one thread at a time: the replay writes from a worker thread while the event
        # loop reads the stream.
        self.conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.db = sqlite_utils.Database(self.conn)
        # Creating the schema is some forty statements, each its own transaction; none of them
        # needs to reach the disk before the first rows do.
        self.conn.execute("PRAGMA synchronous=OFF")
        self._create()
        # In WAL mode NORMAL syncs at checkpoints rather than at every commit, which cost most
        # of a replay's time. A crash of the process loses nothing committed; a power loss may
        # roll back the last batches, their position with them, so they are read again.
        self.conn.execute("PRAGMA synchronous=NORMAL")
        row = self.conn.execute(
            "SELECT last_seq, messages, unknown, since, until FROM replay_position "
            "WHERE stream = ?", (STREAM,)).fetchone()
        self.last_seq: int = row[0] if row else 0
        self.messages: int = row[1] if row else 0
        self.unknown: int = row[2] if row else 0
        self.since: float | None = row[3] if row else None
        self.until: float | None = row[4] if row else None
        self._sql: dict[tuple[str, tuple[str, ...], str], str] = {}

    def _create(self) -> None:
        """Every table, index and full-text index the file lacks: a new file's whole schema, or
        the indexes :meth:`defer_indexes` dropped, made again in the order a new file has
        them."""
        existing = set(self.db.table_names())
        for name in ORDER:
            spec = self._tables[name]
            if name not in existing:
                self.db[name].create(spec["columns"], pk=spec["pk"],  # type: ignore[union-attr]
                                     foreign_keys=spec.get("foreign_keys"))
            for columns in spec.get("indexes", ()):
                self.db[name].create_index(list(columns), if_not_exists=True)  # type: ignore[union-attr]
            if spec.get("fts") and name not in existing:
                self.db[name].enable_fts(spec["fts"], create_triggers=True)  # type: ignore[union-attr]

    def defer_indexes(self) -> None:
        """Drop the secondary indexes until :meth:`finish` (or the next opening) makes them
        again over everything at once, cheaper than keeping them up to date row by row when a
        replay brings more rows than the file holds. Readers meanwhile get their answers more
        slowly. The file after :meth:`finish` is the same: a vacuum lays indexes out in the
        order they were made, and they are made again in the order a new file has them."""
        names = [name for (name,) in self.conn.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL")]
        for name in names:
            self.conn.execute(f'DROP INDEX "{name}"')

    def set_range(self, since: float | None, until: float | None) -> None:
        """Record the time range a replay was asked for (kept with the position)."""
        self.since, self.until = since, until

    def apply(self, messages: Iterable[tuple[int, str, bytes]]) -> int:
        """Fold messages (``seq``, subject, data), in order, in one transaction; returns how many
        were new. A sequence at or below the position is a redelivery and skipped
        (:class:`~spreadbus.projection.tracking.Tracked`); the position moves only once the
        batch's transaction commits."""
        rows: list[Row] = []
        folded = 0
        unknown = self.unknown
        position = StreamPosition(self.last_seq)
        schema = self.schema
        tracked = Tracked(lambda seq, subject, data: fold(seq, subject, data, schema), position)
        for seq, subject, data in messages:
            out = tracked.apply(seq, subject, data)
            if out is None:
                continue
            if out and out[0].table == "unknown_messages":
                unknown += 1
            rows += out
            folded += 1
        if not folded:
            return 0
        last = position.last_seq
        self.conn.execute("BEGIN")
        try:
            self._write(rows)
            self.conn.execute(
                "INSERT INTO replay_position (stream, last_seq, messages, unknown, since, until) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (stream) DO UPDATE SET "
                "last_seq = excluded.last_seq, messages = excluded.messages, "
                "unknown = excluded.unknown, since = excluded.since, until = excluded.until",
                (STREAM, last, self.messages + folded, unknown, self.since, self.until))
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.last_seq, self.messages, self.unknown = last, self.messages + folded, unknown
        return folded

    def _write(self, rows: Sequence[Row]) -> None:
        """Rows of one batch, grouped by statement, each group in the batch's order.

        Only the order within a table decides the file (its rowids); ``fill`` rows always name
        every column of their table, so all of a table's rows share one statement and keep
        their order whatever the batch boundaries. The ``fill`` rows of one key in a batch are
        merged first, each column the first value it is given, which is what writing them one
        after another leaves (a pod's points are five upserts of one row, the costliest part of
        a write)."""
        groups: dict[tuple[str, tuple[str, ...], str], list[Any]] = {}
        filled: dict[tuple[str, tuple[Any, ...]], dict[str, Any]] = {}
        for row in rows:
            values = row.values
            if row.mode == "fill":
                columns = self._tables[row.table]["columns"]
                key = self._keys(row.table)
                pk = tuple(values.get(c) for c in key)
                held = None if None in pk else filled.get((row.table, pk))
                if held is not None:
                    for c in columns:
                        if held[c] is None:
                            held[c] = values.get(c)
                    continue
                values = {c: values.get(c) for c in columns}
                if None not in pk:
                    filled[(row.table, pk)] = values
                groups.setdefault((row.table, tuple(values), row.mode), []).append(values)
                continue
            groups.setdefault((row.table, tuple(values), row.mode), []).append(
                tuple(values.values()))
        for (table, columns, mode), params in groups.items():
            if mode == "fill":
                params = [tuple(values.values()) for values in params]
            self.conn.executemany(self._statement(table, columns, mode), params)

    def _keys(self, table: str) -> tuple[str, ...]:
        pk = self._tables[table]["pk"]
        return (pk,) if isinstance(pk, str) else tuple(pk)

    def _statement(self, table: str, columns: tuple[str, ...], mode: str) -> str:
        key = (table, columns, mode)
        sql = self._sql.get(key)
        if sql is None:
            names = ", ".join(f'"{c}"' for c in columns)
            marks = ", ".join("?" for _ in columns)
            if mode == "insert":
                sql = f'INSERT OR IGNORE INTO "{table}" ({names}) VALUES ({marks})'
            else:
                keys = self._keys(table)
                fills = ", ".join(f'"{c}" = COALESCE("{table}"."{c}", excluded."{c}")'
                                  for c in columns if c not in keys)
                sql = (f'INSERT INTO "{table}" ({names}) VALUES ({marks}) '
                       f'ON CONFLICT ({", ".join(keys)}) DO UPDATE SET {fills}')
            self._sql[key] = sql
        return sql

    def finish(self) -> None:
        """Make the file's bytes a function of its content alone: the full-text indexes are
        made anew (their segments and counters record how inserts were batched), the database
        is vacuumed in place, its schema cookie set from its schema (a vacuum counts itself in
        the cookie) and the WAL copied back into the file."""
        self._create()  # the indexes a bulk replay deferred
        for name in ORDER:
            if self._tables[name].get("fts"):
                self.conn.execute(f'INSERT INTO "{name}_fts"("{name}_fts") VALUES (\'rebuild\')')
        self.conn.execute("VACUUM")
        layout = self.conn.execute(
            "SELECT type, name, tbl_name, rootpage, sql FROM sqlite_schema ORDER BY rowid")
        self.conn.execute(f"PRAGMA schema_version = {schema_cookie(layout)}")
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        self.conn.close()


def schema_cookie(layout: Iterable[tuple[object, ...]]) -> int:
    """The schema cookie for a schema's rows (type, name, table, root page, SQL), the same for
    the same rows.

    A connection rereads the schema only when the cookie differs from the one it read it
    with; a vacuum moves tables' root pages, so a cookie that stayed fixed across vacuums
    would leave a reader of the live file reading the old pages. One per layout keeps the file
    a function of its content and a reader's schema right."""
    digest = hashlib.sha256(repr(list(layout)).encode()).digest()
    return COOKIE_FLOOR + int.from_bytes(digest[:4], "big") % ((1 << 31) - COOKIE_FLOOR)
