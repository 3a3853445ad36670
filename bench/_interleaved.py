"""Pod reviews sent to several webhooks in one open-loop schedule, their turns interleaved.

For comparing two webhooks on a busy host: each gets ``rate`` reviews a second, and the k-th
review of one is scheduled between the k-th reviews of the others, so a moment the host takes
away from the processes falls on every lane alike instead of on whichever ran then. Reviews are
built and checked as :mod:`bench.webhook_admission` builds and checks them (a pod CREATE under a
WorkloadSpread, answered with its subset), over keep-alive HTTPS with the client certificate
kubesim presents; latency runs from the scheduled time to the answer.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from bench._reviews import api_server_tls, latency_ms
from bench.webhook_admission import cpu_seconds, review, steered

HEADERS = {"Content-Type": "application/json"}


@dataclass
class Lane:
    """One webhook: its review URL, the stack's TLS directory, the WorkloadSpreads to review
    pods of (namespace, and the ReplicaSet's name and uid), and its process id."""

    url: str
    tls: Path
    targets: list[tuple[str, tuple[str, str]]]
    pid: int


async def ready(session: aiohttp.ClientSession, lane: Lane) -> None:
    """Until the webhook's view holds every WorkloadSpread of the lane; then warm its pool."""
    deadline = time.monotonic() + 60
    for namespace, owner in lane.targets:
        while True:
            async with session.post(lane.url, data=review(namespace, owner,
                                                          f"probe-{uuid.uuid4()}"),
                                    headers=HEADERS) as response:
                if steered(await response.json()):
                    break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{lane.url} never steered a pod of the benchmark")
            await asyncio.sleep(0.1)
    for i in range(50):
        namespace, owner = lane.targets[i % len(lane.targets)]
        async with session.post(lane.url, data=review(namespace, owner, f"warm-{uuid.uuid4()}"),
                                headers=HEADERS) as response:
            await response.read()


async def interleaved(lanes: list[Lane], rate: int, seconds: float) -> list[dict[str, float]]:
    """Per lane: reviews sent, p50/p99/max in ms, rate achieved, reviews not steered, and the
    webhook's CPU per review in microseconds."""
    sessions = [aiohttp.ClientSession(connector=aiohttp.TCPConnector(
        ssl=api_server_tls(lane.tls), limit=64)) for lane in lanes]
    try:
        for session, lane in zip(sessions, lanes, strict=True):
            await ready(session, lane)
        count = int(rate * seconds)
        bodies = [[review(*lane.targets[i % len(lane.targets)], f"pod-{uuid.uuid4()}")
                   for i in range(count)] for lane in lanes]
        latencies: list[list[float]] = [[] for _ in lanes]
        failures = [0] * len(lanes)

        async def send(j: int, body: bytes, scheduled: float) -> None:
            async with sessions[j].post(lanes[j].url, data=body, headers=HEADERS) as response:
                answer = await response.json()
            latencies[j].append(time.perf_counter() - scheduled)
            if not steered(answer):
                failures[j] += 1

        tasks = []
        cpu_before = [cpu_seconds(lane.pid) for lane in lanes]
        started = time.perf_counter()
        for i in range(count):
            for j in range(len(lanes)):
                scheduled = started + (i + j / len(lanes)) / rate
                delay = scheduled - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                tasks.append(asyncio.create_task(send(j, bodies[j][i], scheduled)))
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - started
        cpu = [cpu_seconds(lane.pid) - before for lane, before in zip(lanes, cpu_before,
                                                                        strict=True)]
    finally:
        for session in sessions:
            await session.close()
    out = []
    for j, lane_latencies in enumerate(latencies):
        out.append({
            "count": count,
            **latency_ms(lane_latencies),
            "achieved": count / elapsed,
            "not_steered": failures[j],
            "cpu_us": cpu[j] / count * 1e6,
        })
    return out


async def one_at_a_time(lanes: list[Lane], count: int) -> list[dict[str, float]]:
    """``count`` reviews per lane, each sent once the one before it (to any lane) is answered,
    the lanes taking turns: each review's own time, without the queueing an open loop adds
    when the host falls behind. Per lane: p50/p99/max in ms and reviews not steered."""
    sessions = [aiohttp.ClientSession(connector=aiohttp.TCPConnector(
        ssl=api_server_tls(lane.tls), limit=1)) for lane in lanes]
    try:
        for session, lane in zip(sessions, lanes, strict=True):
            await ready(session, lane)
        latencies: list[list[float]] = [[] for _ in lanes]
        failures = [0] * len(lanes)
        for i in range(count):
            for j, lane in enumerate(lanes):
                body = review(*lane.targets[i % len(lane.targets)], f"one-{uuid.uuid4()}")
                started = time.perf_counter()
                async with sessions[j].post(lane.url, data=body, headers=HEADERS) as response:
                    answer = await response.json()
                latencies[j].append(time.perf_counter() - started)
                if not steered(answer):
                    failures[j] += 1
    finally:
        for session in sessions:
            await session.close()
    return [{**latency_ms(lane), "not_steered": failures[j]}
            for j, lane in enumerate(latencies)]
