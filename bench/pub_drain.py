"""Draining a 100-pod node under a 10% PodUnavailableBudget: how close to the budget's own pace.

The budget lets 10 of the Deployment's 100 pods be unavailable, so a drain must go in waves: ten
evictions, then wait until their replacements are ready elsewhere and the planner has written a
status counting them, then the next ten. The pace the budget itself forces is therefore
``(waves - 1) x T_replace``, with ``T_replace`` the time the Deployment takes to replace a deleted
pod with a ready one on this stack (its controllers, scheduler and kubelet, no budget involved),
measured in the same run by deleting three of its pods one at a time (the Deployment has 103
replicas on the node, so 100 remain there). The benchmark drains the node the way ``kubectl
drain`` does (cordon, then evict every pod in parallel through the Eviction API, retrying each
refused eviction) but retries every 100 ms where kubectl waits 5 s, so the ratio measures
spreadbus (watcher, planner, actuator, webhook) rather than kubectl's retry timer.

The webhook decides on the budget status it has observed through the bus, which can trail the
API server's by a moment on a busy host: a probe's deletion it refuses for a budget not yet
settled in its view is sent again (each probe is timed from the deletion it admitted).

Printed: the drain time, ``T_replace`` (and the probe deletions refused before the webhook saw
the budget settled), the forced time and ``ratio`` drain/forced (goal under 1.2).
Run: ``python -m bench.pub_drain [--pods 100] [--percent 10] [--probes 3]``.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from bench import _tiny
from spreadbus.cli.local_stack import Stack

GOAL = 1.2
NS = "drain"
KUBELET = ["--create-delay=0.2", "--start-delay=0.5", "--ready-delay=0.8",
           "--max-termination-grace=0.2", "--no-events"]


@dataclass(frozen=True)
class Sizes:
    pods: int
    """Pods left on the node to drain, after the probes."""
    probes: int
    """Pods deleted one at a time to measure ``T_replace``."""
    percent: int
    """The budget's ``maxUnavailable``, a percentage of every pod."""

    @property
    def replicas(self) -> int:
        return self.pods + self.probes


def deployment(sizes: Sizes) -> dict[str, Any]:
    container = {"name": "app", "image": "nginx:1", "resources": {"requests": {"cpu": "1m"}}}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app"},
        "spec": {"replicas": sizes.replicas, "selector": {"matchLabels": {"app": "app"}},
                 "template": {"metadata": {"labels": {"app": "app"}},
                              "spec": {"terminationGracePeriodSeconds": 0,
                                       "containers": [container]}}},
    }


def budget(sizes: Sizes) -> dict[str, Any]:
    return {"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
            "metadata": {"name": "app"},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "app"},
                     "maxUnavailable": f"{sizes.percent}%"}}


