"""1,000 replicas of a three-subset CloneSet-template UnitedDeployment Ready, against kubesim's
own time for one 1,000-replica CloneSet.

Both on the ``bench-100`` topology with the same fast kubelet, in this run:

- **baseline**: kubesim as its own process, no spreadbus: one CloneSet of ``--replicas``, timed
  from its creation to that many Ready pods (its ``status.readyReplicas``);
- **stack**: ``spreadbus up``'s stack with the same single CloneSet and no UnitedDeployment,
  to tell the cost of the stack around kubesim (the admission webhooks on every pod creation,
  five more processes on the same cores) from the cost of the UnitedDeployment;
- **united**: ``spreadbus up``'s stack (nats-server, kubesim with the CRDs and webhooks
  installed, watcher, planner, actuator, webhook), a UnitedDeployment of ``--replicas`` over
  three CloneSet subsets (one per zone, the replicas split evenly), timed from its creation to
  that many Ready pods across its CloneSets (``ready``), and until its own status says so
  (``status``: the planner has observed and written it).

Each phase is repeated ``--runs`` times and reported by its best run (a shared machine's noise only
ever slows a phase down). Printed: ``ratio`` united/baseline against the 1.2 goal.
Run: ``python -m bench.uniteddeployment_end_to_end [--replicas 1000] [--runs 1]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client, config

from bench import _tiny
from bench._stack import STACK, STACK_HELP, local_stack
from spreadbus.cli.local_stack import free_port

GOAL = 1.2
TOPOLOGY = "bench-100"
KUBELET = ["--create-delay=0.01", "--start-delay=0.02", "--ready-delay=0.01",
           "--max-termination-grace=0.05", "--no-events"]
ACTUATOR = {"SPREADBUS_KUBE_QPS": "1000", "SPREADBUS_KUBE_BURST": "1000", "SPREADBUS_WORKERS": "16"}
NS = "bench"
"""The namespace of a phase on a stack of its own; on a shared stack, one per phase."""
ZONES = ("zone-a", "zone-b", "zone-c")


def pod_template(name: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{
        "name": "app", "image": "registry.example/app:1",
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}


def cloneset(replicas: int, ns: str = NS) -> dict[str, Any]:
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "bench", "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "bench"}},
                     "template": pod_template("bench")}}


def united(replicas: int, ns: str = NS) -> dict[str, Any]:
    return {
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
        "metadata": {"name": "bench", "namespace": ns},
        "spec": {
            "replicas": replicas, "selector": {"matchLabels": {"app": "bench"}},
            "template": {"cloneSetTemplate": {"metadata": {"labels": {"app": "bench"}}, "spec": {
                "selector": {"matchLabels": {"app": "bench"}},
                "template": pod_template("bench")}}},
            "topology": {"subsets": [
                {"name": zone, "nodeSelectorTerm": {"matchExpressions": [{
                    "key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}}
                for zone in ZONES]},
        },
    }


def wait(what: str, check: Callable[[], bool], timeout: float = 600.0) -> float:
    deadline = time.perf_counter() + timeout
    while not check():
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{what}: not reached in {timeout:.0f} s")
        time.sleep(0.05)
    return time.perf_counter()


def ready_clonesets(custom: Any, ns: str = NS) -> int:
    """Ready pods over the namespace's CloneSets, read as plain JSON."""
    listed = custom.list_namespaced_custom_object("apps.kruise.io", "v1alpha1", ns, "clonesets")
    return sum(int((c.get("status") or {}).get("readyReplicas") or 0) for c in listed["items"])


def ud_ready(custom: Any, ns: str = NS) -> int:
    obj = custom.get_namespaced_custom_object("apps.kruise.io", "v1alpha1", ns,
                                              "uniteddeployments", "bench")
    return int((obj.get("status") or {}).get("readyReplicas") or 0)


def namespace(api: client.ApiClient, ns: str = NS) -> None:
    client.CoreV1Api(api).create_namespace(client.V1Namespace(
        metadata=client.V1ObjectMeta(name=ns)))


