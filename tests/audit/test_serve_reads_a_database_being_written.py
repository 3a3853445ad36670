"""``spreadbus audit serve`` beside a replay writing the same file: every page answers while the
batches commit, each committed batch is seen at once, and the counts after the replay's final
vacuum are the file's."""

from __future__ import annotations

import sqlite3
import threading
import urllib.error
import urllib.request
from pathlib import Path

from nats.aio.client import Client

from spreadbus.audit.replay import replay
from spreadbus.audit.store import AuditStore
from spreadbus.runtime.stream_setup import ensure_streams
from tests.audit.bus_history import publish_all
from tests.audit.history_messages import admission, created, point, story
from tests.audit.served import get_json, serving

PODS = 60
PAGES = ("/audit", "/audit/pod_events", "/audit/pod_events.json?_sort_desc=seq",
         "/audit.json", "/audit/pods?_sort=name")


def more_pods(first: int) -> list[object]:
    events: list[object] = []
    for i in range(first, first + PODS):
        ts = 100.0 + i
        events += [admission(i, "elastic", 2, ts=ts), created(i, "elastic", ts=ts + 0.1),
                   point(i, "bound", ts=ts + 0.2, node=f"elastic-{i}")]
    return events


def failures_of(base: str) -> list[str]:
    """Each page that did not answer 200 with a page free of SQLite's corruption message."""
    failed = []
    for page in PAGES:
        try:
            with urllib.request.urlopen(base + page, timeout=10) as response:
                body = response.read()
        except urllib.error.HTTPError as error:
            failed.append(f"{page}: {error.code} {error.read()[:300]!r}")
            continue
        if b"malformed" in body:
            failed.append(f"{page}: {body[:300]!r}")
    return failed


class Reader(threading.Thread):
    """Reads every page in a loop, as a browser left open does, until told to stop."""

    def __init__(self, base: str) -> None:
        super().__init__(daemon=True)
        self.base = base
        self.stopping = threading.Event()
        self.rounds = 0
        self.failures: list[str] = []

    def run(self) -> None:
        while not self.stopping.is_set():
            self.failures += failures_of(self.base)
            self.rounds += 1


def counts(db: Path) -> dict[str, int]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        names = [row[0] for row in conn.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE '%_fts%'")]
        return {name: conn.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0]
                for name in names}


async def test_a_replay_under_way_is_served_live(nats_client: Client, tmp_path: Path) -> None:
    await ensure_streams(nats_client.jetstream())
    await publish_all(nats_client, story())
    db = tmp_path / "audit.db"
    store = AuditStore(db)
    await replay(nats_client, store)
    store.close()

    with serving(db, tmp_path) as served:
        await publish_all(nats_client, more_pods(first=10))
        reader = Reader(served.base)
        reader.start()
        store = AuditStore(db)
        seen: list[int] = []

        def after_each_batch(folded: int, total: int) -> None:
            # Between two commits: every page answers, and shows the batch just committed.
            assert failures_of(served.base) == []
            position = get_json(f"{served.base}/audit/replay_position.json?_shape=array")
            assert position[0]["last_seq"] == store.last_seq, (position, store.last_seq)
            seen.append(store.last_seq)

        try:
            result = await replay(nats_client, store, progress=after_each_batch,
                                  batch_seconds=0.01, max_batch=20)
        finally:
            store.close()
            reader.stopping.set()
            reader.join(30)
        assert result.folded == 3 * PODS
        assert len(set(seen)) >= 3, f"the replay committed in several batches: {seen}"
        assert reader.rounds > 0
        assert reader.failures == []

        # After the final vacuum, as after every batch: the pages answer with the file's counts.
        assert failures_of(served.base) == []
        expected = counts(db)
        assert expected["pods"] == 3 + PODS
        served_counts = {t["name"]: t["count"]
                         for t in get_json(f"{served.base}/audit.json")["tables"]}
        assert {name: served_counts[name] for name in expected} == expected
        last = get_json(f"{served.base}/audit/pod_events.json?_shape=array&_sort_desc=seq"
                        "&_size=1")
        assert last[0]["name"] == f"web-{10 + PODS - 1}"
