"""The actuator's Kubernetes API requests for the seed's elastic example, 0 -> 150 pods.

Each plan is checked against its governor (the WorkloadSpread, and the pod's ReplicaSet) before
it is written. Measured on ``spreadbus up``'s stack at the actuator's default rate (20 requests/s,
burst 40), twice in this run:

- **kept**: the actuator as shipped, reusing a governor read for 3 s and a ReplicaSet read for
  30 s (:mod:`services.actuator.scope_cache`);
- **every read**: ``--scope-governor-seconds 0 --scope-link-seconds 0``, every read sent.

Each run has two phases: the example scaled 0 -> 150 (the webhook writes nearly every deletion
cost at admission, the actuator little), then the same WorkloadSpread created over a Deployment
of 150 running pods (the actuator writes every pod's cost: what the check's reads multiply).
Printed per phase: the actuator's requests by method (``spreadbus_actuator_api_requests_total``)
once it is quiet, its outcomes, and the seconds until every pod has its deletion cost (the first
phase: and runs 100/50); then the ``ratio`` of the requests, kept / every read.
Run: ``python -m bench.actuator_scope_reads [--replicas 150] [--quiet-seconds 5]``.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from kubernetes import client

from bench import _tiny
from spreadbus.cli.local_stack import Child, Stack
from tests.workloadspread_e2e.stack import (
    DELETION_COST,
    create_namespace,
    create_spread,
    deployment,
    elastic_spread,
    live_pods,
    running_stack,
    split,
    wait_for,
)

NS = "elastic"
LATE = "late-spread"
DEFAULT_RATE = {"SPREADBUS_KUBE_QPS": "20", "SPREADBUS_KUBE_BURST": "40"}
EVERY_READ = {"SPREADBUS_SCOPE_GOVERNOR_SECONDS": "0", "SPREADBUS_SCOPE_LINK_SECONDS": "0"}


def metrics(child: Child) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{child.health_port}/metrics",
                                timeout=5) as response:
        return str(response.read().decode())


def labelled(text: str, name: str, label: str) -> Counter[str]:
    found: Counter[str] = Counter()
    for value, count in re.findall(rf'^{name}\{{[^}}]*{label}="([^"]*)"[^}}]*\}} (\S+)$', text,
                                   re.MULTILINE):
        found[value] += int(float(count))
    return found


def actuator_counts(stack: Stack) -> tuple[Counter[str], Counter[str]]:
    """API requests by method and outcomes by result, summed over the actuators."""
    requests: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    for child in stack.services:
        if child.name.startswith("actuator"):
            text = metrics(child)
            requests += labelled(text, "spreadbus_actuator_api_requests_total", "method")
            outcomes += labelled(text, "spreadbus_actuator_outcomes_total", "result")
    return requests, outcomes


Counts = tuple[Counter[str], Counter[str]]


def quiet_counts(stack: Stack, quiet_seconds: float) -> Counts:
    """The actuators' counts once they have not moved for ``quiet_seconds``."""
    last: Counts | None = None
    quiet_since = time.monotonic()
    while True:
        counts = actuator_counts(stack)
        if counts != last:
            last, quiet_since = counts, time.monotonic()
        elif time.monotonic() - quiet_since >= quiet_seconds:
            return counts
        time.sleep(0.5)


def elastic(namespace: str, fixed: int) -> dict[str, Any]:
    body = elastic_spread("ws-demo", "workload-xxx", fixed)
    body["metadata"]["namespace"] = namespace
    return body


def costed(api: client.ApiClient, namespace: str, replicas: int,
           want: dict[str, int] | None) -> bool:
    pods = live_pods(api, namespace, "workload-xxx")
    return (len(pods) == replicas and (want is None or split(pods, running=True) == want)
            and all(DELETION_COST in (p.metadata.annotations or {}) for p in pods))


Phase = tuple[Counter[str], Counter[str], float]


def run(replicas: int, env: dict[str, str], quiet_seconds: float) -> dict[str, Phase]:
    """Two phases on one stack: the example scaled 0 -> ``replicas`` (the webhook writes most
    costs at admission), then the same WorkloadSpread created over ``replicas`` running pods
    (the actuator writes every cost)."""
    fixed = min(100, replicas)
    phases: dict[str, Phase] = {}
    with tempfile.TemporaryDirectory() as tmp, \
            running_stack(Path(tmp), "elastic", {**DEFAULT_RATE, **env}) as (stack, api):
        apps: Any = client.AppsV1Api(api)
        before = quiet_counts(stack, quiet_seconds)
        create_spread(api, NS, elastic(NS, fixed))
        apps.create_namespaced_deployment(NS, deployment("workload-xxx", 0))
        started = time.monotonic()
        apps.patch_namespaced_deployment("workload-xxx", NS, {"spec": {"replicas": replicas}})
        want = {"ACK": fixed, "ECI": replicas - fixed} if replicas > fixed else {"ACK": fixed}
        wait_for(f"{replicas} pods running {want} with deletion costs",
                 lambda: costed(api, NS, replicas, want), 600)
        seconds = time.monotonic() - started
        after = quiet_counts(stack, quiet_seconds)
        phases["scale-up"] = (after[0] - before[0], after[1] - before[1], seconds)

        create_namespace(api, LATE)
        apps.create_namespaced_deployment(LATE, deployment("workload-xxx", replicas))
        wait_for(f"{replicas} pods running", lambda: len(
            [p for p in live_pods(api, LATE, "workload-xxx") if p.status.phase == "Running"]
        ) == replicas, 600)
        before = quiet_counts(stack, quiet_seconds)
        started = time.monotonic()
        create_spread(api, LATE, elastic(LATE, fixed))
        wait_for(f"{replicas} pods with deletion costs",
                 lambda: costed(api, LATE, replicas, None), 600)
        seconds = time.monotonic() - started
        after = quiet_counts(stack, quiet_seconds)
        phases["spread over running pods"] = (after[0] - before[0], after[1] - before[1],
                                              seconds)
    return phases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=150)
    parser.add_argument("--quiet-seconds", type=float, default=5.0,
                        help="the actuators' counts are read once unchanged this long")
    args = _tiny.arguments(parser, argv, {"replicas": 3, "quiet_seconds": 1.0})
    totals: dict[tuple[str, str], int] = {}
    for name, env in (("kept", {}), ("every read", EVERY_READ)):
        for phase, (requests, outcomes, seconds) in run(args.replicas, env,
                                                         args.quiet_seconds).items():
            totals[name, phase] = sum(requests.values())
            print(f"{name}, {phase}: {totals[name, phase]} API requests "
                  f"{dict(sorted(requests.items()))}, outcomes {dict(sorted(outcomes.items()))}, "
                  f"{args.replicas} pods costed in {seconds:.1f} s", flush=True)
    for phase in ("scale-up", "spread over running pods"):
        every = totals["every read", phase]
        ratio = totals["kept", phase] / every if every else float("nan")
        print(f"ratio {phase}: requests kept / every read: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
