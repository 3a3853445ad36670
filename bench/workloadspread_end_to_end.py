"""1,000 pods under a three-subset WorkloadSpread on the local stack, against kubesim alone.

Both are measured in this run, on the same topology (``bench-100``) with the same fast kubelet:

- **baseline**: kubesim as its own process, no webhooks, no spreadbus: a Deployment scaled to
  ``--replicas``, timed to that many Ready pods;
- **spread**: ``spreadbus up``'s stack (nats-server, kubesim with the admission webhooks
  installed, watcher, planner, actuator, webhook), a WorkloadSpread of three zones
  (``maxReplicas`` 400, 400, rest) over the same Deployment, timed to that many Ready pods each
  in its subset's zone (``ready``), and until the WorkloadSpread status counts every pod and
  every pod carries its deletion cost (``converged``: the planner and actuator are done too).
  Readiness is polled on the Deployment's status (one object); the deletion costs are followed
  with a watch from the pod list taken at readiness, so measuring adds no repeated large lists
  to kubesim's load.

- **stack without a spread**: the same stack and Deployment with no WorkloadSpread, to tell the
  cost of the stack around kubesim (every pod creation calls the admission webhook over HTTPS,
  five more processes share the cores) from the cost of spreading.

Each phase runs in two layouts of the machine's cores:

- **split**: kubesim alone on one core, everything else (nats-server, the services, this
  process) on the others, as an API server and the controllers around it run on different
  machines. The stack's cost is then what it costs the cluster: the admission call in every pod
  creation, the watches and writes it serves, the time until everything is observed and decided;
  the services have one core among themselves.
- **shared**: every process on every core, as ``spreadbus up`` runs on a laptop; the five
  processes around kubesim then also take turns on its core.

The three phases of a layout are repeated ``--runs`` times (3), one after another within each
run, and each phase is reported by its best run: a shared machine's noise only ever slows a phase
down. Printed: each run's times, then per layout the best times and ``ratio`` lines,
``spread / baseline`` against the 1.3 goal, and the CPU each process used until the pods were
Ready (median of the runs, from ``/proc``): what each part costs, which the host's noise moves far
less than elapsed time.
Run: ``python -m bench.workloadspread_end_to_end [--replicas 1000] [--runs 3]
[--layouts split,shared]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from kubernetes import client, config

from bench import _tiny
from bench._stack import STACK, STACK_HELP, local_stack
from spreadbus.cli.local_stack import free_port
from spreadbus.features.workloadspread.core.model import DELETION_COST_ANNOTATION as DELETION_COST
from spreadbus.features.workloadspread.core.model import MATCHED_ANNOTATION as MATCHED
from spreadbus.features.workloadspread.core.pod_state import pod_annotations
from tests.fixtures.pod_watch import PodWatch

GOAL = 1.3
TOPOLOGY = "bench-100"
KUBELET = [
    "--create-delay=0.01",
    "--start-delay=0.02",
    "--ready-delay=0.01",
    "--max-termination-grace=0.05",
    "--no-events",
]
ACTUATOR = {"SPREADBUS_KUBE_QPS": "1000", "SPREADBUS_KUBE_BURST": "1000", "SPREADBUS_WORKERS": "16"}
"""The actuator tuned for a local API server: no client-side rate limit, 16 plans in flight."""
NS = "bench"
"""The namespace a run's phase works in on a stack of its own; on a shared stack, one per phase."""


def deployment(replicas: int, namespace: str = NS) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "bench", "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "bench"}},
            "template": {
                "metadata": {"labels": {"app": "bench"}},
                "spec": {"containers": [{
                    "name": "app", "image": "registry.example/app:1",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }]},
            },
        },
    }


def workloadspread(replicas: int, namespace: str = NS) -> dict[str, Any]:
    def subset(zone: str, limit: int | None) -> dict[str, Any]:
        out: dict[str, Any] = {"name": zone, "requiredNodeSelectorTerm": {"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}}
        if limit is not None:
            out["maxReplicas"] = limit
        return out

    share = replicas * 2 // 5
    return {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "WorkloadSpread",
        "metadata": {"name": "bench", "namespace": namespace},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "bench"},
            "subsets": [subset("zone-a", share), subset("zone-b", share), subset("zone-c", None)],
        },
    }


def wait(what: str, check: Callable[[], bool], timeout: float = 300.0) -> float:
    deadline = time.perf_counter() + timeout
    while not check():
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{what}: not reached in {timeout:.0f} s")
        time.sleep(0.05)
    return time.perf_counter()


LAYOUTS = ("split", "shared")

Cpu = dict[str, float]
"""CPU seconds by process name."""