def baseline(replicas: int, workdir: Path) -> float:
    kubeconfig = workdir / "baseline-kubeconfig"
    with (workdir / "baseline-kubesim.log").open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kubesim", "--port", str(free_port()), "--kubeconfig",
             str(kubeconfig), f"--topology={TOPOLOGY}", *KUBELET],
            stdout=log, stderr=subprocess.STDOUT)
        try:
            wait("kubesim's kubeconfig", kubeconfig.exists, 60)
            api = config.new_client_from_config(  # type: ignore[no-untyped-call]
                config_file=str(kubeconfig))
            with api:
                custom: Any = client.CustomObjectsApi(api)
                namespace(api)
                started = time.perf_counter()
                custom.create_namespaced_custom_object("apps.kruise.io", "v1alpha1", NS,
                                                       "clonesets", cloneset(replicas))
                ready = wait("CloneSet Ready", lambda: ready_clonesets(custom) >= replicas)
                return ready - started
        finally:
            proc.terminate()
            proc.wait(30)


def stacked(replicas: int, workdir: Path, *, with_ud: bool = True, given: Path | None = None,
            ns: str = NS) -> tuple[float, float]:
    """Seconds to Ready and to the UnitedDeployment's status Ready (without one: one CloneSet's
    Ready twice), on a stack of its own or the running one ``given`` describes, in ``ns``."""
    data_dir = workdir / ("stack" if with_ud else "plain-stack")
    with local_stack(given, data_dir, kubesim_args=[f"--topology={TOPOLOGY}", *KUBELET],
                     service_env=ACTUATOR) as stack:
        api = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(stack.kubeconfig))
        with api:
            custom: Any = client.CustomObjectsApi(api)
            namespace(api, ns)
            started = time.perf_counter()
            if not with_ud:
                custom.create_namespaced_custom_object("apps.kruise.io", "v1alpha1", ns,
                                                       "clonesets", cloneset(replicas, ns))
                ready = wait("CloneSet Ready", lambda: ready_clonesets(custom, ns) >= replicas)
                return ready - started, ready - started
            custom.create_namespaced_custom_object("apps.kruise.io", "v1alpha1", ns,
                                                   "uniteddeployments", united(replicas, ns))
            ready = wait("subset CloneSets Ready",
                         lambda: ready_clonesets(custom, ns) >= replicas)
            status = wait("UD status Ready", lambda: ud_ready(custom, ns) >= replicas)
            return ready - started, status - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(STACK, type=Path, help=STACK_HELP + " (for both stacked phases)")
    args = _tiny.arguments(parser, argv, {"replicas": 6})
    runs: list[tuple[float, float, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="spreadbus-bench-") as tmp:
        for i in range(args.runs):
            workdir = Path(tmp) / f"run-{i}"
            workdir.mkdir()
            base = baseline(args.replicas, workdir)
            plain, _ = stacked(args.replicas, workdir, with_ud=False, given=args.stack,
                               ns=f"united-plain-{i}")
            ready, status = stacked(args.replicas, workdir, given=args.stack, ns=f"united-{i}")
            runs.append((base, plain, ready, status))
            print(json.dumps({"run": i + 1, "kubesim_cloneset": round(base, 2),
                              "stack_cloneset": round(plain, 2),
                              "united_ready": round(ready, 2),
                              "united_status": round(status, 2)}), flush=True)
    base, plain, ready, status = (min(times) for times in zip(*runs, strict=True))
    print(f"kubesim alone: one {args.replicas}-replica CloneSet Ready in {base:.2f} s")
    print(f"the stack, one CloneSet and no UnitedDeployment: Ready in {plain:.2f} s "
          f"(ratio to kubesim alone {plain / base:.3f})")
    print(f"UnitedDeployment of {args.replicas} over three CloneSets: Ready in {ready:.2f} s, "
          f"its status Ready in {status:.2f} s")
    print(f"ratio ready/baseline: {ready / base:.3f} (goal under {GOAL})")
    print(f"ratio status/baseline: {status / base:.3f}")
    print(f"ratio ready/stack without a UnitedDeployment: {ready / plain:.3f} (its own cost)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
