"""Admission latency of the pod webhook over HTTPS keep-alive, at 200 and 1,000 admissions/s.

The webhook runs as ``spreadbus up`` runs it (its own process, real TLS, its view following the
bus, slots reserved by compare-and-set on the NATS key-value bucket). For each rate, fresh
namespaces each hold a WorkloadSpread of three subsets over a Deployment, so every review is a
real steering decision with a reservation written to NATS. Reviews are sent open loop (each at
its scheduled time, over a pool of keep-alive connections) round robin over the namespaces;
latency runs from the scheduled time to the answer, so a webhook falling behind shows as latency
rather than as a slower send rate. The client is :mod:`bench._keepalive_client`, which leaves
the webhook more of the host than aiohttp's did.

The reviewed pods are never created, so their reservations stay in their WorkloadSpread's ledger
until they expire (30 s), where a real pod's is pruned once the webhook observes it (within a
fraction of a second). The ledger is rewritten whole on every compare-and-set, so one ledger
collecting thousands of never-pruned entries measures the benchmark, not the webhook;
``--spreads`` (default 20) spreads the load over that many WorkloadSpreads to keep each ledger
near its real size. ``--spreads 1`` shows the single-ledger case.

Printed per rate: p50, p99, max, the webhook process's CPU time per review over the measured
run (user plus system, from ``/proc``; its view follows no pods here, so this is the answer
path alone), the 99th percentile as the webhook's own answer-time histogram has it (parse to
answer, without TLS, sockets or waiting for a core: what is left is the host's), the CPU per
review of nats-server and of this client process (the three share the host's cores), and
``ratio`` lines: p99 against the goal of its rate (:data:`GOALS_MS`: 3 ms at
200/s on one replica, 20 ms at 1,000/s on as many replicas as it takes), and the rate achieved
against the rate asked. ``--replicas`` (default 1) starts that many webhook replicas and sends
the reviews to them round robin, the CPU time then summed over them; every line says how many.
``--rates`` runs only the rates named. Run:
``python -m bench.webhook_admission [--seconds 5] [--replicas 1] [--rates 200,1000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import tempfile
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
from kubernetes import client, config

from bench import _tiny
from bench._keepalive_client import KeepAliveClient
from bench._reviews import api_server_tls, latency_ms, pod_review
from bench._stack import STACK, STACK_HELP, local_stack
from spreadbus.features.workloadspread.core.model import MATCHED_ANNOTATION as MATCHED

GOALS_MS = {200: 3.0, 1000: 20.0}
"""p99 goal by rate: 200/s on one replica, 1,000/s on as many replicas as needed."""
RATES = tuple(GOALS_MS)
POOL = 64
"""Keep-alive connections to each replica the reviews are sent over, all opened before
measuring."""
KUBELET = ["--create-delay=0.01", "--start-delay=0.02", "--ready-delay=0.01", "--no-events"]


def workloadspread() -> dict[str, Any]:
    def subset(zone: str, limit: int | None) -> dict[str, Any]:
        out: dict[str, Any] = {"name": zone, "requiredNodeSelectorTerm": {"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}}
        if limit is not None:
            out["maxReplicas"] = limit
        return out

    return {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "WorkloadSpread",
        "metadata": {"name": "bench"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "bench"},
            "subsets": [subset("zone-a", 2000), subset("zone-b", 2000), subset("zone-c", None)],
        },
    }


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "bench"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "bench"}},
            "template": {"metadata": {"labels": {"app": "bench"}},
                         "spec": {"containers": [{"name": "app", "image": "nginx:1"}]}},
        },
    }


def review(namespace: str, owner: tuple[str, str], name: str) -> bytes:
    rs_name, rs_uid = owner
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name, "namespace": namespace, "labels": {"app": "bench"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs_name,
                                 "uid": rs_uid, "controller": True}],
        },
        "spec": {"containers": [{"name": "app", "image": "nginx:1"}]},
        "status": {"phase": "Pending"},
    }
    return pod_review(pod, operation="CREATE",
                      username="system:serviceaccount:kube-system:replicaset-controller")


def prepare(api: client.ApiClient, namespace: str) -> tuple[str, str]:
    """A WorkloadSpread over a Deployment in ``namespace``; its ReplicaSet's name and uid."""
    core: Any = client.CoreV1Api(api)
    apps: Any = client.AppsV1Api(api)
    custom: Any = client.CustomObjectsApi(api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    custom.create_namespaced_custom_object("apps.kruise.io", "v1alpha1", namespace,
                                           "workloadspreads", workloadspread())
    apps.create_namespaced_deployment(namespace, deployment())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        response = apps.list_namespaced_replica_set(namespace, _preload_content=False)
        items = json.loads(response.data)["items"]
        if items:
            meta = items[0]["metadata"]
            return str(meta["name"]), str(meta["uid"])
        time.sleep(0.1)
    raise TimeoutError("no ReplicaSet for the benchmark Deployment")


def steered(answer: dict[str, Any]) -> bool:
    """The answer carries the matched annotation (as a key in a value, or escaped in a path)."""
    patch = answer.get("response", {}).get("patch")
    if not patch:
        return False
    text = base64.b64decode(patch).decode()
    return MATCHED in text or MATCHED.replace("/", "~1") in text


HISTOGRAM = "spreadbus_webhook_admission_duration_seconds_bucket"


def answer_buckets(health_ports: list[int]) -> Counter[float]:
    """Cumulative counts of the replicas' own answer-time histogram for ``/mutate-pod``, by
    upper bound in seconds, summed over the replicas."""
    counts: Counter[float] = Counter()
    for port in health_ports:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            text = response.read().decode()
        for line in text.splitlines():
            if line.startswith(HISTOGRAM) and 'path="/mutate-pod"' in line:
                labels, value = line.rsplit(" ", 1)
                bound = labels.split('le="', 1)[1].split('"', 1)[0]
                counts[float(bound)] += int(float(value))
    return counts


def answer_p99_bound(before: Counter[float], after: Counter[float]) -> float:
    """The histogram bound (ms) under which 99% of the answers between the two scrapes fell,
    as timed inside the webhook (parse to encoded answer; no TLS, no socket, no queueing
    for the process's turn on a core)."""
    bounds = sorted(after)
    total = after[bounds[-1]] - before[bounds[-1]]
    for bound in bounds:
        if total and after[bound] - before[bound] >= 0.99 * total:
            return bound * 1000
    return float("inf")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def until_steered(client: KeepAliveClient, urls: list[str],
                        targets: list[tuple[str, tuple[str, str]]]) -> None:
    """Until every replica's view holds every WorkloadSpread of ``targets``."""
    deadline = time.monotonic() + 30
    for url, (namespace, owner) in ((u, t) for u in urls for t in targets):
        while True:
            body = review(namespace, owner, f"probe-{uuid.uuid4()}")
            if steered(msgspec.json.decode(await client.post(url, body))):
                break
            if time.monotonic() > deadline:
                raise TimeoutError("the webhook never steered a pod of the benchmark")
            await asyncio.sleep(0.1)


async def open_pool(client: KeepAliveClient, urls: list[str],
                    bodies: Callable[[int], bytes]) -> None:
    """Opens the client's whole pool (:data:`POOL` connections to each URL) with the bodies
    ``bodies(i)`` gives, as an API server's connections to a webhook are open long before a
    burst: else the first slow answer opens new connections, whose TLS handshakes, in the
    measured run, slow the answers further."""
    for wave in range(3):
        await asyncio.gather(*(client.post(urls[i % len(urls)], bodies(wave * POOL + i))
                               for i in range(POOL * len(urls))))


def client_for(tls: Path) -> KeepAliveClient:
    """A client presenting the API server's certificate, :data:`POOL` connections a replica."""
    return KeepAliveClient(api_server_tls(tls), POOL)


async def run_rate(urls: list[str], tls: Path, targets: list[tuple[str, tuple[str, str]]],
                   rate: int, seconds: float, webhook_pids: list[int],
                   health_ports: list[int], nats_pids: list[int]) -> dict[str, float]:
    client = client_for(tls)
    try:
        await until_steered(client, urls, targets)
        await open_pool(client, urls,
                        lambda i: review(*targets[i % len(targets)], f"warm-{rate}-{i}"))

        count = int(rate * seconds)
        bodies = [review(*targets[i % len(targets)], f"pod-{rate}-{i}") for i in range(count)]
        latencies: list[float] = []
        failures = 0

        async def send(url: str, body: bytes, scheduled: float) -> None:
            nonlocal failures
            answer = await client.post(url, body)
            latencies.append(time.perf_counter() - scheduled)
            if not steered(msgspec.json.decode(answer)):
                failures += 1

        tasks = []
        buckets_before = answer_buckets(health_ports)
        cpu_before = sum(cpu_seconds(pid) for pid in webhook_pids)
        nats_before = sum(cpu_seconds(pid) for pid in nats_pids)
        client_before = time.process_time()
        started = time.perf_counter()
        for i, body in enumerate(bodies):
            scheduled = started + i / rate
            delay = scheduled - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(send(urls[i % len(urls)], body, scheduled)))
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - started
        cpu = sum(cpu_seconds(pid) for pid in webhook_pids) - cpu_before
        nats_cpu = sum(cpu_seconds(pid) for pid in nats_pids) - nats_before
        client_cpu = time.process_time() - client_before
        inside = answer_p99_bound(buckets_before, answer_buckets(health_ports))
    finally:
        await client.close()
    return {
        "count": count,
        **latency_ms(latencies),
        "achieved": count / elapsed,
        "not_steered": failures,
        "cpu_us": cpu / count * 1e6,
        "nats_cpu_us": nats_cpu / count * 1e6,
        "client_cpu_us": client_cpu / count * 1e6,
        "inside_p99_ms": inside,
    }