def cpu_seconds(pid: int) -> float:
    """User and system CPU a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scale_up(apps: Any, replicas: int, pids: Mapping[str, int],
             namespace: str = NS) -> tuple[float, float, Cpu]:
    """Create the Deployment and wait until its pods are Ready: when it was created, when they
    were Ready, and the CPU each process in ``pids`` used meanwhile."""
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    started = time.perf_counter()
    apps.create_namespaced_deployment(namespace, deployment(replicas, namespace))
    ready = wait("pods Ready", lambda: ready_replicas(apps, namespace) >= replicas)
    return started, ready, {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()}


def pin(pid: int, cores: set[int]) -> None:
    """Every thread of ``pid`` onto ``cores``; threads it starts later inherit their parent's."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(ProcessLookupError):  # a thread that just ended
            os.sched_setaffinity(int(task.name), cores)


@contextlib.contextmanager
def layout(name: str, kubesim: int, others: list[int]) -> Iterator[None]:
    """kubesim (pid) and the other processes (this one included) placed as ``name`` says, and
    every core given back to each on leaving (a shared stack runs on after)."""
    everything = os.sched_getaffinity(0)
    if name == "split":
        first, rest = min(everything), everything - {min(everything)}
        pin(kubesim, {first})
        for pid in [*others, os.getpid()]:
            pin(pid, rest)
    try:
        yield
    finally:
        if name == "split":
            for pid in (kubesim, *others):
                with contextlib.suppress(FileNotFoundError):  # a process that just ended
                    pin(pid, everything)
        pin(os.getpid(), everything)


def ready_replicas(apps: Any, namespace: str = NS) -> int:
    """Polled every 50 ms while the stack runs: read as plain JSON, not the client's models."""
    response = apps.read_namespaced_deployment_status("bench", namespace, _preload_content=False)
    status = json.loads(response.data).get("status") or {}
    return int(status.get("readyReplicas") or 0)


def create_namespace(core: Any, namespace: str = NS) -> None:
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))


