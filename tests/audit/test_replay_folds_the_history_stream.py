"""``HISTORY`` on a real server: copies of admissions, plans and outcomes sourced from their
streams next to the watcher's points, replayed into SQLite, identical but for the change
counter when replayed again, resumed after an interruption, and bounded by --until."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

from nats.aio.client import Client

from spreadbus.audit.replay import replay
from spreadbus.audit.store import AuditStore
from spreadbus.runtime.stream_setup import ensure_streams
from tests.audit.bus_history import publish_all
from tests.audit.database_files import content
from tests.audit.history_messages import story
from tests.fixtures.polling import wait_until_async


async def replay_into(nc: Client, path: Path, **bounds: float) -> int:
    store = AuditStore(path)
    try:
        return (await replay(nc, store, batch_seconds=0.05, **bounds)).folded
    finally:
        store.close()


def count(path: Path, table: str) -> int:
    with sqlite3.connect(path) as conn:
        value: int = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    return value


async def test_history_is_replayed_into_sqlite_the_same_way_each_time(
    nats_client: Client, tmp_path: Path
) -> None:
    await ensure_streams(nats_client.jetstream())
    events = story()
    await publish_all(nats_client, events)

    first, second = tmp_path / "a.db", tmp_path / "b.db"
    assert await replay_into(nats_client, first) == len(events)
    assert await replay_into(nats_client, second) == len(events)
    assert content(first) == content(second)
    assert count(first, "admissions") == 3
    assert count(first, "plans") == 2
    assert count(first, "outcomes") == 2
    assert count(first, "pods") == 3
    with sqlite3.connect(first) as conn:
        row = conn.execute("SELECT subset, node, deleted_seq IS NOT NULL FROM pods "
                           "WHERE name = 'web-3'").fetchone()
    assert row == ("elastic", "elastic-1", 1)

    # Nothing new: a replay into the same file folds nothing and leaves it as it was.
    assert await replay_into(nats_client, first) == 0
    assert content(first) == content(second)


async def test_an_interrupted_replay_resumes_to_the_same_file(
    nats_client: Client, tmp_path: Path
) -> None:
    await ensure_streams(nats_client.jetstream())
    events = story()
    await publish_all(nats_client, events)
    whole = tmp_path / "whole.db"
    await replay_into(nats_client, whole)

    resumed = tmp_path / "resumed.db"
    store = AuditStore(resumed)
    task = asyncio.create_task(replay(nats_client, store, batch_seconds=0.5, max_batch=4))
    # Cut the replay off once it has committed its first transaction of four messages.
    await wait_until_async(lambda: store.last_seq > 0, what="a first transaction",
                           interval=0.001)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    store.close()
    with sqlite3.connect(resumed) as conn:
        cut = conn.execute("SELECT last_seq, messages FROM replay_position").fetchone()
    # A batch already being written when the replay is cancelled still commits, and a fast
    # disk may commit another before the cancellation lands: whole batches, never all of them.
    last_seq, messages = cut
    assert last_seq == messages
    assert last_seq % 4 == 0
    assert 0 < last_seq < len(events)
    await replay_into(nats_client, resumed)
    assert content(resumed) == content(whole)


async def test_until_stops_before_later_messages_and_the_next_run_goes_on(
    nats_client: Client, tmp_path: Path
) -> None:
    await ensure_streams(nats_client.jetstream())
    events = story()
    await publish_all(nats_client, events)
    path = tmp_path / "a.db"
    folded = await replay_into(nats_client, path, until=1.0)
    assert folded == 0  # every story message is stamped after 1970-01-01T00:00:01
    assert await replay_into(nats_client, path) == len(events)


async def test_since_starts_a_new_database_at_the_first_message_stored_from_then(
    nats_client: Client, tmp_path: Path
) -> None:
    await ensure_streams(nats_client.jetstream())
    events = story()
    await publish_all(nats_client, events)
    assert await replay_into(nats_client, tmp_path / "later.db", since=time.time() + 3600) == 0
    assert await replay_into(nats_client, tmp_path / "hour.db", since=time.time() - 3600) == len(
        events)
