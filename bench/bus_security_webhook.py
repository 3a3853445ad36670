"""What the secured bus costs the pod webhook: admission latency with its bus secured vs open.

A pod CREATE review under a WorkloadSpread reserves its slot by compare-and-set on the NATS
key-value bucket before it is answered, so the bus is on the review path. Two local stacks run
at once, alike but for their bus: **secured** (each service its own nkey user, TLS only, as
``spreadbus up`` runs) and **open** (``Stack(secured_bus=False)``: no users, no TLS; for measuring
only). Reviews are sent as :mod:`bench.webhook_admission` sends them (open loop at ``--rate``,
over keep-alive HTTPS with kubesim's client certificate, round robin over ``--spreads`` fresh
WorkloadSpreads, each review a real steering decision), in rounds that alternate between the
stacks (secured, open, secured, open...), each round on WorkloadSpreads of its own.

Printed: each round's p50/p99, each mode's median over its rounds, and ``ratio`` lines
secured/open for p50 and p99 (goal: under 1.1) and for the webhook's CPU per review.
Run: ``python -m bench.bus_security_webhook [--rate 200] [--seconds 5] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from kubernetes import config

from bench.webhook_admission import KUBELET, prepare, run_rate
from spreadbus.cli.local_stack import Stack

GOAL = 1.1
MODES = ("secured", "open")


class Target:
    """One running stack, and what a round needs of it."""

    def __init__(self, mode: str, data_dir: Path) -> None:
        self.mode = mode
        self.data_dir = data_dir
        self.stack = Stack(data_dir=data_dir, cluster="bench",
                           kubesim_args=["--topology=three-zones", *KUBELET],
                           secured_bus=mode == "secured")

    def start(self) -> None:
        self.stack.start(120.0)
        webhook = next(s.process for s in self.stack.services if s.name == "webhook")
        assert webhook is not None
        self.webhook_pid = webhook.pid
        self.api: Any = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(self.data_dir / "kubeconfig"))

    def stop(self) -> None:
        if getattr(self, "api", None) is not None:
            self.api.close()
        self.stack.stop()

    def round(self, number: int, spreads: int, rate: int, seconds: float) -> dict[str, float]:
        targets = [(ns, prepare(self.api, ns))
                   for ns in (f"bench-{number}-{i}" for i in range(spreads))]
        url = f"https://127.0.0.1:{self.stack.webhook_port}/mutate-pod"
        return asyncio.run(run_rate(url, self.data_dir / "tls" / "ca.crt", targets, rate,
                                    seconds, self.webhook_pid))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rate", type=int, default=200, help="reviews per second")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each mode, alternating")
    parser.add_argument("--spreads", type=int, default=20,
                        help="WorkloadSpreads (namespaces) each round's reviews are spread over")
    args = parser.parse_args(argv)
    results: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="spreadbus-bench-") as tmp, ExitStack() as running:
        targets = [Target(mode, Path(tmp) / mode) for mode in MODES]
        for target in targets:
            running.callback(target.stop)
            target.start()
        for number in range(args.rounds):
            for target in targets:
                r = target.round(number, args.spreads, args.rate, args.seconds)
                results[target.mode].append(r)
                print(f"round {number + 1}, {target.mode} bus: p50 {r['p50_ms']:.2f} ms, "
                      f"p99 {r['p99_ms']:.2f} ms, max {r['max_ms']:.2f} ms, achieved "
                      f"{r['achieved']:.0f}/s, not steered {r['not_steered']:.0f}, "
                      f"webhook CPU {r['cpu_us']:.0f} us per review", flush=True)
    print(f"cores: {os.cpu_count()}, {args.rate} reviews/s for {args.seconds:.0f} s per round, "
          f"{args.rounds} round(s) of each, over {args.spreads} WorkloadSpreads")
    median = {mode: {key: statistics.median(r[key] for r in results[mode])
                     for key in ("p50_ms", "p99_ms", "cpu_us", "not_steered")}
              for mode in MODES}
    for mode in MODES:
        m = median[mode]
        print(f"{mode} bus, median of the rounds: p50 {m['p50_ms']:.2f} ms, p99 "
              f"{m['p99_ms']:.2f} ms, webhook CPU {m['cpu_us']:.0f} us per review, "
              f"not steered {m['not_steered']:.0f}")
    for key, what in (("p50_ms", "p50"), ("p99_ms", "p99"), ("cpu_us", "webhook CPU")):
        ratio = median["secured"][key] / median["open"][key]
        goal = f" (goal under {GOAL}: {ratio / GOAL:.3f} of it)" if key != "cpu_us" else ""
        print(f"ratio {what} secured/open: {ratio:.3f}{goal}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
