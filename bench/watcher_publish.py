"""Watcher publish rate against the raw JetStream publish rate, same messages, same run.

- raw: ``publish_async`` of pre-encoded observations with their ``Nats-Msg-Id``, awaiting the
  acknowledgements in windows of 2000: the client's own ceiling;
- watcher: the watcher's publishing path for the same objects, from raw object JSON (metadata
  decode, subject escape, envelope encode, bounded in-flight acknowledgements).

Each side writes to a fresh stream. Goal: watcher/raw >= 0.5.
"""

from __future__ import annotations

import argparse
import asyncio
import time

import msgspec
import nats
from nats.aio.client import Client

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
    publisher = ObservationPublisher(nc.jetstream(), cluster="bench", max_in_flight=WINDOW)
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
        watcher = max([await watcher_rate(nc, count, objects) for _ in range(2)])
        print(f"raw publish: {raw:,.0f} msg/s")
        print(f"watcher publish: {watcher:,.0f} msg/s")
        print(f"ratio watcher/raw: {watcher / raw:.3f} (goal >= {GOAL})")
        await nc.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--observations", type=int, default=200_000 if full_size() else 50_000)
    asyncio.run(main(parser.parse_args().observations))
