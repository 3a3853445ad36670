"""The snapshot store gives back exactly what was saved, however many chunks it spans."""

from __future__ import annotations

import random

from nats.aio.client import Client

from spreadbus.runtime.snapshot_store import SnapshotStore


async def test_a_blob_of_many_chunks_comes_back_byte_for_byte(nats_client: Client) -> None:
    store = SnapshotStore(nats_client)
    blob = random.Random(3).randbytes(5 * (128 << 10) + 17)  # five full chunks and a bit
    await store.save("planner.c1", blob)
    assert await store.load("planner.c1") == blob
    newer = blob[::-1]
    await store.save("planner.c1", newer)
    assert await store.load("planner.c1") == newer


async def test_a_missing_snapshot_loads_as_none(nats_client: Client) -> None:
    store = SnapshotStore(nats_client)
    assert await store.load("planner.nobody") is None
    await store.save("planner.empty", b"")
    assert await store.load("planner.empty") == b""


async def test_a_blob_read_in_windows_of_two_chunks_comes_back_byte_for_byte(
    nats_client: Client,
) -> None:
    blob = random.Random(5).randbytes(7 * (128 << 10) + 3)  # eight chunks, four windows
    await SnapshotStore(nats_client).save("planner.windows", blob)
    two_chunks = SnapshotStore(nats_client, window_bytes=2 * (128 << 10))
    assert await two_chunks.load("planner.windows") == blob
    # One chunk per window, the smallest window there is, still reads every chunk in order.
    assert await SnapshotStore(nats_client, window_bytes=1).load("planner.windows") == blob