def ready(pod: Any) -> bool:
    return pod.metadata.deletion_timestamp is None and any(
        c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def wait(what: str, check: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.05)


def cordon(core: Any, node: str, unschedulable: bool) -> None:
    core.patch_node(node, {"spec": {"unschedulable": unschedulable}})


def ready_count(core: Any) -> int:
    return sum(1 for p in core.list_namespaced_pod(NS, label_selector="app=app").items
               if ready(p))


def delete_admitted(core: Any, name: str, timeout: float) -> tuple[float, int]:
    """Delete the pod, sent again while the webhook refuses it for a budget its view has not
    yet seen settled; when the deletion it admitted was sent, and how many it refused."""
    deadline = time.monotonic() + timeout
    refused = 0
    while True:
        sent = time.monotonic()
        try:
            core.delete_namespaced_pod(name, NS)
            return sent, refused
        except ApiException as exc:
            if exc.status != 403 or "unavailable allowed" not in str(exc.body):
                raise
            if time.monotonic() > deadline:
                raise TimeoutError(f"the webhook still refuses to delete {name}: "
                                   f"{exc.body}") from exc
            refused += 1
        time.sleep(0.05)


def time_to_replace(core: Any, node: str, replicas: int) -> tuple[float, int]:
    """Deletion of one of the Deployment's pods on ``node`` to its replacement ready, and the
    times the webhook refused that deletion before."""
    (victim, *_) = [p.metadata.name for p in core.list_namespaced_pod(
        NS, field_selector=f"spec.nodeName={node}").items if ready(p)]
    started, refused = delete_admitted(core, victim, 30)
    wait("the pod to go", lambda: ready_count(core) < replicas, 30)
    wait("its replacement ready", lambda: ready_count(core) == replicas, 60)
    return time.monotonic() - started, refused


def evict_until_gone(core: Any, name: str) -> None:
    body = {"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": name, "namespace": NS}}
    while True:
        try:
            core.create_namespaced_pod_eviction(name, NS, body)
            return
        except ApiException as exc:
            if exc.status == 404:
                return
            if exc.status != 429:
                raise
        time.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pods", type=int, default=100, help="pods on the node drained")
    parser.add_argument("--percent", type=int, default=10, help="the budget's maxUnavailable, %%")
    parser.add_argument("--probes", type=int, default=3,
                        help="pods deleted one at a time to measure T_replace")
    args = _tiny.arguments(parser, argv, {"pods": 6, "percent": 50, "probes": 1})
    sizes = Sizes(pods=args.pods, probes=args.probes, percent=args.percent)
    allowed = allowed_at_once(sizes)
    if allowed < 1 or math.ceil(sizes.pods / allowed) < 2:
        parser.error("--percent must let a pod go and force at least two waves of evictions "
                     f"(it lets {allowed} of {sizes.replicas} go at a time)")
    with tempfile.TemporaryDirectory(prefix="spreadbus-bench-") as tmp:
        data_dir = Path(tmp) / "stack"
        stack = Stack(data_dir=data_dir, cluster="bench",
                      kubesim_args=["--topology=three-zones", *KUBELET],
                      service_env={k: v for k, v in os.environ.items()
                                   if k.startswith("SPREADBUS_PUB_")})
        try:
            stack.start(120.0)
            api = config.new_client_from_config(  # type: ignore[no-untyped-call]
                config_file=str(data_dir / "kubeconfig"))
            with api:
                result = run(api, sizes)
        finally:
            stack.stop()
    drained, t_ready, forced, allowed, refused = result
    print(f"cores: {os.cpu_count()}, {sizes.pods} pods on one node, budget maxUnavailable "
          f"{sizes.percent}%")
    print(f"drain {drained:.2f} s; T_replace {t_ready:.2f} s (probe deletions refused before "
          f"the webhook saw the budget settled: {refused}); forced by the budget "
          f"{forced:.2f} s ({allowed} at a time)")
    print(f"ratio drain/forced: {drained / forced:.3f} (goal under {GOAL})")
    return 0


def allowed_at_once(sizes: Sizes) -> int:
    """The budget's ``unavailableAllowed`` once every pod is ready (Kruise rounds up)."""
    return math.ceil(sizes.replicas * sizes.percent / 100)


def run(api: client.ApiClient, sizes: Sizes) -> tuple[float, float, float, int, int]:
    core: Any = client.CoreV1Api(api)
    nodes = sorted(n.metadata.name for n in core.list_node().items)
    target, others = nodes[0], nodes[1:]
    core.create_namespace({"metadata": {"name": NS}})
    for node in others:
        cordon(core, node, True)
    custom: Any = client.CustomObjectsApi(api)
    apps: Any = client.AppsV1Api(api)
    custom.create_namespaced_custom_object(
        "policy.kruise.io", "v1alpha1", NS, "podunavailablebudgets", budget(sizes))
    apps.create_namespaced_deployment(NS, deployment(sizes))

    def all_ready_on_target() -> bool:
        pods = core.list_namespaced_pod(NS, label_selector="app=app").items
        return sum(1 for p in pods if ready(p) and p.spec.node_name == target) == sizes.replicas

    wait("the ready pods on one node", all_ready_on_target, 180)
    allowed = allowed_at_once(sizes)

    def settled() -> bool:
        obj = custom.get_namespaced_custom_object(
            "policy.kruise.io", "v1alpha1", NS, "podunavailablebudgets", "app")
        return (obj.get("status") or {}).get("unavailableAllowed") == allowed

    wait("the budget to settle", settled, 60)
    for node in others:
        cordon(core, node, False)
    cordon(core, target, True)
    probes = [time_to_replace(core, target, sizes.replicas) for _ in range(sizes.probes)]
    t_ready = statistics.median(seconds for seconds, _ in probes)
    wait("the budget to settle again", settled, 60)
    names = [p.metadata.name for p in core.list_namespaced_pod(
        NS, field_selector=f"spec.nodeName={target}").items]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        list(pool.map(lambda name: evict_until_gone(core, name), names))
        wait("the node to empty", lambda: not core.list_namespaced_pod(
            NS, field_selector=f"spec.nodeName={target}").items, 600)
    drained = time.monotonic() - started
    assert len(names) == sizes.pods, f"{len(names)} pods on the node"
    waves = math.ceil(sizes.pods / allowed)
    return drained, t_ready, (waves - 1) * t_ready, allowed, sum(n for _, n in probes)


if __name__ == "__main__":
    raise SystemExit(main())
