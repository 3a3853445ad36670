"""Answer latency of the pod webhook for pod DELETE under a PodUnavailableBudget, at 200/s.

The webhook runs as ``spreadbus up`` runs it (its own process, real TLS, its view following the
bus, budgets spent by compare-and-set on the NATS key-value bucket). Each of ``--budgets``
namespaces holds a Deployment of 30 ready pods (``--pods``) under a budget with
``maxUnavailable: 25`` (``--max-unavailable``), its status written by the planner. DELETE reviews
(the stored pod as ``oldObject``, ready and linked to the budget) are sent open loop, round robin
over the namespaces and over each Deployment's pods (the pods are not deleted: the API server
would do that only after the answer), over HTTPS with the client certificate kubesim presents
(the stack's webhook serves no one else): the first review of 25 pods per budget is allowed and
spends the budget (a compare-and-set write on NATS), the other 5 pods are refused on the spent
entry, and a repeated review of a recorded pod is
allowed without spending, which is the steady state of a drain or a rollout that a budget
throttles and whose clients retry. Latency runs from the scheduled send time to the answer.

The limit is the pod CREATE admission of the same webhook in the same run: pod CREATE reviews
steered by a WorkloadSpread (as :mod:`bench.webhook_admission` sends them, a reservation written
to NATS each) in ``--spreads`` namespaces of their own, also at 200/s, each scheduled halfway
between two DELETE reviews, so a moment the host takes away from the webhook falls on both
alike.

Printed: p50, p99 and max over all DELETE answers, for the allowed and refused ones and for the
CREATE answers, the webhook process's CPU per review (both kinds), and ``ratio`` DELETE p99
against CREATE p99 (goal at most 1.2).
Run: ``python -m bench.pub_delete_admission [--seconds 5] [--budgets 10] [--pods 30]
[--max-unavailable 25] [--spreads 10]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
from kubernetes import client, config

from bench import _tiny
from bench import webhook_admission as creates
from bench._reviews import latency_ms, pod_review
from bench._stack import STACK, STACK_HELP, local_stack
from bench.webhook_admission import client_for, cpu_seconds, open_pool, steered, until_steered

GOAL_RATIO = 1.2
"""DELETE p99 against CREATE p99, at most."""
RATE = 200
KUBELET = ["--create-delay=0.01", "--start-delay=0.02", "--ready-delay=0.01", "--no-events"]


def budget(max_unavailable: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy.kruise.io/v1alpha1",
        "kind": "PodUnavailableBudget",
        "metadata": {"name": "bench"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "bench"},
                 "maxUnavailable": max_unavailable},
    }


def deployment(pods: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "bench"},
        "spec": {
            "replicas": pods,
            "selector": {"matchLabels": {"app": "bench"}},
            "template": {"metadata": {"labels": {"app": "bench"}},
                         "spec": {"containers": [{"name": "app", "image": "nginx:1",
                                                  "resources": {"requests": {"cpu": "1m"}}}]}},
        },
    }


def review(namespace: str, name: str) -> bytes:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "bench"},
                     "annotations": {"kruise.io/related-pub": "bench"}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }
    return pod_review(pod, operation="DELETE", username="bench")


def prepare(api: client.ApiClient, namespace: str, pods: int, max_unavailable: int) -> None:
    core: Any = client.CoreV1Api(api)
    custom: Any = client.CustomObjectsApi(api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    custom.create_namespaced_custom_object("policy.kruise.io", "v1alpha1", namespace,
                                           "podunavailablebudgets", budget(max_unavailable))
    apps: Any = client.AppsV1Api(api)
    apps.create_namespaced_deployment(namespace, deployment(pods))


def pod_names(api: client.ApiClient, namespace: str) -> list[str]:
    core: Any = client.CoreV1Api(api)
    return sorted(p.metadata.name for p in core.list_namespaced_pod(namespace).items)


def settle(api: client.ApiClient, namespaces: list[str], max_unavailable: int) -> None:
    custom: Any = client.CustomObjectsApi(api)
    deadline = time.monotonic() + 120
    for namespace in namespaces:
        while True:
            obj = custom.get_namespaced_custom_object("policy.kruise.io", "v1alpha1", namespace,
                                                      "podunavailablebudgets", "bench")
            if (obj.get("status") or {}).get("unavailableAllowed") == max_unavailable:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"budget in {namespace} never settled: {obj.get('status')}")
            time.sleep(0.2)


def percentiles(values: list[float]) -> tuple[float, float, float]:
    if not values:
        return (0.0, 0.0, 0.0)
    shown = latency_ms(values)
    return shown["p50_ms"], shown["p99_ms"], shown["max_ms"]


async def run(urls: tuple[str, str], tls: Path, pods: dict[str, list[str]],
              targets: list[tuple[str, tuple[str, str]]], seconds: float,
              webhook_pid: int) -> dict[str, Any]:
    """DELETE reviews to ``urls[0]`` and CREATE reviews of ``targets`` to ``urls[1]``, both at
    :data:`RATE`, interleaved."""
    delete_url, create_url = urls
    namespaces = sorted(pods)
    client = client_for(tls)
    try:
        await until_steered(client, [create_url], targets)

        def unlinked(i: int) -> bytes:  # a pod of no budget costs nothing
            body = json.loads(review(namespaces[0], f"warm-{i}"))
            body["request"]["oldObject"]["metadata"]["annotations"] = {}
            return json.dumps(body).encode()

        await open_pool(client, [delete_url], unlinked)
        for namespace in namespaces:  # a first spend per budget, as the WorkloadSpread bench
            # warms its ledgers (a pod that does not exist costs the budget nothing for long)
            await client.post(delete_url, review(namespace, "warm"))
        await asyncio.sleep(1.0)
        count = int(RATE * seconds)
        bodies = []
        for i in range(count):
            namespace = namespaces[i % len(namespaces)]
            names = pods[namespace]
            bodies.append(review(namespace, names[(i // len(namespaces)) % len(names)]))
        created = [creates.review(*targets[i % len(targets)], f"pod-{i}") for i in range(count)]
        allowed: list[float] = []
        refused: list[float] = []
        steering: list[float] = []
        not_steered = 0

        async def send(body: bytes, scheduled: float) -> None:
            answer = msgspec.json.decode(await client.post(delete_url, body))
            took = time.perf_counter() - scheduled
            (allowed if answer["response"]["allowed"] else refused).append(took)

        async def create(body: bytes, scheduled: float) -> None:
            nonlocal not_steered
            answer = msgspec.json.decode(await client.post(create_url, body))
            steering.append(time.perf_counter() - scheduled)
            if not steered(answer):
                not_steered += 1

        tasks = []
        cpu_before = cpu_seconds(webhook_pid)
        started = time.perf_counter()
        for i, (body, pod) in enumerate(zip(bodies, created, strict=True)):
            for offset, sent in ((0.0, send(body, started + i / RATE)),
                                 (0.5, create(pod, started + (i + 0.5) / RATE))):
                delay = started + (i + offset) / RATE - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                tasks.append(asyncio.create_task(sent))
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - started
        cpu = cpu_seconds(webhook_pid) - cpu_before
    finally:
        await client.close()
    return {"count": count, "all": percentiles(allowed + refused),
            "allowed": percentiles(allowed), "refused": percentiles(refused),
            "create": percentiles(steering), "not_steered": not_steered,
            "n_allowed": len(allowed), "n_refused": len(refused),
            "achieved": count / elapsed, "cpu_us": cpu / (2 * count) * 1e6}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--budgets", type=int, default=10,
                        help="budgets (namespaces) the reviews are spread over")
    parser.add_argument("--pods", type=int, default=30, help="ready pods under each budget")
    parser.add_argument("--max-unavailable", type=int, default=25,
                        help="each budget's maxUnavailable (the rest of its pods are refused)")
    parser.add_argument("--spreads", type=int, default=10,
                        help="WorkloadSpreads (namespaces) the CREATE reviews are spread over")
    parser.add_argument(STACK, type=Path, help=STACK_HELP)
    args = _tiny.arguments(parser, argv, {"seconds": 0.25, "budgets": 1, "pods": 3,
                                          "max_unavailable": 2, "spreads": 1})
    if not 0 < args.max_unavailable < args.pods:
        parser.error("--max-unavailable must leave a pod to refuse: 0 < it < --pods")
    with tempfile.TemporaryDirectory(prefix="spreadbus-bench-") as tmp, \
            local_stack(args.stack, Path(tmp) / "stack",
                        kubesim_args=["--topology=three-zones", *KUBELET]) as stack:
        base = f"https://127.0.0.1:{stack.webhook_ports[0]}"
        api = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(stack.kubeconfig))
        with api:
            namespaces = [f"budget-{i}" for i in range(args.budgets)]
            for namespace in namespaces:
                prepare(api, namespace, args.pods, args.max_unavailable)
            settle(api, namespaces, args.max_unavailable)
            pods = {namespace: pod_names(api, namespace) for namespace in namespaces}
            targets = [(ns, creates.prepare(api, ns))
                       for ns in (f"budget-create-{i}" for i in range(args.spreads))]
            time.sleep(1.0)  # the webhook's view follows the written status
            result = asyncio.run(run((f"{base}/validate-pod", f"{base}/mutate-pod"), stack.tls,
                                     pods, targets, args.seconds,
                                     stack.pids[stack.webhooks[0]]))
    print(f"cores: {os.cpu_count()}, DELETE reviews at {RATE}/s over {args.budgets} budgets "
          f"for {args.seconds:g} s ({result['count']} reviews: {result['n_allowed']} allowed, "
          f"{result['n_refused']} refused), achieved {result['achieved']:.0f}/s, "
          f"interleaved with as many CREATE reviews over {args.spreads} WorkloadSpreads "
          f"({result['not_steered']} not steered), webhook CPU {result['cpu_us']:.0f} us per "
          "review (both kinds)")
    for label in ("all", "allowed", "refused", "create"):
        p50, p99, worst = result[label]
        print(f"{label}: p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {worst:.2f} ms")
    create_p99 = result["create"][1]
    ratio = result["all"][1] / create_p99 if create_p99 else float("inf")
    print(f"ratio p99 DELETE/CREATE at {RATE}/s: {ratio:.3f} (goal at most {GOAL_RATIO:g}; "
          f"CREATE p99 {create_p99:.2f} ms in the same run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
