"""Planner shards against the single planner: objects, memory and CPU per round of each shard.

One nats-server holds ``--pods`` pods (100,000 by default) in ``--namespaces`` namespaces (300),
each namespace with a Deployment, its ReplicaSet and a two-zone WorkloadSpread, plus
``--nodes`` zoned nodes (cluster-scoped, so every shard holds them) and the sync markers. The
bus is also set up for 2 and 4 shards, so the server fills ``KUBE_SHARDS_2`` and
``KUBE_SHARDS_4`` through its partition function (:mod:`events.shards`).

Then, each in a fresh interpreter of its own, the single planner (``KUBE``) and every shard of 2
and of 4 replay their stream from the start as a standby does (the real follower and filters)
and decide one round as a new leader does: the WorkloadSpread rule over every object it holds
and the planner's diff of what it wants (``plans_for``), without publishing. Shown per planner:
the seconds its replay took (a shard's consumer has two or three filters, the single planner's
one), the objects it holds, the growth of its resident memory over the replay and the round
(``VmRSS``), and the CPU seconds of the round; per shard count, the largest shard's share of the
single planner's objects and memory against the fair share 1/N, as ``ratio`` lines. Goal: at most
1.2 (each of N shards holds at most 1.2/N of the single planner's objects and memory).

The namespaces are named as teams name them (``--names words``, seeded random words, the
default) or ``team-0`` to ``team-<n>`` (``--names numbered``, which the partition function
happens to spread almost exactly evenly); their pods are as many in each. The shares follow the
names and the sizes: a few large namespaces in one partition make that shard the largest.

Run: ``python -m bench.planner_shards [--pods 100000 --namespaces 300 --nodes 100]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import string
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

import nats

from bench import _tiny
from bench._bus import nats_server
from events import codec, subjects
from events.messages import Observation, SyncMarker
from events.shards import Shards, shard_stream
from spreadbus.runtime.stream_setup import ensure_streams

GOAL: Final = 1.2
COUNTS: Final = (2, 4)
CLUSTER: Final = "bench"
NOW: Final = 1_800_000_000.0
STAMP: Final = "2027-01-15T08:00:00Z"
ZONES: Final = ("zone-a", "zone-b")


def rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def _message(group: str, resource: str, obj: dict[str, Any]) -> tuple[str, bytes]:
    metadata = obj["metadata"]
    version = obj["apiVersion"].split("/")[-1]
    event = Observation(cluster=CLUSTER, group=group, version=version, resource=resource,
                        event="ADDED", object=obj, ts=NOW)  # type: ignore[arg-type]
    subject = subjects.observation(CLUSTER, group, resource, metadata.get("namespace", ""),
                                   metadata["name"])
    return subject, codec.encode(event)


def _meta(name: str, namespace: str, rv: int, **more: Any) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}",
            "resourceVersion": str(rv), "creationTimestamp": STAMP, **more}


def namespace_names(count: int, naming: str) -> list[str]:
    if naming == "numbered":
        return [f"team-{k}" for k in range(count)]
    rng = random.Random(23)
    names: dict[str, None] = {}
    while len(names) < count:
        word = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 10)))
        names[f"{word}-{rng.choice(('prod', 'staging', 'dev', 'eu', 'us', 'batch'))}"] = None
    return list(names)


def messages(pods: int, namespaces: list[str], nodes: int) -> list[tuple[str, bytes]]:
    """Every observation of the cluster, then a sync marker for every resource the rule reads."""
    from spreadbus.features.workloadspread.planning.rule import WorkloadSpreadRule

    out = [_message("", "nodes", {"apiVersion": "v1", "kind": "Node", "metadata": _meta(
        f"node-{i}", "", i + 1, labels={"topology.kubernetes.io/zone": ZONES[i % 2]})})
        for i in range(nodes)]
    rv = nodes + 1
    size, extra = divmod(pods, len(namespaces))
    for k, namespace in enumerate(namespaces):
        count = size + (1 if k < extra else 0)
        owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                 "uid": f"uid-{namespace}-web", "controller": True}
        rs_owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5f7c",
                    "uid": f"uid-{namespace}-web-5f7c", "controller": True}
        labels = {"app": "web", "pod-template-hash": "5f7c"}
        out.append(_message("apps", "deployments", {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": _meta("web", namespace, rv, generation=1),
            "spec": {"replicas": count, "selector": {"matchLabels": {"app": "web"}}}}))
        out.append(_message("apps", "replicasets", {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": _meta("web-5f7c", namespace, rv + 1, ownerReferences=[owner],
                              labels=labels), "spec": {"replicas": count}}))
        out.append(_message("apps.kruise.io", "workloadspreads", {
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
            "metadata": _meta("ws", namespace, rv + 2, generation=1),
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                   "name": "web"},
                     "subsets": [_subset(ZONES[0], count // 2), _subset(ZONES[1])]}}))
        rv += 3
        for i in range(count):
            rv += 1
            out.append(_message("", "pods", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": _meta(f"web-5f7c-{i:05d}", namespace, rv,
                                  ownerReferences=[rs_owner], labels=labels),
                "spec": {"nodeName": f"node-{(k + i) % nodes}",
                         "containers": [{"name": "web", "image": "registry.example/web:1.4.2",
                                         "resources": {"requests": {"cpu": "100m"}}}]},
                "status": {"phase": "Running", "podIP": f"10.{k % 250}.{i // 250}.{i % 250}",
                           "conditions": [{"type": "Ready", "status": "True"}]}}))
    for ref in WorkloadSpreadRule(CLUSTER).resources:
        marker = SyncMarker(cluster=CLUSTER, group=ref.group, version=ref.version,
                            resource=ref.resource, complete=True)
        out.append((subjects.sync(CLUSTER, ref.group, ref.resource), codec.encode(marker)))
    return out


def _subset(zone: str, max_replicas: int | None = None) -> dict[str, Any]:
    subset: dict[str, Any] = {"name": zone, "requiredNodeSelectorTerm": {"matchExpressions": [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}}
    if max_replicas is not None:
        subset["maxReplicas"] = max_replicas
    return subset


async def fill(url: str, entries: list[tuple[str, bytes]]) -> None:
    """Publish everything, then wait until the server copied it into every shard stream."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        await ensure_streams(js, [shard_stream(count) for count in COUNTS])
        for start in range(0, len(entries), 2000):
            for subject, data in entries[start:start + 2000]:
                await js.publish_async(subject, data)
            await js.publish_async_completed()
        for count in COUNTS:
            # The server copies on its own; its stream's count is the only sign of progress.
            name = shard_stream(count).name
            while (await js.stream_info(name)).state.messages < len(entries):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
    finally:
        await nc.close()


