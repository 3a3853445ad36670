"""Audit replay rate into SQLite against a raw consumer of the same messages, same run; the
database's size per 1,000 pod lifecycles; and ``why pod``'s answer time on a large database.

- raw: the services' stream follower over ``HISTORY``, its sink only counting;
- replay: ``spreadbus audit replay``'s path (the same follower, the fold, SQLite, the final
  rebuild and vacuum) into a new file. Goal: replay/raw >= 0.5;
- size: the file's bytes per 1,000 pod lifecycles (admission, created, bound, ready, a
  deletion-cost plan and its outcome, deleting, deleted: eight messages a pod);
- why: the mean time of ``pod_story`` for pods spread over a database of ``--events`` messages
  folded directly (no NATS; 1,000,000 with ``--full`` or SPREADBUS_BENCH_FULL=1).
  Goal: under 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import nats

from bench import _tiny
from bench._bus import full_size, nats_server
from events import subjects
from events.codec import encode
from events.messages import (
    Admission,
    Event,
    ObjectRef,
    Outcome,
    Plan,
    PodLifecycle,
    SubsetView,
)
from spreadbus.audit.replay import replay
from spreadbus.audit.store import STREAM, AuditStore
from spreadbus.audit.why import pod_story
from spreadbus.runtime.follower import StreamFollower
from spreadbus.runtime.stream_setup import ensure_streams

MATCHED = "apps.kruise.io/matched-workloadspread"


def lifecycle(i: int, ts: float) -> list[tuple[str, Event]]:
    """One pod's eight messages, each with the subject its producer publishes it on."""
    name, ns = f"web-{i}", f"ns-{i % 50}"
    subset = "fixed" if i % 3 else "elastic"
    ref = ObjectRef(group="", version="v1", resource="pods", namespace=ns, name=name,
                    uid=f"uid-{i}")
    plan = Plan(id=f"cost-{i}", cluster="c", verb="patch", target=ref, rule="workloadspread",
                patch={"metadata": {"annotations": {
                    "controller.kubernetes.io/pod-deletion-cost": "100"}}},
                reason="subset elastic: cost 100", ts=ts + 5)
    pod_subject = subjects.pod_history("c", ns, name)

    def point(which: str, at: float, **extra: str) -> tuple[str, Event]:
        return pod_subject, PodLifecycle(cluster="c", namespace=ns, name=name, uid=f"uid-{i}",
                                         point=which, owner="ReplicaSet/web-1",  # type: ignore[arg-type]
                                         ts=at, **extra)  # type: ignore[arg-type]

    return [
        (subjects.admission("c", ns, "WorkloadSpread/ws"), Admission(
            cluster="c", namespace=ns, request_uid=f"r-{i}", pod_name=f"key-{i}",
            generate_name="web-", workload="WorkloadSpread/ws", subset=subset, ts=ts,
            reason="fixed is full (100/100); elastic has room (7/unlimited)",
            target="Deployment/web", replicas=150, replica="webhook-0", ledger_revision=i,
            subsets=[SubsetView(name="fixed", occupancy=100, limit=100),
                     SubsetView(name="elastic", occupancy=7)])),
        (pod_subject, PodLifecycle(
            cluster="c", namespace=ns, name=name, uid=f"uid-{i}", point="created",
            owner="ReplicaSet/web-1", ts=ts + 1,
            annotations={MATCHED: f'{{"name":"ws","subset":"{subset}","uid":"key-{i}"}}'})),
        point("bound", ts + 2, node=f"node-{i % 100}"),
        point("ready", ts + 3),
        (subjects.plan("c", "patch", "", "pods", ns, name), plan),
        (subjects.outcome("c", "patch", "", "pods", ns, name), Outcome(
            plan_id=plan.id, cluster="c", verb="patch", target=ref, result="applied",
            ts=ts + 6)),
        point("deleting", ts + 7, reason="Evicted"),
        point("deleted", ts + 8),
    ]


def messages(pods: int) -> Iterator[tuple[int, str, bytes]]:
    seq = 0
    for i in range(pods):
        for subject, event in lifecycle(i, float(i)):
            seq += 1
            yield seq, subject, encode(event)


async def load_bus(url: str, pods: int) -> int:
    nc = await nats.connect(url)
    js = nc.jetstream()
    await ensure_streams(js)
    count = 0
    for _, subject, data in messages(pods):
        await js.publish_async(subject, data)
        count += 1
        if count % 2000 == 0:
            await js.publish_async_completed()
    await js.publish_async_completed()
    while (await js.stream_info(STREAM)).state.messages < count:  # noqa: ASYNC110 - polled
        await asyncio.sleep(0.1)
    await nc.close()
    return count


async def raw_read(url: str, count: int) -> float:
    nc = await nats.connect(url)
    seen = [0]

    def sink(seq: int, subject: str, data: bytes) -> None:
        seen[0] += 1

    follower = StreamFollower(nc, stream=STREAM, sink=sink)
    start = time.perf_counter()
    task = asyncio.create_task(follower.run())
    while seen[0] < count:  # noqa: ASYNC110 - the sink is synchronous; polling costs little
        await asyncio.sleep(0.005)
    elapsed = time.perf_counter() - start
    follower.stop()
    await asyncio.wait_for(task, 10)
    await nc.close()
    return elapsed


async def replay_read(url: str, db: Path) -> float:
    nc = await nats.connect(url)
    store = AuditStore(db)
    start = time.perf_counter()
    await replay(nc, store, batch_seconds=0.02)
    elapsed = time.perf_counter() - start
    store.close()
    await nc.close()
    return elapsed


def why_time(events: int, scratch: Path) -> tuple[float, int]:
    db = scratch / "large.db"
    store = AuditStore(db)
    pods = events // 8
    batch: list[tuple[int, str, bytes]] = []
    for message in messages(pods):
        batch.append(message)
        if len(batch) == 20_000:
            store.apply(batch)
            batch = []
    store.apply(batch)
    store.finish()
    store.close()
    conn = sqlite3.connect(db)
    probes = [(f"ns-{i % 50}", f"web-{i}") for i in range(0, pods, max(1, pods // 200))]
    start = time.perf_counter()
    for namespace, name in probes:
        assert pod_story(conn, namespace, name) is not None
    elapsed = (time.perf_counter() - start) / len(probes)
    conn.close()
    return elapsed, db.stat().st_size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=2000, help="pod lifecycles on the bus")
    parser.add_argument("--events", type=int, default=0,
                        help="messages in the database ``why`` is timed on "
                             "(default 100,000; 1,000,000 at full size)")
    args = _tiny.arguments(parser, argv, {"pods": 20, "events": 400})
    events = args.events or (1_000_000 if full_size() else 100_000)
    with tempfile.TemporaryDirectory(prefix="spreadbus-bench-audit-") as tmp, \
            nats_server() as server:
        scratch = Path(tmp)
        count = asyncio.run(load_bus(server.url, args.pods))
        raw = asyncio.run(raw_read(server.url, count))
        db = scratch / "audit.db"
        folded = asyncio.run(replay_read(server.url, db))
        print(f"raw      {count / raw:10.0f} msg/s ({count} messages)")
        print(f"replay   {count / folded:10.0f} msg/s")
        print(f"ratio    replay/raw {raw / folded:.2f} (goal >= 0.5)")
        print(f"size     {db.stat().st_size / args.pods * 1000 / 1e6:.2f} MB per 1,000 pod "
              f"lifecycles")
        answer, size = why_time(events, scratch)
        print(f"why      {answer * 1000:.2f} ms per pod on {events} events "
              f"({size / 1e6:.0f} MB) (goal < 100 ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
