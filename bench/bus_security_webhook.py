"""What the secured bus costs the pod webhook: admission latency with its bus secured vs open.

A pod CREATE review under a WorkloadSpread reserves its slot by compare-and-set on the NATS
key-value bucket before it is answered, so the bus is on the review path. Two local stacks run
at once, alike but for their bus: **secured** (each service its own nkey user, TLS only, as
``spreadbus up`` runs) and **open** (``Stack(secured_bus=False)``: no users, no TLS; for measuring
only). Reviews are sent as :mod:`bench.webhook_admission` sends them (open loop at ``--rate``
to each webhook, over keep-alive HTTPS with kubesim's client certificate, round robin over
``--spreads`` fresh WorkloadSpreads, each review a real steering decision), to both webhooks
in one schedule, their turns interleaved (:mod:`bench._interleaved`): on a busy host, what it
takes from the processes falls on both alike. Each round reviews pods of WorkloadSpreads of its
own.

Then ``--one-at-a-time`` reviews to each, the two taking turns, each sent once the one before
is answered: each review's own time, without the queueing an open loop adds whenever a busy
host holds the processes back (which can dwarf the difference measured).

Printed: each round's figures, each mode's median over the rounds, and ``ratio`` lines
secured/open for p50 and p99 of both (goal: under 1.1) and for the webhook's CPU per review.
Run: ``python -m bench.bus_security_webhook [--rate 100] [--seconds 5] [--one-at-a-time 300]
[--rounds 3]``.
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

from bench import _tiny
from bench._interleaved import Lane, interleaved, one_at_a_time
from bench._stack import OPEN_STACK, STACK, STACK_HELP, RunningStack, local_stack
from bench.webhook_admission import KUBELET, prepare

GOAL = 1.1
MODES = ("secured", "open")


class Target:
    """One running stack, and what a round needs of it."""

    def __init__(self, mode: str, stack: RunningStack) -> None:
        self.mode = mode
        self.stack = stack
        self.webhook_pid = stack.pids[stack.webhooks[0]]
        self.api: Any = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(stack.kubeconfig))

    def lane(self, number: int, spreads: int) -> Lane:
        """Fresh WorkloadSpreads for round ``number``, and where to review their pods."""
        targets = [(ns, prepare(self.api, ns))
                   for ns in (f"{self.mode}-bus-{number}-{i}" for i in range(spreads))]
        return Lane(f"https://127.0.0.1:{self.stack.webhook_ports[0]}/mutate-pod",
                    self.stack.tls, targets, self.webhook_pid)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rate", type=int, default=100, help="reviews per second to each")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each round")
    parser.add_argument("--one-at-a-time", type=int, default=300,
                        help="then this many reviews each, one at a time, the two taking turns")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each mode, alternating")
    parser.add_argument("--spreads", type=int, default=20,
                        help="WorkloadSpreads (namespaces) each round's reviews are spread over")
    parser.add_argument(STACK, type=Path, help=STACK_HELP + " (its bus secured)")
    parser.add_argument(OPEN_STACK, type=Path, help=STACK_HELP + " (its bus open)")
    args = _tiny.arguments(parser, argv, {"rate": 20, "seconds": 0.5, "one_at_a_time": 5,
                                          "rounds": 1, "spreads": 2})
    results: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="spreadbus-bench-") as tmp, ExitStack() as running:
        targets = []
        for mode, given in zip(MODES, (args.stack, args.open_stack), strict=True):
            stack = running.enter_context(local_stack(
                given, Path(tmp) / mode, kubesim_args=["--topology=three-zones", *KUBELET],
                secured_bus=mode == "secured"))
            targets.append(Target(mode, stack))
            running.callback(targets[-1].api.close)
        for number in range(args.rounds):
            # each goes first in the interleaving in every other round
            ordered = targets if number % 2 == 0 else targets[::-1]
            lanes = [target.lane(number, args.spreads) for target in ordered]
            loop = asyncio.run(interleaved(lanes, args.rate, args.seconds))
            single = asyncio.run(one_at_a_time(lanes, args.one_at_a_time))
            for target, r, one in zip(ordered, loop, single, strict=True):
                r.update({f"one_{key}": value for key, value in one.items()})
                results[target.mode].append(r)
                print(f"round {number + 1}, {target.mode} bus: at {args.rate}/s p50 "
                      f"{r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms, max {r['max_ms']:.2f} ms, "
                      f"achieved {r['achieved']:.0f}/s, webhook CPU {r['cpu_us']:.0f} us per "
                      f"review; one at a time p50 {one['p50_ms']:.2f} ms, p99 "
                      f"{one['p99_ms']:.2f} ms; not steered "
                      f"{r['not_steered'] + one['not_steered']:.0f}", flush=True)
    print(f"cores: {os.cpu_count()}, {args.rate} reviews/s to each for {args.seconds:g} s, then "
          f"{args.one_at_a_time} one at a time, per round; {args.rounds} round(s), over "
          f"{args.spreads} WorkloadSpreads each")
    keys = ("p50_ms", "p99_ms", "cpu_us", "one_p50_ms", "one_p99_ms")
    median = {mode: {key: statistics.median(r[key] for r in results[mode]) for key in keys}
              for mode in MODES}
    for mode in MODES:
        m = median[mode]
        print(f"{mode} bus, median of the rounds: at {args.rate}/s p50 {m['p50_ms']:.2f} ms, "
              f"p99 {m['p99_ms']:.2f} ms, webhook CPU {m['cpu_us']:.0f} us per review; one at "
              f"a time p50 {m['one_p50_ms']:.2f} ms, p99 {m['one_p99_ms']:.2f} ms")
    for key, what in (("p50_ms", f"p50 at {args.rate}/s"), ("p99_ms", f"p99 at {args.rate}/s"),
                      ("one_p50_ms", "p50 one at a time"), ("one_p99_ms", "p99 one at a time"),
                      ("cpu_us", "webhook CPU per review")):
        # CPU is counted in clock ticks: a tiny run may see none on the open side
        opened = median["open"][key]
        ratio = median["secured"][key] / opened if opened else float("nan")
        goal = f" (goal under {GOAL}: {ratio / GOAL:.3f} of it)" if key != "cpu_us" else ""
        print(f"ratio {what} secured/open: {ratio:.3f}{goal}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
