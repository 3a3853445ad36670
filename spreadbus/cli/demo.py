"""``spreadbus demo``: the elastic WorkloadSpread example, live, on the local stack.

``--example uniteddeployment`` runs the elastic UnitedDeployment example instead
(:mod:`spreadbus.cli.demo_uniteddeployment`); what follows describes the WorkloadSpread one.

A fixed pool (zone ``ack``) takes at most ``--fixed-max`` pods and an elastic pool of virtual
nodes (zone ``eci``, tainted) takes the rest (the elastic deployment example of WorkloadSpread). The
demo brings up the stack on the ``elastic`` topology (or uses one already running with
``--attach``), applies the WorkloadSpread and a Deployment, scales it out to ``--scale-out``
and back in to ``--scale-in``, and shows the pods per subset while it happens. Expected: the
fixed pool fills first, the overflow lands in the elastic pool, and scaling in removes the
elastic pods first (their deletion cost is lower). Each phase's split is printed as one JSON
line on stdout (``{"phase": ..., "split": ...}``), the last line is ``{"final": ...}``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from spreadbus.cli.data_dir_lock import DataDirInUse
from spreadbus.cli.local_stack import Stack, say
from spreadbus.cli.stack_errors import StackError
from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.model import DELETION_COST_ANNOTATION

NAMESPACE = "demo"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--example", choices=("workloadspread", "uniteddeployment"), default="workloadspread",
        help="which elastic example to run (default: %(default)s)",
    )
    parser.add_argument(
        "--data-dir", type=Path, default=Path(".spreadbus/demo"), metavar="DIR",
        help="state of the demo's own stack, or of the one --attach uses (default: "
        "%(default)s)",
    )
    parser.add_argument(
        "--attach",
        action="store_true",
        help="use the stack already running in --data-dir (started with --topology elastic) "
        "instead of starting one",
    )
    parser.add_argument("--fixed-max", type=int, default=100, metavar="N",
                        help="maxReplicas of the fixed pool (default: %(default)s)")
    parser.add_argument("--scale-out", type=int, default=150, metavar="N",
                        help="replicas to scale out to (default: %(default)s)")
    parser.add_argument("--scale-in", type=int, default=80, metavar="N",
                        help="replicas to scale back in to (default: %(default)s)")
    parser.add_argument(
        "--phase-timeout", type=float, default=180.0, metavar="SECONDS",
        help="how long each phase may take before the demo fails (default: %(default)s)",
    )


def workloadspread(fixed_max: int) -> dict[str, Any]:
    def zone(name: str) -> dict[str, Any]:
        return {
            "matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [name]}
            ]
        }

    return {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "WorkloadSpread",
        "metadata": {"name": "ws-demo", "namespace": NAMESPACE},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "workload-xxx"},
            "subsets": [
                {
                    "name": "ACK",
                    "requiredNodeSelectorTerm": zone("ack"),
                    "maxReplicas": fixed_max,
                    "patch": {"metadata": {"labels": {"deploy/zone": "ack"}}},
                },
                {
                    "name": "ECI",
                    "requiredNodeSelectorTerm": zone("eci"),
                    "tolerations": [
                        {
                            "key": "virtual-kubelet.io/provider",
                            "operator": "Exists",
                            "effect": "NoSchedule",
                        }
                    ],
                    "patch": {"metadata": {"labels": {"deploy/zone": "eci"}}},
                },
            ],
        },
    }


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "workload-xxx", "namespace": NAMESPACE},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "workload-xxx"}},
            "template": {
                "metadata": {"labels": {"app": "workload-xxx"}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "nginx",
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                        }
                    ]
                },
            },
        },
    }


Split = dict[str, Counter[str]]
"""subset -> phase -> pods."""


def subset_of(pod: Any) -> str:
    """The subset named in the pod's matched annotation, read as the planner reads it."""
    matched = pod_state.matched({"metadata": {"annotations": pod.metadata.annotations or {}}})
    return matched.subset if matched is not None and matched.subset else "(none)"


def current_split(core: Any) -> Split:
    pods = core.list_namespaced_pod(NAMESPACE, label_selector="app=workload-xxx").items
    split: Split = {}
    for pod in pods:
        phase = "Terminating" if pod.metadata.deletion_timestamp else (pod.status.phase or "?")
        split.setdefault(subset_of(pod), Counter())[phase] += 1
    return split


def live_counts(split: Split) -> dict[str, int]:
    return {s: sum(n for p, n in c.items() if p != "Terminating") for s, c in split.items()}