def baseline(replicas: int, workdir: Path, cores: str) -> tuple[float, Cpu]:
    """kubesim alone, as a process spoken to over HTTP, the same way as the stack's."""
    kubeconfig = workdir / "baseline-kubeconfig"
    log = (workdir / "baseline-kubesim.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubesim", "--port", str(free_port()), "--kubeconfig",
         str(kubeconfig), f"--topology={TOPOLOGY}", *KUBELET],
        stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        wait("kubesim's kubeconfig", kubeconfig.exists, 60)
        api = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
        with api, layout(cores, proc.pid, []):
            apps: Any = client.AppsV1Api(api)
            create_namespace(client.CoreV1Api(api))
            started, ready, used = scale_up(apps, replicas, {"kubesim": proc.pid})
            return ready - started, used
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def spread(replicas: int, workdir: Path, cores: str, *, with_spread: bool = True,
           secured_bus: bool = True, given: Path | None = None,
           namespace: str = NS) -> tuple[float, float, Cpu]:
    """Seconds to Ready and to converged, and each process's CPU until Ready; on an open bus
    (no users, no TLS) when not ``secured_bus``, to measure what securing it costs; on the
    running stack ``given`` describes (:mod:`bench._stack`) if one is, in ``namespace``."""
    data_dir = workdir / ("stack" if with_spread else "plain-stack")
    with local_stack(given, data_dir, kubesim_args=[f"--topology={TOPOLOGY}", *KUBELET],
                     service_env=ACTUATOR, secured_bus=secured_bus) as stack:
        api = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(stack.kubeconfig)
        )
        pids = stack.pids
        others = [pid for name, pid in pids.items() if name != "kubesim"]
        with api, layout(cores, pids["kubesim"], others):
            apps: Any = client.AppsV1Api(api)
            core: Any = client.CoreV1Api(api)
            custom: Any = client.CustomObjectsApi(api)
            create_namespace(core, namespace)
            if not with_spread:
                started, ready, used = scale_up(apps, replicas, pids, namespace)
                return ready - started, ready - started, used
            custom.create_namespaced_custom_object("apps.kruise.io", "v1alpha1", namespace,
                                                   "workloadspreads",
                                                   workloadspread(replicas, namespace))
            zones = {n.metadata.name: n.metadata.labels["topology.kubernetes.io/zone"]
                     for n in core.list_node().items}
            time.sleep(1.0)  # the webhook's view holds the WorkloadSpread (it follows the bus)
            started, ready, used = scale_up(apps, replicas, pids, namespace)

            def counted() -> bool:
                obj = custom.get_namespaced_custom_object("apps.kruise.io", "v1alpha1",
                                                          namespace, "workloadspreads", "bench")
                statuses = (obj.get("status") or {}).get("subsetStatuses") or []
                return replicas == sum(int(s.get("replicas", 0)) for s in statuses)

            with PodWatch(core, namespace) as watch:
                misplaced = [
                    name for name, p in watch.pods().items()
                    if json.loads(pod_annotations(p).get(MATCHED, "{}")).get("subset")
                    != zones.get(p["spec"].get("nodeName"))
                ]
                if misplaced:
                    raise AssertionError(f"{len(misplaced)} pods outside their subset's zone")

                def costed() -> bool:
                    pods = watch.pods()
                    return bool(pods) and all(DELETION_COST in pod_annotations(p)
                                              for p in pods.values())

                wait("status counts every pod", counted)
                done = wait("deletion costs", costed)
            return ready - started, done - started, used


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3,
                        help="repeat the three phases; each is reported by its best run")
    parser.add_argument("--layouts", default=",".join(LAYOUTS),
                        help="comma-separated, of: " + ", ".join(LAYOUTS))
    parser.add_argument(STACK, type=Path, help=STACK_HELP + " (for both phases on a stack)")
    args = _tiny.arguments(parser, argv, {"replicas": 6, "runs": 1, "layouts": "shared"})
    layouts = [name for name in args.layouts.split(",") if name]
    if not layouts or any(name not in LAYOUTS for name in layouts):
        parser.error(f"--layouts: expected names from {', '.join(LAYOUTS)}, got {args.layouts!r}")
    if "split" in layouts and len(os.sched_getaffinity(0)) < 2:
        parser.error("--layouts split needs at least two cores")
    runs: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in layouts}
    cpu: dict[str, list[tuple[Cpu, Cpu, Cpu]]] = {name: [] for name in layouts}
    with tempfile.TemporaryDirectory(prefix="spreadbus-bench-") as tmp:
        for i in range(args.runs):
            for cores in layouts:
                # The three phases of a run follow each other, so noise on the machine falls
                # on all of them alike; each run starts from empty stores.
                workdir = Path(tmp) / f"run-{i}" / cores
                workdir.mkdir(parents=True)
                base, base_cpu = baseline(args.replicas, workdir, cores)
                plain, _, plain_cpu = spread(args.replicas, workdir, cores, with_spread=False,
                                             given=args.stack, namespace=f"plain-{i}-{cores}")
                ready, converged, spread_cpu = spread(args.replicas, workdir, cores,
                                                      given=args.stack,
                                                      namespace=f"spread-{i}-{cores}")
                runs[cores].append((base, plain, ready, converged))
                cpu[cores].append((base_cpu, plain_cpu, spread_cpu))
                print(f"run {i + 1}, {cores} cores: kubesim alone {base:.2f} s, stack without a "
                      f"WorkloadSpread {plain:.2f} s, under it {ready:.2f} s "
                      f"(ratio {ready / base:.3f})", flush=True)
    for cores in layouts:
        base, plain, ready, converged = (min(times) for times in zip(*runs[cores], strict=True))
        print(f"{cores} cores, best of {args.runs} run(s) for each phase:")
        print(f"  kubesim alone: {args.replicas} Ready pods in {base:.2f} s")
        print(f"  the stack without a WorkloadSpread: Ready in {plain:.2f} s "
              f"(ratio to kubesim alone {plain / base:.3f})")
        print(f"  under a three-subset WorkloadSpread: Ready in {ready:.2f} s, "
              f"status and deletion costs in {converged:.2f} s")
        print(f"  ratio ready/baseline: {ready / base:.3f} (goal under {GOAL}: "
              f"{ready / base / GOAL:.3f} of it)")
        print(f"  ratio converged/baseline: {converged / base:.3f} (goal under {GOAL}: "
              f"{converged / base / GOAL:.3f} of it)")
        print(f"  ratio ready/stack without a spread: {ready / plain:.3f} (the cost of spreading)")
        print("  CPU until Ready, median of the runs:")
        for phase, used in zip(("kubesim alone", "stack without a WorkloadSpread",
                                "under the WorkloadSpread"), zip(*cpu[cores], strict=True),
                               strict=True):
            print(f"    {phase}: {cpu_line(list(used))}")
    return 0


def cpu_line(runs: list[Cpu]) -> str:
    """Each process's median CPU over the runs, kubesim first, and the others' total."""
    median = {name: statistics.median(run[name] for run in runs) for name in runs[0]}
    others = {name: seconds for name, seconds in median.items() if name != "kubesim"}
    parts = [f"kubesim {median['kubesim']:.2f} s"]
    if others:
        parts += [f"{name} {seconds:.2f}" for name, seconds in others.items()]
        parts.append(f"all but kubesim {sum(others.values()):.2f} s")
    return ", ".join(parts)


if __name__ == "__main__":
    raise SystemExit(main())
