"""What the authenticated, encrypted bus costs against an open one, measured in the same run.

Two nats-servers run side by side: one open (no users, plain TCP), one as the local stack and
deploy/ run it (TLS only, an nkey user per service with the permissions of
:mod:`spreadbus.runtime.bus_permissions`). On each, in alternation, best of three:

- connect: a service's connection (nkey signature, TLS handshake on the secured one);
- publish: the watcher's user publishes N observations into ``KUBE`` and waits for the stream to
  hold them all;
- replay: the planner's user replays the stream with the services' follower until caught up;
- reserve: the webhook's user gets a key of the reservation bucket and writes it back by
  compare-and-set, 1,000 times, as a pod review reserves its slot (time per round trip).

Printed: seconds per side and ``ratio`` secured/open per phase. Goal: replay and publish within
1.25 of the open bus (the client, not the server, limits the rate; TLS adds a copy and a
cipher per message), connect whatever the handshake costs (once per process start).
Run: ``python -m bench.bus_security [--observations 50000] [--connects 20] [--reservations 1000]
[--best-of 3]`` (200,000 observations with ``SPREADBUS_BENCH_FULL=1``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import ssl
import tempfile
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nats
from nats.aio.client import Client

from bench import _tiny
from bench._bus import full_size, observation, set_up
from events.buckets import entry_key
from events.streams import KUBE
from spreadbus.engine.feature_set import bus_accesses
from spreadbus.features.registry import BUILTIN
from spreadbus.features.workloadspread.admission.reservation_bucket import reservation_bucket
from spreadbus.runtime.bus_permissions import SETUP, inbox_prefix, server_users
from spreadbus.runtime.bus_users import ensure_users, seed_file
from spreadbus.runtime.follower import StreamFollower
from spreadbus.runtime.nats_server import NatsServer
from tlsserving import issue_server_cert, make_ca

PHASES = ("connect", "publish", "replay", "reserve")


class Bus:
    def __init__(self, root: Path, *, secured: bool, name: str) -> None:
        self.secured = secured
        self.name = name
        self.root = root
        args: list[str] = []
        if secured:
            ca = make_ca("bench CA")
            ca.write(root, "ca")
            issue_server_cert(ca, ["127.0.0.1"]).write(root, "server")
            config = root / "nats.conf"
            config.write_text(
                f'tls {{\n  cert_file: "{root / "server.crt"}"\n'
                f'  key_file: "{root / "server.key"}"\n}}\n'
                + server_users(ensure_users(root / "users"), bus_accesses(BUILTIN)))
            args = ["-c", str(config)]
        self.server = NatsServer(store_dir=root / "store", extra_args=args).start()
        # On a thread of its own: a bus is made from the benchmark's running event loop.
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, set_up(self.server.url, **self.options(SETUP))).result()

    def options(self, user: str) -> dict[str, Any]:
        if not self.secured:
            return {}
        return {"nkeys_seed": str(seed_file(self.root / "users", user)),
                "inbox_prefix": inbox_prefix(user),
                "tls": ssl.create_default_context(cafile=str(self.root / "ca.crt"))}

    async def connect(self, user: str) -> Client:
        return await nats.connect(self.server.url, **self.options(user))


async def connect_seconds(bus: Bus, connects: int) -> float:
    started = time.perf_counter()
    for _ in range(connects):
        nc = await bus.connect("planner")
        await nc.close()
    return (time.perf_counter() - started) / connects


async def publish_seconds(bus: Bus, messages: list[tuple[str, bytes]]) -> float:
    admin = await bus.connect("reader")
    js = admin.jetstream()
    # Each run replaces the previous run's messages (one per subject): wait for N more.
    wanted = (await js.stream_info(KUBE.name)).state.last_seq + len(messages)
    watcher = await bus.connect("watcher")
    started = time.perf_counter()
    for subject, data in messages:
        await watcher.publish(subject, data)
    await watcher.flush()
    while (await js.stream_info(KUBE.name)).state.last_seq < wanted:  # noqa: ASYNC110
        await asyncio.sleep(0.005)
    elapsed = time.perf_counter() - started
    await watcher.close()
    await admin.close()
    return elapsed


async def replay_seconds(bus: Bus, expected: int) -> float:
    nc = await bus.connect("planner")
    count = 0

    def sink(seq: int, subject: str, data: bytes) -> None:
        nonlocal count
        count += 1

    follower = StreamFollower(nc, stream=KUBE.name, sink=sink)
    started = time.perf_counter()
    task = asyncio.create_task(follower.run())
    await follower.wait_caught_up()
    elapsed = time.perf_counter() - started
    follower.stop()
    await task
    await nc.close()
    assert count == expected, (count, expected)
    return elapsed


def process_cpu() -> float:
    times = os.times()
    return times.user + times.system


async def reserve_seconds(bus: Bus, cpu: dict[str, float], reservations: int) -> float:
    """Seconds per key-value get and compare-and-set, as the webhook reserves a pod's slot; this
    process's CPU per round trip (its NATS client's) is kept in ``cpu`` at the bus's name, the
    least of the calls."""
    nc = await bus.connect("webhook")
    bucket = await reservation_bucket(nc)
    key = entry_key("bench", "default", "bench")
    await bucket.put(key, b"{}")
    cpu_before, started = process_cpu(), time.perf_counter()
    for i in range(reservations):
        entry = await bucket.get(key)
        await bucket.update(key, b'{"pod-%d":1}' % i, last=entry.revision)
    elapsed = time.perf_counter() - started
    used = (process_cpu() - cpu_before) / reservations
    cpu[bus.name] = min(cpu.get(bus.name, used), used)
    await nc.close()
    return elapsed / reservations


async def best(runs: int, measure: Callable[[], Awaitable[float]]) -> float:
    return min([await measure() for _ in range(runs)])


async def measure(args: argparse.Namespace) -> None:
    n = args.observations
    runs = args.best_of
    messages = [observation(i, n)[:2] for i in range(n)]
    print(f"{n} observations of {sum(len(d) for _, d in messages) // n} bytes on average")
    with tempfile.TemporaryDirectory(prefix="spreadbus-bench-") as tmp:
        buses = {"open": Bus(Path(tmp) / "open", secured=False, name="open"),
                 "secured": Bus(Path(tmp) / "secured", secured=True, name="secured")}
        try:
            results: dict[str, dict[str, float]] = {name: {} for name in buses}
            cpu: dict[str, float] = {}
            for phase in PHASES:
                for name, bus in buses.items():
                    if phase == "connect":
                        value = await best(runs, lambda b=bus: connect_seconds(  # type: ignore[misc]
                            b, args.connects))
                    elif phase == "reserve":
                        value = await best(runs, lambda b=bus: reserve_seconds(  # type: ignore[misc]
                            b, cpu, args.reservations))
                    elif phase == "publish":
                        value = await best(runs, lambda b=bus: publish_seconds(  # type: ignore[misc]
                            b, messages))
                    else:
                        value = await best(runs, lambda b=bus: replay_seconds(  # type: ignore[misc]
                            b, n))
                    results[name][phase] = value
            for phase in PHASES:
                opened, secured = results["open"][phase], results["secured"][phase]
                unit = "ms" if phase in ("connect", "reserve") else "s"
                scale = 1000.0 if phase in ("connect", "reserve") else 1.0
                print(f"{phase:8} open {opened * scale:8.3f} {unit}  secured "
                      f"{secured * scale:8.3f} {unit}  ratio {secured / opened:.3f}")
            opened, secured = cpu["open"], cpu["secured"]
            ratio = secured / opened if opened else float("nan")  # clock ticks: maybe none
            print(f"reserve: the client's CPU per round trip open {opened * 1e6:.0f} us, "
                  f"secured {secured * 1e6:.0f} us, ratio {ratio:.3f}")
        finally:
            for bus in buses.values():
                bus.server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--observations", type=int, default=200_000 if full_size() else 50_000)
    parser.add_argument("--connects", type=int, default=20, help="connections per connect run")
    parser.add_argument("--reservations", type=int, default=1000,
                        help="compare-and-set round trips per reserve run")
    parser.add_argument("--best-of", type=int, default=3, help="runs of each phase on each bus")
    asyncio.run(measure(_tiny.arguments(parser, argv, {
        "observations": 200, "connects": 2, "reservations": 20, "best_of": 1})))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
