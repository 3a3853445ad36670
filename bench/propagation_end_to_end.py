"""A 1,000-replica Deployment propagated to three member clusters Ready, against the same
Deployment in one kubesim.

- **baseline**: one kubesim (the members' topology and fast kubelet), no spreadbus: the
  Deployment of ``--replicas``, timed from its creation to that many Ready pods (its
  ``status.readyReplicas``);
- **propagated**: a host and three members wired by hand as the multi-cluster tests wire them
  (:mod:`bench._members`); a PropagationPolicy dividing Deployments evenly over the members
  (static weights 1:1:1), then a Deployment created in the host, timed until the host's
  template says that many are Ready (the copies' status summed back: the whole round trip).

The members' pods are run by three kubesims, side by side on the machine's cores, where the
baseline's are run by one: the ratio can be under 1 without spreadbus costing nothing.

Each is repeated ``--runs`` times (each propagated Deployment under its own name, the earlier
ones left running) and reported by its best run. Printed: both times and the ``ratio``
propagated/baseline (goal under 1.3).
Run: ``python -m bench.propagation_end_to_end [--replicas 1000] [--members 3] [--runs 3]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import _tiny
from bench._members import alone, apply, multicluster, ready_replicas, wait

GOAL = 1.3


def deployment(name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [{
                         "name": "app", "image": "registry.example/app:1",
                         "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}}


def policy(members: list[str]) -> dict[str, Any]:
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "bench", "namespace": "default"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                     "placement": {"clusterAffinity": {"clusterNames": members},
                                   "replicaScheduling": {
                                       "replicaSchedulingType": "Divided",
                                       "replicaDivisionPreference": "Weighted",
                                       "weightPreference": {"staticWeightList": [
                                           {"targetCluster": {"clusterNames": [m]}, "weight": 1}
                                           for m in members]}}}}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3)
    args = _tiny.arguments(parser, argv, {"replicas": 6, "runs": 1})
    members = [f"member{i + 1}" for i in range(args.members)]
    propagated: list[float] = []
    with tempfile.TemporaryDirectory(prefix="spreadbus-bench-") as tmp:
        workdir = Path(tmp)
        bases = [alone(workdir / f"alone-{i}", deployment("bench", args.replicas),
                       "deployment", args.replicas) for i in range(args.runs)]
        print(f"one kubesim: a {args.replicas}-replica Deployment Ready in "
              f"{', '.join(f'{b:.2f}' for b in bases)} s", flush=True)
        with multicluster(workdir / "members", members) as rig:
            apply(rig.host.kubeconfig, policy(members))
            for i in range(args.runs):
                name = f"bench-{i}"
                started = time.perf_counter()
                apply(rig.host.kubeconfig, deployment(name, args.replicas))
                propagated.append(wait(f"the host's Deployment {name} Ready", lambda name=name: (
                    ready_replicas(rig.host.kubeconfig, "deployment", name) >= args.replicas),
                    interval=0.2) - started)
                split = {m: ready_replicas(sim.kubeconfig, "deployment", name)
                         for m, sim in rig.members.items()}
                print(f"{name} propagated to {', '.join(members)}: the host's Deployment Ready "
                      f"in {propagated[-1]:.2f} s (ready per member: {split})", flush=True)
    base, ready = min(bases), min(propagated)
    print(f"best of {args.runs}: one kubesim {base:.2f} s, propagated {ready:.2f} s")
    print(f"ratio propagated/one kubesim: {ready / base:.3f} (goal under {GOAL})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
