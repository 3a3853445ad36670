"""How long kubesim takes from ``replicas: 1000`` to 1000 Ready pods on a 100-node cluster.

No webhooks; the kubelet delays are the test settings (tens of milliseconds), so the figure is
kubesim's own cost: API writes, watch fan-out, scheduling, controller work. spreadbus's
end-to-end benchmarks divide by this baseline. Run: ``python -m bench.kubesim_cluster``.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from bench import _tiny
from kubesim import KubeSim
from kubesim.behaviour import behaviours_for
from kubesim.behaviour.settings import Settings
from kubesim.interface import DEPLOYMENTS, NAMESPACES, NODES, ApiError

TARGET_SECONDS = 10.0


def deployment(replicas: int) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "bench", "namespace": "bench"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "bench"}},
            "template": {
                "metadata": {"labels": {"app": "bench"}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "registry.example/app:1",
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                        }
                    ]
                },
            },
        },
    }


async def measure(replicas: int, topology: str) -> tuple[float, int]:
    sim = KubeSim(tls=False, behaviours=behaviours_for(Settings.fast(topology=topology)))
    await sim.start()
    try:
        cluster = sim.cluster
        nodes, _ = await cluster.list(NODES)
        try:
            await cluster.create(
                NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}
            )
        except ApiError as exc:
            if exc.code != 409:
                raise
        started = time.perf_counter()
        await cluster.create(DEPLOYMENTS, deployment(replicas), namespace="bench")
        ready = 0
        while ready < replicas:
            await asyncio.sleep(0.02)
            status = (await cluster.get(DEPLOYMENTS, "bench", namespace="bench")).get("status")
            ready = int((status or {}).get("readyReplicas") or 0)
            if time.perf_counter() - started > 120:
                raise TimeoutError(f"only {ready}/{replicas} pods ready after 120 s")
        return time.perf_counter() - started, len(nodes)
    finally:
        await sim.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--topology", default="bench-100")
    args = _tiny.arguments(parser, argv, {"replicas": 5})
    elapsed, nodes = asyncio.run(measure(args.replicas, args.topology))
    print(f"kubesim: {args.replicas} Ready pods on {nodes} nodes in {elapsed:.2f} s")
    print(f"ratio to the {TARGET_SECONDS:.0f} s target: {elapsed / TARGET_SECONDS:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