def rates(text: str) -> tuple[int, ...]:
    """``--rates``: some of :data:`RATES`, comma-separated."""
    try:
        chosen = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of numbers: {text!r}") from None
    unknown = [rate for rate in chosen if rate not in GOALS_MS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"no goal for rate(s) {unknown}; have {', '.join(map(str, RATES))}")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each rate's run")
    parser.add_argument("--spreads", type=int, default=20,
                        help="WorkloadSpreads (namespaces) the reviews are spread over")
    parser.add_argument("--replicas", type=int, default=1,
                        help="webhook replicas the reviews are sent to, round robin")
    parser.add_argument("--rates", type=rates, default=RATES,
                        help="comma-separated rates to run, of " + ",".join(map(str, RATES)))
    parser.add_argument(STACK, type=Path, help=STACK_HELP)
    args = _tiny.arguments(parser, argv, {"seconds": 0.1, "spreads": 2})
    results: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="spreadbus-bench-") as tmp, \
            local_stack(args.stack, Path(tmp) / "stack", webhook_replicas=args.replicas,
                        kubesim_args=["--topology=three-zones", *KUBELET]) as stack:
        replicas = min(args.replicas, len(stack.webhook_ports))
        urls = [f"https://127.0.0.1:{port}/mutate-pod" for port in stack.webhook_ports[:replicas]]
        pids = [stack.pids[name] for name in stack.webhooks[:replicas]]
        nats = [pid for name, pid in stack.pids.items() if name.startswith("nats-server")]
        health = [stack.health_ports[name] for name in stack.webhooks[:replicas]]
        api = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(stack.kubeconfig))
        with api:
            for rate in args.rates:
                targets = [(ns, prepare(api, ns))
                           for ns in (f"admission-{rate}-{i}" for i in range(args.spreads))]
                results[rate] = asyncio.run(run_rate(urls, stack.tls, targets, rate,
                                                     args.seconds, pids, health, nats))
    print(f"cores: {os.cpu_count()}, reviews spread over {args.spreads} WorkloadSpreads, "
          f"{replicas} webhook replica(s)")
    for rate, r in results.items():
        print(f"{rate}/s for {args.seconds:g} s ({r['count']:.0f} reviews): "
              f"p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms, max {r['max_ms']:.2f} ms, "
              f"achieved {r['achieved']:.0f}/s, not steered {r['not_steered']:.0f}, "
              f"webhook CPU (all replicas) {r['cpu_us']:.0f} us per review, "
              f"p99 inside the webhook under {r['inside_p99_ms']:g} ms (its histogram); "
              f"CPU per review of nats-server {r['nats_cpu_us']:.0f} us, of this client "
              f"{r['client_cpu_us']:.0f} us")
        goal = GOALS_MS[rate]
        print(f"ratio p99/goal at {rate}/s with {replicas} replica(s): "
              f"{r['p99_ms'] / goal:.3f} (goal {goal:g} ms)")
        print(f"ratio achieved/asked at {rate}/s: {r['achieved'] / rate:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
