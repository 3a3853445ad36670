"""``spreadbus demo --example uniteddeployment``: the elastic UnitedDeployment example, live.

The maxReplicas example of the UnitedDeployment documentation on the ``elastic`` topology: subset
``normal-nodes`` (the fixed pool, zone ``ack``) takes at most ``--fixed-max`` pods, subset
``elastic-nodes`` (the tainted virtual nodes of zone ``eci``) the rest. The demo applies the
UnitedDeployment with CloneSet subsets, scales it (``kubectl scale ud`` does the same, through the
scale subresource) out to ``--scale-out`` and back in to ``--scale-in``, and shows each subset's
pods while the planner re-allocates. Expected: the fixed pool fills first, the overflow lands in
the elastic pool, and scaling in drains the elastic pool first (the reverse of the fill order).
Each phase's split is printed as one JSON line on stdout, as the WorkloadSpread demo does.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live

from spreadbus.cli.demo import (
    NAMESPACE,
    Split,
    ensure_namespace,
    live_counts,
    print_final,
    render,
    report,
)
from spreadbus.cli.stack_errors import StackError

NAME = "sample-ud"
SUBSET_LABEL = "apps.kruise.io/subset-name"


def united_deployment(fixed_max: int) -> dict[str, Any]:
    def pool(zone: str) -> dict[str, Any]:
        return {"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}
        ]}

    labels = {"app": NAME}
    return {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "UnitedDeployment",
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {"cloneSetTemplate": {
                "metadata": {"labels": labels},
                "spec": {
                    "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels}, "spec": {"containers": [{
                        "name": "nginx", "image": "nginx:alpine",
                        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                    }]}},
                },
            }},
            "topology": {"subsets": [
                {"name": "normal-nodes", "maxReplicas": fixed_max, "nodeSelectorTerm": pool("ack")},
                {"name": "elastic-nodes", "nodeSelectorTerm": pool("eci"), "tolerations": [{
                    "key": "virtual-kubelet.io/provider", "operator": "Exists",
                    "effect": "NoSchedule",
                }]},
            ]},
        },
    }


def current_split(core: Any) -> Split:
    pods = core.list_namespaced_pod(NAMESPACE, label_selector=f"app={NAME}").items
    split: Split = {}
    for pod in pods:
        phase = "Terminating" if pod.metadata.deletion_timestamp else (pod.status.phase or "?")
        subset = (pod.metadata.labels or {}).get(SUBSET_LABEL, "(none)")
        split.setdefault(subset, Counter())[phase] += 1
    return split


def run_phase(live: Live, core: Any, title: str, done: Callable[[dict[str, int]], bool],
              timeout: float) -> Split:
    deadline = time.monotonic() + timeout
    while True:
        split = current_split(core)
        live.update(render(title, split))
        counts = live_counts(split)
        if done(counts) and not any(c.get("Terminating") for c in split.values()):
            return split
        if time.monotonic() > deadline:
            raise StackError(f"{title}: not reached in {timeout:.0f}s: {counts}")
        time.sleep(0.5)


def demo(kubeconfig: Path, args: argparse.Namespace, console: Console) -> dict[str, int]:
    from kubernetes import client, config

    api: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeconfig)
    )
    with api:
        core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
        ensure_namespace(core, NAMESPACE)
        custom.create_namespaced_custom_object(
            "apps.kruise.io", "v1alpha1", NAMESPACE, "uniteddeployments",
            united_deployment(args.fixed_max),
        )
        fixed, out, back = args.fixed_max, args.scale_out, args.scale_in

        def scale(replicas: int) -> None:
            custom.patch_namespaced_custom_object_scale(
                "apps.kruise.io", "v1alpha1", NAMESPACE, "uniteddeployments", NAME,
                {"spec": {"replicas": replicas}},
            )

        def split_is(normal: int, elastic: int) -> Callable[[dict[str, int]], bool]:
            return lambda c: (c.get("normal-nodes", 0) == normal
                              and c.get("elastic-nodes", 0) == elastic)

        with Live(console=console, refresh_per_second=4) as live:
            scale(out)
            grown = run_phase(live, core, f"scale out to {out}",
                              split_is(min(out, fixed), max(0, out - fixed)), args.phase_timeout)
            report("scale-out", grown)
            scale(back)
            final = run_phase(live, core, f"scale in to {back}",
                              split_is(min(back, fixed), max(0, back - fixed)),
                              args.phase_timeout)
        print_final(console, final)
        return live_counts(final)