def render(title: str, split: Split) -> Table:
    table = Table(title=title)
    table.add_column("subset")
    for phase in ("Pending", "Running", "Terminating"):
        table.add_column(phase, justify="right")
    table.add_column("total", justify="right")
    for subset in sorted(split):
        counts = split[subset]
        live = sum(n for p, n in counts.items() if p != "Terminating")
        table.add_row(
            subset,
            *(str(counts.get(p, 0)) for p in ("Pending", "Running", "Terminating")),
            str(live),
        )
    return table


def print_final(console: Console, split: Split) -> None:
    """The final table, below the live one. Off a terminal the live display leaves its last
    line open, so the table's title would follow the border on that line: end it first."""
    if not console.is_terminal:
        console.line()
    console.print(render("final split", split))


def run_phase(
    live: Live,
    core: Any,
    title: str,
    done: Callable[[dict[str, int]], bool],
    timeout: float,
) -> Split:
    deadline = time.monotonic() + timeout
    while True:
        split = current_split(core)
        live.update(render(title, split))
        if done(live_counts(split)) and not any(c.get("Terminating") for c in split.values()):
            return split
        if time.monotonic() > deadline:
            raise StackError(f"{title}: not reached in {timeout:.0f}s: {live_counts(split)}")
        time.sleep(0.5)


def report(phase: str, split: Split) -> None:
    print(json.dumps({"phase": phase, "split": live_counts(split)}, sort_keys=True), flush=True)


def wait_for_deletion_costs(core: Any, timeout: float) -> bool:
    """Whether every pod got its deletion cost (what makes scale-in take elastic pods first)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pods = core.list_namespaced_pod(NAMESPACE, label_selector="app=workload-xxx").items
        if pods and all(DELETION_COST_ANNOTATION in (p.metadata.annotations or {}) for p in pods):
            return True
        time.sleep(0.5)
    return False


def ensure_namespace(core: Any, name: str) -> None:
    """The demo's namespace, made unless an earlier run left it."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    except ApiException as exc:
        if exc.status != 409:
            raise


def demo(kubeconfig: Path, args: argparse.Namespace, console: Console) -> dict[str, int]:
    from kubernetes import client, config

    api: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeconfig)
    )
    with api:
        core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
        custom = client.CustomObjectsApi(api)
        ensure_namespace(core, NAMESPACE)
        custom.create_namespaced_custom_object(
            "apps.kruise.io",
            "v1alpha1",
            NAMESPACE,
            "workloadspreads",
            workloadspread(args.fixed_max),
        )
        body: Any = deployment()
        apps.create_namespaced_deployment(NAMESPACE, body)
        fixed, out, back = args.fixed_max, args.scale_out, args.scale_in

        def scale(replicas: int) -> None:
            apps.patch_namespaced_deployment(
                "workload-xxx", NAMESPACE, {"spec": {"replicas": replicas}}
            )

        with Live(console=console, refresh_per_second=4) as live:
            scale(out)
            grown = run_phase(
                live,
                core,
                f"scale out to {out}",
                lambda c: (
                    c.get("ACK", 0) == min(out, fixed) and c.get("ECI", 0) == max(0, out - fixed)
                ),
                args.phase_timeout,
            )
            report("scale-out", grown)
            if not wait_for_deletion_costs(core, min(10.0, args.phase_timeout)):
                say("pods carry no deletion cost yet: the scale-in order is the Deployment's own")
            scale(back)
            final = run_phase(
                live,
                core,
                f"scale in to {back}",
                lambda c: sum(c.values()) == back,
                args.phase_timeout,
            )
        print_final(console, final)
        return live_counts(final)


def run(args: argparse.Namespace) -> int:
    console = Console()
    data_dir = args.data_dir.resolve()
    stack = None
    try:
        if args.attach:
            kubeconfig = data_dir / "kubeconfig"
            if not kubeconfig.exists():
                say(f"no running stack in {data_dir} (start one with spreadbus up)")
                return 1
        else:
            stack = Stack(data_dir=data_dir, cluster="local", kubesim_args=["--topology=elastic"])
            stack.start(180.0)
            kubeconfig = data_dir / "kubeconfig"
        if args.example == "uniteddeployment":
            from spreadbus.cli import demo_uniteddeployment

            final = demo_uniteddeployment.demo(kubeconfig, args, console)
        else:
            final = demo(kubeconfig, args, console)
    except DataDirInUse as exc:
        say(str(exc))
        return 2
    except StackError as exc:
        say(str(exc))
        return 1
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    finally:
        if stack is not None:
            stack.stop()
    print(json.dumps({"final": final}, sort_keys=True), flush=True)
    return 0
