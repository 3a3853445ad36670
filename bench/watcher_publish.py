"""Watcher publish rate against the raw JetStream publish rate, same messages, same run.

- raw: ``publish_async`` of pre-encoded observations with their ``Nats-Msg-Id``, awaiting the
  acknowledgements in windows of 2000: the client's own way to publish with acknowledgements;
- bare: the same messages, each published with a reply subject under one inbox whose
  subscription counts the acknowledgements, at most 2000 unacknowledged: the least an
  acknowledged publish costs with this client (the watcher tracks its acknowledgements this way,
  so it can be faster than raw);
- watcher: the watcher's publishing path for the same objects, from raw object JSON (metadata
  decode, subject escape, envelope encode, bounded in-flight acknowledgements).

Each side writes to a fresh stream. Goal: watcher/raw >= 0.5.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence

import msgspec
import nats
from nats.aio.client import Client
from nats.aio.msg import Msg

from bench import _tiny
from bench._bus import deployment, full_size, nats_server, observation
from events.messages import ResourceRef
from services.watcher.publisher import ObservationPublisher
from services.watcher.resource_watch import Change
from spreadbus.runtime.stream_setup import ensure_streams

GOAL = 0.5
WINDOW = 2000
REF = ResourceRef(group="apps", version="v1", resource="deployments")


async def fresh_stream(nc: Client) -> None:
    js = nc.jetstream()
    try:
        await js.delete_stream("KUBE")
    except nats.js.errors.NotFoundError:
        pass
    await ensure_streams(js)


async def bare_rate(nc: Client, count: int, objects: int) -> float:
    await fresh_stream(nc)
    prepared = [observation(i, objects) for i in range(count)]
    inbox = nc.new_inbox()
    acked = 0
    room = asyncio.Semaphore(WINDOW)
    done = asyncio.Event()

    async def on_ack(msg: Msg) -> None:
        nonlocal acked
        acked += 1
        room.release()
        if acked == count:
            done.set()

    sub = await nc.subscribe(f"{inbox}.*", cb=on_ack)
    started = time.perf_counter()
    for i, (subject, data, msg_id) in enumerate(prepared):
        await room.acquire()
        await nc.publish(subject, data, reply=f"{inbox}.{i}", headers={"Nats-Msg-Id": msg_id})
    await done.wait()
    elapsed = time.perf_counter() - started
    await sub.unsubscribe()
    return count / elapsed


async def raw_rate(nc: Client, count: int, objects: int) -> float:
    await fresh_stream(nc)
    js = nc.jetstream()
    prepared = [observation(i, objects) for i in range(count)]
    started = time.perf_counter()
    pending = []
    for subject, data, msg_id in prepared:
        pending.append(await js.publish_async(subject, data, headers={"Nats-Msg-Id": msg_id}))
        if len(pending) >= WINDOW:
            await asyncio.gather(*pending)
            pending.clear()
    await asyncio.gather(*pending)
    return count / (time.perf_counter() - started)


class _Meta(msgspec.Struct):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resourceVersion: str = ""


class _Obj(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


async def watcher_rate(nc: Client, count: int, objects: int) -> float:
    await fresh_stream(nc)
    publisher = ObservationPublisher(nc, cluster="bench", max_in_flight=WINDOW)
    encoder = msgspec.json.Encoder()
    decoder = msgspec.json.Decoder(_Obj)
    raws = [encoder.encode(deployment(i % objects, i // objects + 1)) for i in range(count)]
    started = time.perf_counter()
    for raw in raws:
        meta = decoder.decode(raw).metadata  # what the watch loop decodes per event
        change = Change("MODIFIED", meta.namespace, meta.name, meta.uid, meta.resourceVersion,
                        raw, False)
        await publisher.observation(REF, change, 0.0)
    await publisher.flush()
    return count / (time.perf_counter() - started)


async def main(count: int) -> None:
    objects = min(10_000, count)
    with nats_server() as server:
        nc = await nats.connect(server.url)
        raw = max([await raw_rate(nc, count, objects) for _ in range(2)])
        bare = max([await bare_rate(nc, count, objects) for _ in range(2)])
        watcher = max([await watcher_rate(nc, count, objects) for _ in range(2)])
        print(f"raw publish (publish_async): {raw:,.0f} msg/s")
        print(f"bare acknowledged publish: {bare:,.0f} msg/s")
        print(f"watcher publish: {watcher:,.0f} msg/s")
        print(f"ratio watcher/raw: {watcher / raw:.3f} (goal >= {GOAL})")
        print(f"ratio watcher/bare: {watcher / bare:.3f}")
        await nc.close()


def cli(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--observations", type=int, default=200_000 if full_size() else 50_000)
    asyncio.run(main(_tiny.arguments(parser, argv, {"observations": 200}).observations))
    return 0


if __name__ == "__main__":
    raise SystemExit(cli())
