"""Pod-review latency and memory of the webhook while 3,000 idle and some slow connections are held.

Two webhook replicas run as ``spreadbus up`` runs them (their own processes behind one Service,
real TLS, ``--max-connections`` and the idle and handshake timeouts at their defaults, slots
reserved on the NATS key-value bucket). In each round, one of them (each in every other round)
has ``--idle`` TLS connections (3,000) that completed their handshake and send nothing and
``--slow`` connections that send a request head one byte per second held open against it, from a
process of their own (:class:`tests.fixtures.connection_flood.FloodProcess`); the other is
left alone. The flood presents the client certificate kubesim presents, the worst case for the
webhook: every handshake completes (a caller without one is dropped in its handshake).

Both replicas are then sent pod CREATE reviews as :mod:`bench.webhook_admission` sends them
(open loop at ``--rate`` to each, over keep-alive HTTPS, round robin over fresh WorkloadSpreads,
each review a real steering decision) in one schedule, their turns interleaved
(:mod:`bench._interleaved`), so what a busy host takes from the processes falls on both alike;
then ``--one-at-a-time`` reviews each, taking turns, each sent once the one before is answered
(each review's own time, without the queueing an open loop adds when the host falls behind).

Printed: each round's p50/p99, the median of each kind over the rounds, ``ratio`` lines
held/quiet for p50 and p99 (the issue's "within its p99": goal under 1.1), the flooded
replica's peak resident memory against the deploy limit (512 Mi,
``deploy/services/webhook.yaml``), and the connection counters (kept, evicted, refused).
Run: ``python -m bench.webhook_idle_connections [--idle 3000] [--slow 100] [--rate 100]
[--seconds 5] [--one-at-a-time 300] [--rounds 3]``.
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

from bench import _tiny
from bench._interleaved import Lane, interleaved, one_at_a_time
from bench._stack import STACK, STACK_HELP, local_stack
from bench.webhook_admission import KUBELET, prepare
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
    parser.add_argument("--rate", type=int, default=100, help="reviews per second to each")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each round")
    parser.add_argument("--one-at-a-time", type=int, default=300,
                        help="then this many reviews each, one at a time, the two taking turns")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds; the replica flooded alternates")
    parser.add_argument("--spreads", type=int, default=20,
                        help="WorkloadSpreads (namespaces) each replica's reviews are spread over")
    parser.add_argument(STACK, type=Path, help=STACK_HELP + " (with two webhook replicas)")
    args = _tiny.arguments(parser, argv, {"idle": 20, "slow": 2, "rate": 20, "seconds": 0.5,
                                          "one_at_a_time": 5, "rounds": 1, "spreads": 2})
    results: dict[str, list[dict[str, float]]] = {"quiet": [], "held": []}
    peak = 0
    with tempfile.TemporaryDirectory(prefix="spreadbus-bench-") as tmp, \
            local_stack(args.stack, Path(tmp) / "stack", webhook_replicas=2,
                        kubesim_args=["--topology=three-zones", *KUBELET]) as stack:
        if len(stack.webhooks) < 2:
            parser.error(f"{args.stack} runs {len(stack.webhooks)} webhook replica(s), not 2")
        replicas = stack.webhooks[:2]
        pids = [stack.pids[name] for name in replicas]
        tls = stack.tls
        api: Any = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(stack.kubeconfig))
        with api:
            started_rss = max(memory(pid)[0] for pid in pids)
            for number in range(args.rounds):
                flooded = number % 2  # each replica is the flooded one in every other round
                lanes = [Lane(f"https://127.0.0.1:{port}/mutate-pod", tls,
                              [(ns, prepare(api, ns)) for ns in
                               (f"idle-{number}-{i}-{j}" for j in range(args.spreads))],
                              pid)
                         for i, (port, pid) in enumerate(zip(stack.webhook_ports[:2], pids,
                                                             strict=True))]
                flood = FloodProcess(stack.webhook_ports[flooded], tls / "ca.crt",
                                     tls / "apiserver-client.crt",
                                     tls / "apiserver-client.key",
                                     idle=args.idle, slow=args.slow)
                opened = time.perf_counter()
                with flood:
                    took = time.perf_counter() - opened
                    loop = asyncio.run(interleaved(lanes, args.rate, args.seconds))
                    single = asyncio.run(one_at_a_time(lanes, args.one_at_a_time))
                    rss, hwm = memory(pids[flooded])
                    health = stack.health_ports[replicas[flooded]]
                    kept = metric(health, "spreadbus_webhook_connections")
                    closed = flood.closed_by_server()
                    peak = max(peak, hwm)
                for i, (r, one) in enumerate(zip(loop, single, strict=True)):
                    r.update({f"one_{key}": value for key, value in one.items()})
                    kind = "held" if i == flooded else "quiet"
                    results[kind].append(r)
                    print(f"round {number + 1}, {replicas[i]} ({kind}): at "
                          f"{args.rate}/s p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms, "
                          f"max {r['max_ms']:.2f} ms; one at a time p50 "
                          f"{one['p50_ms']:.2f} ms, p99 {one['p99_ms']:.2f} ms; not steered "
                          f"{r['not_steered'] + one['not_steered']:.0f}", flush=True)
                print(f"  flood of {flood.opened} opened in {took:.1f} s; {closed} closed by "
                      f"the webhook, {kept:.0f} kept; RSS {rss / 2**20:.0f} MiB", flush=True)
            evicted = sum(metric(stack.health_ports[r], "spreadbus_webhook_connections_evicted")
                          for r in replicas)
            refused = sum(metric(stack.health_ports[r], "spreadbus_webhook_connections_refused")
                          for r in replicas)
    print(f"cores: {os.cpu_count()}, {args.rate} reviews/s to each replica for "
          f"{args.seconds:g} s, then {args.one_at_a_time} one at a time, per round; "
          f"{args.rounds} round(s); held: {args.idle} idle and {args.slow} slow connections")
    keys = ("p50_ms", "p99_ms", "one_p50_ms", "one_p99_ms", "not_steered", "one_not_steered")
    median = {kind: {key: statistics.median(r[key] for r in runs) for key in keys}
              for kind, runs in results.items()}
    for kind, m in median.items():
        print(f"{kind}, median of the rounds: at {args.rate}/s p50 {m['p50_ms']:.2f} ms, p99 "
              f"{m['p99_ms']:.2f} ms; one at a time p50 {m['one_p50_ms']:.2f} ms, p99 "
              f"{m['one_p99_ms']:.2f} ms; not steered "
              f"{m['not_steered'] + m['one_not_steered']:.0f}")
    for key, what in (("p50_ms", f"p50 at {args.rate}/s"), ("p99_ms", f"p99 at {args.rate}/s"),
                      ("one_p50_ms", "p50 one at a time"), ("one_p99_ms", "p99 one at a time")):
        ratio = median["held"][key] / median["quiet"][key]
        print(f"ratio {what} held/quiet: {ratio:.3f} (goal under {GOAL}: {ratio / GOAL:.3f} of it)")
    print(f"webhook memory: {started_rss / 2**20:.0f} MiB at start, peak of a flooded replica "
          f"{peak / 2**20:.0f} MiB")
    print(f"ratio peak memory/limit: {peak / LIMIT_BYTES:.3f} (limit 512 MiB)")
    print(f"connections evicted {evicted:.0f}, refused {refused:.0f} over the run")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
