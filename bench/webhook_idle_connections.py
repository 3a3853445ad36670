"""Pod-review latency and memory of the webhook while 3,000 idle and some slow connections are held.

The webhook runs as ``spreadbus up`` runs it (its own process, real TLS, ``--max-connections``
and the idle and handshake timeouts at their defaults, slots reserved on the NATS key-value
bucket) and is sent pod CREATE reviews as :mod:`bench.webhook_admission` sends them (open loop
at ``--rate``, over keep-alive HTTPS, round robin over fresh WorkloadSpreads, each review a
real steering decision). Rounds alternate:

- **quiet**: the reviews alone;
- **held**: the same, while ``--idle`` TLS connections (3,000) that completed their handshake
  and send nothing and ``--slow`` connections that send a request head one byte per second
  are held open, from a process of their own
  (:class:`tests.fixtures.connection_flood.FloodProcess`).

The flood presents the client certificate kubesim presents, the worst case for the webhook:
every handshake completes, as a caller without a certificate is dropped in its handshake.

Printed: each round's p50/p99, the median of each kind, ``ratio`` lines held/quiet for p50 and
p99 (the issue's "within its p99": goal under 1.1), the webhook's peak resident memory against
the deploy limit (512 Mi, ``deploy/services/webhook.yaml``), and its connection counters
(kept, evicted, refused). Run: ``python -m bench.webhook_idle_connections [--idle 3000]
[--slow 100] [--rate 200] [--seconds 5] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from kubernetes import config

from bench.webhook_admission import KUBELET, prepare, run_rate
from spreadbus.cli.local_stack import Stack
from tests.fixtures.connection_flood import FloodProcess

GOAL = 1.1
LIMIT_BYTES = 512 * 1024 * 1024
"""The webhook container's memory limit in deploy/services/webhook.yaml."""


def memory(pid: int) -> tuple[int, int]:
    """Resident and peak resident memory in bytes, from ``/proc/<pid>/status``."""
    fields = dict(line.split(":", 1) for line in
                  Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024


def metric(port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise LookupError(f"no metric {name}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--idle", type=int, default=3000, help="idle TLS connections held")
    parser.add_argument("--slow", type=int, default=100,
                        help="connections sending a request head one byte per second")
    parser.add_argument("--rate", type=int, default=200, help="reviews per second")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each kind, alternating")
    parser.add_argument("--spreads", type=int, default=20,
                        help="WorkloadSpreads (namespaces) each round's reviews are spread over")
    args = parser.parse_args(argv)
    results: dict[str, list[dict[str, float]]] = {"quiet": [], "held": []}
    peak = 0
    with tempfile.TemporaryDirectory(prefix="spreadbus-bench-") as tmp:
        data_dir = Path(tmp) / "stack"
        stack = Stack(data_dir=data_dir, cluster="bench",
                      kubesim_args=["--topology=three-zones", *KUBELET])
        try:
            stack.start(120.0)
            webhook = next(s for s in stack.services if s.name == "webhook")
            assert webhook.process is not None
            pid, health = webhook.process.pid, webhook.health_port
            tls = data_dir / "tls"
            url = f"https://127.0.0.1:{stack.webhook_port}/mutate-pod"
            api: Any = config.new_client_from_config(  # type: ignore[no-untyped-call]
                config_file=str(data_dir / "kubeconfig"))
            with api:
                started_rss = memory(pid)[0]
                for number in range(args.rounds):
                    # each kind goes first in every other round
                    for kind in ("quiet", "held") if number % 2 == 0 else ("held", "quiet"):
                        targets = [(ns, prepare(api, ns)) for ns in
                                   (f"bench-{kind}-{number}-{i}" for i in range(args.spreads))]
                        flood = FloodProcess(stack.webhook_port, tls / "ca.crt",
                                             tls / "apiserver-client.crt",
                                             tls / "apiserver-client.key",
                                             idle=args.idle if kind == "held" else 0,
                                             slow=args.slow if kind == "held" else 0)
                        opened = time.perf_counter()
                        with flood:
                            took = time.perf_counter() - opened
                            r = asyncio.run(run_rate(url, tls / "ca.crt", targets, args.rate,
                                                     args.seconds, pid))
                            r["rss"], hwm = memory(pid)
                            r["kept"] = metric(health, "spreadbus_webhook_connections")
                            r["closed_by_webhook"] = flood.closed_by_server()
                            r["opened"] = flood.opened
                            peak = max(peak, hwm)
                        results[kind].append(r)
                        line = (f"round {number + 1}, {kind}: p50 {r['p50_ms']:.2f} ms, "
                                f"p99 {r['p99_ms']:.2f} ms, max {r['max_ms']:.2f} ms, "
                                f"not steered {r['not_steered']:.0f}, "
                                f"RSS {r['rss'] / 2**20:.0f} MiB")
                        if kind == "held":
                            line += (f"; flood of {flood.opened} opened in {took:.1f} s, "
                                     f"{r['closed_by_webhook']:.0f} closed by the webhook, "
                                     f"{r['kept']:.0f} kept")
                        print(line, flush=True)
                evicted = metric(health, "spreadbus_webhook_connections_evicted")
                refused = metric(health, "spreadbus_webhook_connections_refused")
        finally:
            stack.stop()
    print(f"cores: {os.cpu_count()}, {args.rate} reviews/s for {args.seconds:.0f} s per round, "
          f"{args.rounds} round(s) of each; held: {args.idle} idle and {args.slow} slow "
          f"connections")
    median = {kind: {key: statistics.median(r[key] for r in runs)
                     for key in ("p50_ms", "p99_ms", "not_steered")}
              for kind, runs in results.items()}
    for kind, m in median.items():
        print(f"{kind}, median of the rounds: p50 {m['p50_ms']:.2f} ms, p99 {m['p99_ms']:.2f} ms, "
              f"not steered {m['not_steered']:.0f}")
    for key, what in (("p50_ms", "p50"), ("p99_ms", "p99")):
        ratio = median["held"][key] / median["quiet"][key]
        print(f"ratio {what} held/quiet: {ratio:.3f} (goal under {GOAL}: {ratio / GOAL:.3f} of it)")
    print(f"webhook memory: {started_rss / 2**20:.0f} MiB at start, peak {peak / 2**20:.0f} MiB")
    print(f"ratio peak memory/limit: {peak / LIMIT_BYTES:.3f} (limit 512 MiB)")
    print(f"connections evicted {evicted:.0f}, refused {refused:.0f} over the run")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
