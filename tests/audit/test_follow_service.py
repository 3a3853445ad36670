"""``spreadbus audit follow``: the fold as a service, ready once caught up, with metrics."""

from __future__ import annotations

import asyncio
import sqlite3
import urllib.request
from pathlib import Path

from nats.aio.client import Client

from spreadbus.audit.settings import AuditSettings
from spreadbus.cli.audit import CAUGHT_UP, follow_main
from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.service import ServiceContext, run_service
from spreadbus.runtime.stream_setup import ensure_streams
from tests.audit.bus_history import publish_all
from tests.audit.history_messages import story
from tests.fixtures.polling import wait_until_async


def pods(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        try:
            value: int = conn.execute("SELECT COUNT(*) FROM pods").fetchone()[0]
        except sqlite3.OperationalError:
            return 0
    return value


async def test_follow_folds_live_and_reports_ready_and_its_position(
    nats_server: NatsServer, nats_client: Client, tmp_path: Path
) -> None:
    await ensure_streams(nats_client.jetstream())
    db = tmp_path / "audit.db"
    settings = AuditSettings(nats_url=(nats_server.url,), db=str(db), http_port=0,
                             http_host="127.0.0.1")
    contexts: list[ServiceContext] = []

    async def main(ctx: ServiceContext) -> None:
        contexts.append(ctx)
        await follow_main(settings, ctx)

    stopping = asyncio.Event()
    service = asyncio.create_task(run_service("audit", settings, main,
                                              conditions=(CAUGHT_UP,), stopping=stopping))
    try:
        await wait_until_async(lambda: contexts, what="the service started")
        ctx = contexts[0]
        await publish_all(nats_client, story())
        await wait_until_async(lambda: pods(db) == 3, what="the pods folded", timeout=20)
        await wait_until_async(lambda: ctx.gate.ready, what="ready once caught up")
        url = f"http://127.0.0.1:{ctx.health.port}/metrics"

        async def metrics() -> bytes:
            return await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read())

        last = (await nats_client.jetstream().stream_info("HISTORY")).state.last_seq

        async def all_folded() -> bool:
            return f"spreadbus_audit_position {last}.0".encode() in await metrics()

        await wait_until_async(all_folded, what="every message folded", timeout=10)
        assert f"spreadbus_audit_messages_total {last}.0".encode() in await metrics()
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            assert conn.execute("SELECT COUNT(*) FROM admissions").fetchone()[0] == 3
    finally:
        stopping.set()
        assert await asyncio.wait_for(service, 15) == 0
