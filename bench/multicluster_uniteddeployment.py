"""A 1,000-replica UnitedDeployment over three member clusters Ready, against one 1,000-replica
CloneSet in one kubesim; then the same with member1's leaf link 50 ms slower each way.

- **baseline**: one kubesim (the members' topology and fast kubelet), no spreadbus: one
  CloneSet of ``--replicas``, timed from its creation to that many Ready pods;
- **united**: a host and three members wired by hand as the multi-cluster tests wire them
  (:mod:`bench._members`); a UnitedDeployment in the host with one CloneSet subset per member
  (``targetCluster``), timed from its creation until the host's UnitedDeployment status says
  that many are Ready (plans down to each member, the members' status back up);
- **slow link**: on the same clusters, another UnitedDeployment with member1's leaf link
  through a relay holding every byte ``--delay-ms`` in each direction (the other members'
  links are direct), timed the same way.

Each is repeated ``--runs`` times and reported by its best run (a shared machine's noise only
ever slows a run down); the UnitedDeployments stay, each under its own name, and the direct and
slow ones alternate in order, so neither always comes on busier members.
Printed: the times, the ``ratio`` united/baseline (goal under 1.3), and the slow link's extra
time, also counted in round trips of the added delay (its delay each way), for comparison with
what the path must cross member1's link for: at least the plan down to member1 and its
CloneSet's Ready status back up, one round trip; each JetStream hop across the link that waits
for an answer (a pull, an acknowledgement) adds another.
Run: ``python -m bench.multicluster_uniteddeployment [--replicas 1000] [--delay-ms 50]
[--runs 3]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import _tiny
from bench._members import alone, apply, get_json, multicluster, ready_replicas, wait

GOAL = 1.3
KARMADA = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster"}


def pod_template() -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "bench"}}, "spec": {"containers": [{
        "name": "app", "image": "registry.example/app:1",
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}


def cloneset(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "bench", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "bench"}},
                     "template": pod_template()}}


def united(name: str, replicas: int, members: list[str]) -> dict[str, Any]:
    labels = {"app": "bench", "united": name}
    template = pod_template()
    template["metadata"]["labels"] = labels
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"cloneSetTemplate": {"metadata": {"labels": labels}, "spec": {
                         "selector": {"matchLabels": labels}, "template": template}}},
                     "topology": {"clusterRegistry": {"clusterType": KARMADA},
                                  "subsets": [{"name": m, "targetCluster": {"name": m}}
                                              for m in members]}}}


def ready_in_members(members: dict[str, Any], name: str) -> dict[str, int]:
    """Ready pods per member over the UnitedDeployment's CloneSets there."""
    out = {}
    for member, sim in members.items():
        listed = get_json(sim.kubeconfig, "clonesets.apps.kruise.io", "-n", "default",
                          "-l", f"united={name}")
        out[member] = sum(int(c.get("status", {}).get("readyReplicas") or 0)
                          for c in listed["items"])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--delay-ms", type=float, default=50.0,
                        help="added to member1's leaf link in each direction")
    parser.add_argument("--runs", type=int, default=3)
    args = _tiny.arguments(parser, argv, {"replicas": 6, "runs": 1})
    members = [f"member{i + 1}" for i in range(args.members)]
    slow_delay = args.delay_ms / 1000
    times: dict[float, list[float]] = {0.0: [], slow_delay: []}
    with tempfile.TemporaryDirectory(prefix="spreadbus-bench-") as tmp:
        workdir = Path(tmp)
        bases = [alone(workdir / f"alone-{i}", cloneset(args.replicas),
                       "clonesets.apps.kruise.io", args.replicas) for i in range(args.runs)]
        print(f"one kubesim: a {args.replicas}-replica CloneSet Ready in "
              f"{', '.join(f'{b:.2f}' for b in bases)} s", flush=True)
        with multicluster(workdir / "members", members) as rig:
            for i in range(args.runs):
                order = (0.0, slow_delay) if i % 2 == 0 else (slow_delay, 0.0)
                for delay in order:
                    name = f"bench-{i}-{'slow' if delay else 'direct'}"
                    rig.proxy.delay = delay
                    before = rig.proxy.relayed
                    started = time.perf_counter()
                    apply(rig.host.kubeconfig, united(name, args.replicas, members))
                    took = wait(f"UnitedDeployment {name} Ready", lambda name=name: (
                        ready_replicas(rig.host.kubeconfig, "uniteddeployments.apps.kruise.io",
                                       name) >= args.replicas)) - started
                    times[delay].append(took)
                    print(f"UnitedDeployment {name} over {', '.join(members)} "
                          f"(member1's link +{delay * 1000:.0f} ms each way): Ready in "
                          f"{took:.2f} s, ready per member "
                          f"{ready_in_members(rig.members, name)}, "
                          f"{rig.proxy.relayed - before} bytes over member1's relayed link",
                          flush=True)
    base, fast, slow = min(bases), min(times[0.0]), min(times[slow_delay])
    print(f"best of {args.runs}: one kubesim {base:.2f} s, united {fast:.2f} s, "
          f"united with the slow link {slow:.2f} s")
    print(f"ratio united/one kubesim: {fast / base:.3f} (goal under {GOAL})")
    round_trip = 2 * slow_delay
    extra = slow - fast
    print(f"slow link: {extra:+.2f} s more, {extra / round_trip:.1f} round trips of "
          f"{round_trip * 1000:.0f} ms (the fewest the path needs: 1, the plan down and the "
          f"Ready status up)")
    print(f"ratio slow link/united: {slow / fast:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