async def one_planner(url: str, count: int, index: int) -> dict[str, float]:
    """Replay one planner's stream as a standby, then decide a leader's first round."""
    from services.planner.planner import Planner
    from spreadbus.features.workloadspread.planning.rule import WorkloadSpreadRule
    from spreadbus.projection.planning import plans_for

    nc = await nats.connect(url)
    try:
        rule = WorkloadSpreadRule(CLUSTER, min_interval_seconds=0.0)
        planner = Planner(nc, cluster=CLUSTER, rules=[rule], clock=lambda: NOW,
                          shards=Shards(count, index))
        gc.collect()
        before = rss()
        started = time.perf_counter()
        await planner.restore()
        tasks = [asyncio.ensure_future(f.run()) for f in planner.followers()]
        await asyncio.gather(*(f.wait_caught_up() for f in planner.followers()))
        replay = time.perf_counter() - started
        if not planner.rule_ready(rule):
            raise RuntimeError("caught up without every resource's sync marker")
        view = planner.projection
        view.mark_all_changed()
        cpu = time.process_time()
        desired = rule.desired(view, view.take_changed(), NOW)
        plans = plans_for(rule, view, planner.decisions, desired, cluster=CLUSTER, now=NOW)
        cpu = time.process_time() - cpu
        gc.collect()
        grown = rss() - before
        for follower in planner.followers():
            follower.stop()
        await asyncio.gather(*tasks)
        held = sum(len(bucket) for bucket in view.state.objects.values())
        return {"objects": held, "rss": grown, "cpu": cpu, "plans": len(plans), "replay": replay}
    finally:
        await nc.close()


def measured(url: str, count: int, index: int, *, alone: bool = True) -> dict[str, float]:
    """One planner's figures, from an interpreter of its own unless ``alone`` is false (the
    tiny run, whose memory figures measure nothing anyway, saves an interpreter's start-up)."""
    if not alone:
        return asyncio.run(one_planner(url, count, index))
    out = subprocess.run([sys.executable, "-m", "bench.planner_shards", "--url", url,
                          "--shards", str(count), "--shard", str(index)],
                         capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(out.stdout.splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--namespaces", type=int, default=300)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--names", choices=("words", "numbered"), default="words",
                        help="how the namespaces are named")
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--shards", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--shard", type=int, default=0, help=argparse.SUPPRESS)
    args = _tiny.arguments(parser, argv, {"pods": 600, "namespaces": 12, "nodes": 4})
    if args.url:
        print(json.dumps(asyncio.run(one_planner(args.url, args.shards, args.shard))))
        return 0
    entries = messages(args.pods, namespace_names(args.namespaces, args.names), args.nodes)
    with nats_server() as server:
        started = time.perf_counter()
        asyncio.run(fill(server.url, entries))
        print(f"{len(entries)} observations of {args.pods} pods in {args.namespaces} namespaces "
              f"({args.names}) and {args.nodes} nodes published and partitioned in "
              f"{time.perf_counter() - started:.1f} s", flush=True)
        alone = not args.tiny
        single = measured(server.url, 1, 0, alone=alone)
        _show("single planner", single)
        for count in COUNTS:
            shards = [measured(server.url, count, index, alone=alone) for index in range(count)]
            for index, result in enumerate(shards):
                _show(f"shard {index} of {count}", result)
            total = sum(result["plans"] for result in shards)
            print(f"  {count} shards plan {total} writes, the single planner "
                  f"{single['plans']}", flush=True)
            fair_objects = single["objects"] / count
            fair_rss = single["rss"] / count
            print(f"  ratio largest shard objects/(single/{count}): "
                  f"{max(r['objects'] for r in shards) / fair_objects:.2f} (goal at most {GOAL})",
                  flush=True)
            print(f"  ratio largest shard memory/(single/{count}): "
                  f"{max(r['rss'] for r in shards) / fair_rss:.2f} (goal at most {GOAL})",
                  flush=True)
            print(f"  ratio slowest shard round CPU/(single/{count}): "
                  f"{max(r['cpu'] for r in shards) / (single['cpu'] / count):.2f}", flush=True)
    return 0


def _show(name: str, result: dict[str, float]) -> None:
    print(f"{name}: {int(result['objects'])} objects, {result['rss'] / 2**20:.1f} MiB resident "
          f"grown, round {result['cpu'] * 1000:.0f} ms CPU ({int(result['plans'])} plans), "
          f"replayed in {result['replay']:.1f} s", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
