"""Planner replay rate against the raw JetStream consumer rate of the same stream.

The stream holds N Deployment observations (200k by default, 1M with ``--full`` or
``--observations``), one per Deployment. ``KUBE`` keeps only each object's latest observation,
so what a planner replays from the start is one message per live object: N observations to
replay are N live objects, the shape a large cluster gives (the projection grows to N objects).
Measured in the same run, best of two each, raw and planner runs alternating so that load from
other processes on a shared machine falls on both sides alike:

- raw: an ephemeral AckNone consumer drained by pull requests on one inbox whose callback only
  counts; the fastest way this client can take messages off the server;
- planner: a standby :class:`~services.planner.planner.Planner` restoring from nothing until its
  KUBE follower is caught up (decode, fold into the projection, positions, metrics), on a
  connection of its own made as the service makes it
  (:class:`~spreadbus.runtime.raw_delivery.RawDeliveryClient`, whose followers take their
  messages straight from the read loop);
- start-up: a planner restoring from a snapshot plus a tail of updates to 5 % of the objects
  (which replace their earlier observations), against a full replay of the same stream.

Goal: planner/raw >= 0.8; snapshot start-up at most half of a full replay.

A WorkloadSpread round (no bus): one pod changes and the WorkloadSpread's tally plans, measured
at 200 (``--small-spread-pods``) and at 20,000 pods (``--spread-pods``), 200 rounds each
(``--rounds``), in the situations where order matters: an Adaptive
spread with pods pending in a closed subset, a scale-in with deletions in flight, a subset far
beyond its limit with another under ``minReplicas``, and pods made before the spread. Goal: a
round at the large size costs at most twice the small one (work follows what changed, not the
workload); the full computation over every pod is shown for scale.

A rollout through the planner's fold and WorkloadSpread rule (no bus): ``--rollout-pods`` pods
(1,000 by default) of a Deployment under a three-zone WorkloadSpread, each observed created,
bound, containers creating, running and ready as kubesim writes them, in waves of 50, folded
into the projection a few observations per round; each round asks the readiness gates as the
planner does, then the rule and ``plans_for``, and the deletion costs it writes come back as
observations. Shown: CPU per observation, and its ratio to one full decode of the same pod
observations (what any consumer of the stream pays at least), so that a slower machine moves
both. No goal; it tracks the planner's cost per observation followed.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import nats
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from bench import _tiny
from bench._bus import full_size, nats_server, observation, sync_marker
from events import codec, subjects
from events.messages import Observation, SyncMarker
from services.planner.planner import Planner
from spreadbus.features.workloadspread.core import reconcile
from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.model import (
    MATCHED_ANNOTATION,
    WorkloadSpread,
    format_time,
    from_object,
)
from spreadbus.features.workloadspread.core.occupancy import Reservation
from spreadbus.features.workloadspread.planning import spread_index
from spreadbus.features.workloadspread.planning.rule import WorkloadSpreadRule
from spreadbus.features.workloadspread.planning.spread_tally import SpreadTally
from spreadbus.projection.decision_log import DecisionLog
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.projection.planning import plans_for
from spreadbus.runtime.raw_delivery import RawDeliveryClient
from spreadbus.runtime.snapshot_store import SnapshotStore
from tests.fixtures.observed_generation import ObservedGeneration

REPLAY_GOAL = 0.8
STARTUP_LIMIT = 0.5
ROUND_LIMIT = 2.0
BATCH = 8192
NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
WHITELIST = Whitelist()
OWNER = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-aaa",
          "uid": "uid-rs", "controller": True}]
NODES = {"node-a": {"metadata": {"name": "node-a",
                                 "labels": {"topology.kubernetes.io/zone": "a"}}}}


def spread_pod(name: str, subset: str | None, *, pending_since: datetime | None = None,
               node: str = "node-1") -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name, "namespace": "default", "uid": f"uid-{name}",
        "creationTimestamp": format_time(pending_since or NOW - timedelta(hours=1)),
        "labels": {"app": "web", "pod-template-hash": "aaa"}, "ownerReferences": OWNER,
    }
    if subset is not None:
        meta["annotations"] = {MATCHED_ANNOTATION: f'{{"name":"ws","subset":"{subset}"}}'}
    if pending_since is not None:
        return {"metadata": meta, "spec": {}, "status": {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}
    return {"metadata": meta, "spec": {"nodeName": node}, "status": {
        "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}


def spread(subsets: list[dict[str, Any]], **spec: Any) -> WorkloadSpread:
    status = spec.pop("status", None)
    return from_object({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
        "metadata": {"name": "ws", "namespace": "default", "uid": "uid-ws"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "subsets": subsets, **spec},
        **({"status": status} if status else {}),
    })


class SpreadRound:
    """One WorkloadSpread, its pods and reservations, for rounds of one pod change."""

    def __init__(self, ws: WorkloadSpread, pods: dict[str, dict[str, Any]], replicas: int,
                 reservations: list[Reservation] | None = None) -> None:
        self.ws = ws
        self.pods = pods
        self.workload = {"apiVersion": "apps/v1", "kind": "Deployment",
                         "metadata": {"name": "web", "namespace": "default", "uid": "uid-d"},
                         "spec": {"replicas": replicas}}
        self.reservations = reservations or []
        self.tally = SpreadTally(ws)
        self.tally.reset(sorted(pods.items()))

    def plan(self) -> None:
        self.tally.plan(self.ws, workload=self.workload, latest="aaa",
                        reservations=self.reservations, now=NOW, whitelist=WHITELIST,
                        nodes=lambda _: NODES)

    def full(self) -> None:
        reconcile.plan_workloadspread(
            self.ws, workload=self.workload, pods=[self.pods[k] for k in sorted(self.pods)],
            nodes=NODES, reservations=self.reservations, now=NOW, whitelist=WHITELIST,
            latest="aaa")


def adaptive_spread(size: int) -> SpreadRound:
    closed = {"subsetStatuses": [{"name": "a", "conditions": [{
        "type": "Schedulable", "status": "False", "reason": "PodUnschedulable",
        "lastTransitionTime": format_time(NOW - timedelta(seconds=40))}]}]}
    ws = spread([{"name": "a", "maxReplicas": size}, {"name": "b"}],
                scheduleStrategy={"type": "Adaptive",
                                  "adaptive": {"rescheduleCriticalSeconds": 30}},
                status=closed)
    pods = {f"default/r{i:06d}": spread_pod(f"r{i:06d}", "ab"[i % 2]) for i in range(size)}
    for i in range(5):
        since = NOW - timedelta(seconds=60 if i < 3 else 5)
        pods[f"default/u{i}"] = spread_pod(f"u{i}", "a", pending_since=since)
    return SpreadRound(ws, pods, size)


def scale_in_spread(size: int) -> SpreadRound:
    ws = spread([{"name": "a", "maxReplicas": 100}, {"name": "b", "maxReplicas": size}])
    pods = {f"default/r{i:06d}": spread_pod(f"r{i:06d}", "a" if i < 100 else "b")
            for i in range(size)}
    reservations = [Reservation(ws.key, "aaa", "b", f"r{i:06d}", "deleting",
                                NOW - timedelta(seconds=i % 10)) for i in range(100, 170)]
    return SpreadRound(ws, pods, size // 2, reservations)


def beyond_limit_spread(size: int) -> SpreadRound:
    ws = spread([{"name": "a", "maxReplicas": "50%"}, {"name": "b", "minReplicas": 10}])
    pods = {f"default/r{i:06d}": spread_pod(f"r{i:06d}", "ab"[i % 2]) for i in range(size)}
    return SpreadRound(ws, pods, size // 2)


def made_before_spread(size: int) -> SpreadRound:
    ws = spread([{"name": "a", "maxReplicas": size // 2 + 4,
                  "requiredNodeSelectorTerm": {"matchExpressions": [{
                      "key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}]}},
                 {"name": "b"}])
    pods = {f"default/r{i:06d}": spread_pod(f"r{i:06d}", "ab"[i % 2]) for i in range(size)}
    for i in range(6):
        pods[f"default/e{i}"] = spread_pod(f"e{i}", None, node="node-a")
    return SpreadRound(ws, pods, size)


SPREADS: dict[str, Callable[[int], SpreadRound]] = {
    "Adaptive, pods pending in a closed subset": adaptive_spread,
    "scale-in, 70 deletions in flight": scale_in_spread,
    "a subset beyond its limit, one under its minimum": beyond_limit_spread,
    "pods made before the spread": made_before_spread,
}


def flips(world: SpreadRound, rounds: int) -> list[tuple[str, dict[str, Any]]]:
    """One change per round: a pod's readiness flips (a pending pod is observed again)."""
    keys = sorted(world.pods)
    out: list[tuple[str, dict[str, Any]]] = []
    for i in range(rounds):
        key = keys[(i * 7919) % len(keys)]
        changed = copy.deepcopy(world.pods[key])
        conditions = changed["status"].get("conditions") or []
        if conditions and conditions[0].get("type") == "Ready":
            changed["status"]["conditions"] = []
        out.append((key, changed))
    return out


def round_seconds(world: SpreadRound, changes: list[tuple[str, dict[str, Any]]]) -> float:
    """Seconds per round: one pod observed anew, then a plan."""
    started = time.perf_counter()
    for key, changed in changes:
        world.tally.apply(key, copy.copy(changed))  # a new observation each time
        world.plan()
    return (time.perf_counter() - started) / len(changes)


def spread_rounds(small: int, large: int, rounds: int) -> None:
    for what, build in SPREADS.items():
        worlds = [build(small), build(large)]
        for world in worlds:
            world.plan()  # the first plan after a build looks at every pod once
        changes = [flips(world, rounds) for world in worlds]
        runs: list[list[float]] = [[], []]
        for _ in range(3):  # alternating, best of three: load from elsewhere falls on both
            for i, world in enumerate(worlds):
                runs[i].append(round_seconds(world, changes[i]))
        small_round, large_round = min(runs[0]), min(runs[1])
        started = time.perf_counter()
        worlds[1].full()
        full = time.perf_counter() - started
        print(f"WorkloadSpread round ({what}): {small_round * 1e6:,.0f} us at {small} "
              f"pods, {large_round * 1e6:,.0f} us at {large} pods; ratio "
              f"{large_round / small_round:.2f} (limit <= {ROUND_LIMIT}); full computation "
              f"at {large} pods {full * 1e3:,.0f} ms")


# -- a rollout through the fold and the WorkloadSpread rule ---------------------------------------

ROLLOUT_WAVE = 50
ROLLOUT_ROUND = 4  # observations folded per planner round
ZONES = "abc"
KINDS = {"Pod": spread_index.PODS, "Deployment": spread_index.WORKLOADS[("apps", "Deployment")],
         "ReplicaSet": spread_index.WORKLOADS[("apps", "ReplicaSet")],
         "WorkloadSpread": spread_index.WORKLOADSPREADS, "Node": spread_index.NODES}


def _condition(kind: str, ok: bool, at: str, reason: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind, "status": "True" if ok else "False",
                           "lastProbeTime": None, "lastTransitionTime": at}
    if reason:
        out["reason"] = reason
    return out


def rollout_pod_stages(i: int) -> list[dict[str, Any]]:
    """Pod ``i`` as observed: created (annotated by the webhook), bound, containers creating,
    running not ready, ready; the fields kubesim's API defaults and kubelet write."""
    zone = ZONES[i % 3]
    at = format_time(NOW + timedelta(seconds=i // 10))
    created: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": f"web-h1-{i:05d}", "namespace": "default", "uid": f"uid-{i:05d}",
            "generateName": "web-h1-", "creationTimestamp": at,
            "labels": {"app": "web", "pod-template-hash": "h1"},
            "annotations": {MATCHED_ANNOTATION: f'{{"name":"ws","subset":"zone-{zone}"}}'},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                 "name": "web-h1", "uid": "uid-rs", "controller": True,
                                 "blockOwnerDeletion": True}]},
        "spec": {
            "containers": [{"name": "web", "image": "nginx:1.27",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File",
                            "imagePullPolicy": "IfNotPresent"}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "securityContext": {},
            "schedulerName": "default-scheduler", "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{
                    "key": "topology.kubernetes.io/zone", "operator": "In",
                    "values": [zone]}]}]}}},
            "tolerations": [{"key": f"node.kubernetes.io/{taint}", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}
                            for taint in ("not-ready", "unreachable")]},
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }
    bound = copy.deepcopy(created)
    bound["spec"]["nodeName"] = f"node-{zone}-{i % 4}"
    bound["status"]["conditions"] = [_condition("PodScheduled", True, at)]
    creating = copy.deepcopy(bound)
    creating["status"] = {
        "phase": "Pending", "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}],
        "startTime": at, "qosClass": "Burstable",
        "conditions": [_condition("PodReadyToStartContainers", False, at),
                       _condition("Initialized", True, at),
                       _condition("Ready", False, at, "ContainersNotReady"),
                       _condition("ContainersReady", False, at, "ContainersNotReady"),
                       _condition("PodScheduled", True, at)],
        "containerStatuses": [{"name": "web", "image": "nginx:1.27", "imageID": "",
                               "ready": False, "started": False, "restartCount": 0,
                               "state": {"waiting": {"reason": "ContainerCreating"}},
                               "lastState": {}}]}
    out = [created, bound, creating]
    for ready in (False, True):
        running = copy.deepcopy(creating)
        status = running["status"]
        status.update(phase="Running", podIP=f"10.1.{i // 250}.{i % 250}")
        status["podIPs"] = [{"ip": status["podIP"]}]
        status["conditions"] = [
            _condition("PodReadyToStartContainers", True, at),
            _condition("Initialized", True, at),
            _condition("Ready", ready, at, None if ready else "ContainersNotReady"),
            _condition("ContainersReady", ready, at, None if ready else "ContainersNotReady"),
            _condition("PodScheduled", True, at)]
        status["containerStatuses"] = [{
            "name": "web", "image": "nginx:1.27", "imageID": "kubesim://nginx:1.27",
            "containerID": f"kubesim://uid-{i}-web", "ready": ready, "started": True,
            "restartCount": 0, "state": {"running": {"startedAt": at}}, "lastState": {}}]
        out.append(running)
    return out


class Rollout:
    """The projection and rule of one planner, fed observations as the watcher encodes them."""

    def __init__(self, pods: int) -> None:
        self.view = KubeProjection()
        self.rule = WorkloadSpreadRule("bench")
        self.log = DecisionLog()
        self.seq = 0
        self.annotations: dict[str, dict[str, str]] = {}  # written by plans, kept by later writes
        owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "uid-d",
                 "controller": True}
        template = {"metadata": {"labels": {"app": "web"}}}
        setup: list[dict[str, Any]] = [
            {"apiVersion": "apps/v1", "kind": "Deployment",
             "metadata": {"name": "web", "namespace": "default", "uid": "uid-d"},
             "spec": {"replicas": pods, "template": template}},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet",
             "metadata": {"name": "web-h1", "namespace": "default", "uid": "uid-rs",
                          "labels": {"pod-template-hash": "h1"}, "ownerReferences": [owner]},
             "spec": {"replicas": pods, "template": template}},
            {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
             "metadata": {"name": "ws", "namespace": "default", "uid": "uid-ws",
                          "generation": 1},
             "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": "web"},
                      "subsets": [{"name": f"zone-{z}", "maxReplicas": pods // 3 + 1}
                                  for z in ZONES]}},
            *({"apiVersion": "v1", "kind": "Node", "metadata": {
                "name": f"node-{z}-{n}", "labels": {"topology.kubernetes.io/zone": z}}}
              for z in ZONES for n in range(4)),
        ]
        for obj in setup:
            self.fold([self.encode(obj)])
        for ref in self.rule.resources:
            marker = SyncMarker(cluster="bench", group=ref.group, version=ref.version,
                                resource=ref.resource, complete=True)
            self.fold([(subjects.sync("bench", ref.group, ref.resource), codec.encode(marker))])
        self.rule.desired(self.view, self.view.take_changed(), NOW.timestamp())

    def encode(self, obj: dict[str, Any]) -> tuple[str, bytes]:
        meta = obj["metadata"]
        meta.setdefault("annotations", {}).update(self.annotations.get(meta["name"], {}))
        ref = KINDS[obj["kind"]]
        message = Observation(cluster="bench", group=ref.group, version=ref.version,
                              resource=ref.resource, event="MODIFIED", object=obj)
        return (subjects.observation("bench", ref.group, ref.resource,
                                     meta.get("namespace", ""), meta["name"]),
                codec.encode(message))

    def fold(self, messages: list[tuple[str, bytes]]) -> None:
        for subject, data in messages:
            self.seq += 1
            self.view.apply(self.seq, subject, data)

    def round(self, now: float) -> list[Any]:
        """What a planner round does once its messages are folded."""
        for _ in range(3):  # the readiness gates: the run loop, the step, the decision
            assert all(self.view.synced("bench", r.group, r.resource)
                       for r in self.rule.resources)
        changed = self.view.take_changed() | self.rule.due(now)
        desired = self.rule.desired(self.view, changed, now)
        return plans_for(self.rule, self.view, self.log, desired, cluster="bench", now=now)


def rollout_cpu(pods: int) -> tuple[float, float, int]:
    """CPU seconds per observation through fold, rule and plans; per full decode of the same
    pod observations; and the observations."""
    rollout = Rollout(pods)
    stages = [rollout_pod_stages(i) for i in range(pods)]
    order = [stages[i][step] for start in range(0, pods, ROLLOUT_WAVE) for step in range(5)
             for i in range(start, min(start + ROLLOUT_WAVE, pods))]
    now = NOW.timestamp()
    cpu = 0.0
    observations = 0
    encoded: list[bytes] = []
    written: list[dict[str, Any]] = []
    for at in range(0, len(order), ROLLOUT_ROUND):
        messages = [rollout.encode(obj) for obj in [*order[at:at + ROLLOUT_ROUND], *written]]
        encoded.extend(data for _, data in messages)
        observations += len(messages)
        now += 0.02
        started = time.process_time()
        rollout.fold(messages)
        plans = rollout.round(now)
        cpu += time.process_time() - started
        written = []
        for plan in plans:
            if plan.verb == "patch" and plan.target.resource == "pods":
                name = plan.target.name  # the write lands and is observed next round
                rollout.annotations.setdefault(name, {}).update(
                    plan.patch["metadata"]["annotations"])
                pod = rollout.view.get("bench", "", "pods", "default", name)
                assert pod is not None
                written.append(pod)
    started = time.process_time()
    for data in encoded:
        codec.decode(data)
    decode = (time.process_time() - started) / len(encoded)
    return cpu / observations, decode, observations


def rollout_rounds(pods: int) -> None:
    runs = [rollout_cpu(pods) for _ in range(3)]
    per_observation, decode, observations = min(runs)
    print(f"rollout of {pods} pods under a WorkloadSpread ({observations} observations, "
          f"{ROLLOUT_ROUND} a round): planner CPU {per_observation * 1e6:.1f} us per "
          f"observation, ratio to one full decode of it {per_observation / decode:.1f}")


async def publish(nc: Client, start: int, count: int, objects: int) -> None:
    js = nc.jetstream()
    for i in range(start, start + count):
        subject, data, msg_id = observation(i, objects)
        await js.publish_async(subject, data, headers={"Nats-Msg-Id": msg_id})
        if i % 4000 == 3999:
            await js.publish_async_completed()
    subject, data = sync_marker()
    await js.publish_async(subject, data)
    await js.publish_async_completed()


async def raw_rate(nc: Client, total: int) -> float:
    js = nc.jetstream()
    info = await js.add_consumer("KUBE", config=ConsumerConfig(
        ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.ALL, mem_storage=True,
        num_replicas=1, inactive_threshold=30.0))
    inbox = nc.new_inbox()
    done = asyncio.Event()
    next_request = asyncio.Event()
    state = {"count": 0, "in_request": 0}

    async def on_msg(msg: Msg) -> None:
        if not msg.reply:
            next_request.set()  # status: request expired
            return
        state["count"] += 1
        state["in_request"] += 1
        if state["count"] >= total:
            done.set()
        elif state["in_request"] >= BATCH:
            state["in_request"] = 0
            next_request.set()

    sub = await nc.subscribe(inbox, cb=on_msg, pending_msgs_limit=4 * BATCH,
                             pending_bytes_limit=1 << 30)
    request = f'{{"batch": {BATCH}, "expires": 5000000000}}'.encode()
    started = time.perf_counter()
    await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.KUBE.{info.name}", request, reply=inbox)
    while not done.is_set():
        waiter = asyncio.ensure_future(next_request.wait())
        finisher = asyncio.ensure_future(done.wait())
        await asyncio.wait({waiter, finisher}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        finisher.cancel()
        if next_request.is_set() and not done.is_set():
            next_request.clear()
            await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.KUBE.{info.name}", request,
                             reply=inbox)
    elapsed = time.perf_counter() - started
    await sub.unsubscribe()
    await js.delete_consumer("KUBE", info.name)
    return total / elapsed


async def planner_startup(
    nc: Client, snapshots: SnapshotStore | None, parts: dict[str, float] | None = None
) -> tuple[float, Planner]:
    """Seconds from nothing to caught up; ``parts`` gets the restore and replay shares.

    ``nc`` is the planner's own connection, a :class:`RawDeliveryClient` as the service's is.
    """
    planner = Planner(nc, cluster="bench", rules=[ObservedGeneration("bench")],
                      snapshots=snapshots)
    stopping = asyncio.Event()
    started = time.perf_counter()
    await planner.restore()
    restored = time.perf_counter()
    task = asyncio.create_task(planner.run(stopping))
    kube = planner.followers()[0]
    await kube.wait_caught_up()
    elapsed = time.perf_counter() - started
    if parts is not None:
        parts["restore"] = restored - started
        parts["replay"] = elapsed - parts["restore"]
    stopping.set()
    await task
    return elapsed, planner


async def measure(observations: int) -> None:
    objects = observations
    with nats_server() as server:
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        planner_nc = RawDeliveryClient()
        await planner_nc.connect(server.url)
        started = time.perf_counter()
        await publish(nc, 0, observations, objects)
        total = (await js.stream_info("KUBE")).state.messages
        assert total == observations + 1, total  # one per object, and the sync marker
        print(f"published {observations} observations in {time.perf_counter() - started:.1f} s")

        raws: list[float] = []
        replay_times: list[float] = []
        for _ in range(2):
            raws.append(await raw_rate(nc, total))
            seconds, snapshot_planner = await planner_startup(planner_nc, None)
            replay_times.append(seconds)
            replayed = snapshot_planner.projection.state.objects.get("bench.apps.deployments", {})
            assert len(replayed) == objects, len(replayed)
        raw = max(raws)
        planner_rate = total / min(replay_times)
        print(f"raw consumer: {raw:,.0f} msg/s (runs: {', '.join(f'{r:,.0f}' for r in raws)})")
        print(f"planner replay: {planner_rate:,.0f} msg/s ({objects} objects; runs: "
              f"{', '.join(f'{total / t:,.0f}' for t in replay_times)})")
        print(f"ratio planner/raw: {planner_rate / raw:.3f} (goal >= {REPLAY_GOAL})")

        store = SnapshotStore(planner_nc)
        snapshot_planner.snapshots = store
        await snapshot_planner.save_snapshot()
        tail = max(1, observations // 20)
        await publish(nc, observations, tail, objects)  # generation 2 of the first objects
        assert (await js.stream_info("KUBE")).state.messages == total
        del snapshot_planner  # one projection of N objects in memory at a time
        full_seconds, _ = await planner_startup(planner_nc, None)
        parts: dict[str, float] = {}
        snap_seconds, resumed = await planner_startup(planner_nc, store, parts)
        assert resumed.restored_from == "snapshot"
        print(f"start-up: snapshot + {tail} tail {snap_seconds:.2f} s (load and decode "
              f"{parts['restore']:.2f} s, tail {parts['replay']:.2f} s), full replay "
              f"{full_seconds:.2f} s")
        print(f"ratio snapshot start-up/full replay: {snap_seconds / full_seconds:.3f} "
              f"(limit <= {STARTUP_LIMIT})")
        await planner_nc.close()
        await nc.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--observations", type=int,
                        default=1_000_000 if full_size() else 200_000)
    parser.add_argument("--spread-pods", type=int, default=20_000,
                        help="pods of the large WorkloadSpread in the round measurements")
    parser.add_argument("--small-spread-pods", type=int, default=200,
                        help="pods of the small WorkloadSpread the large one is compared with")
    parser.add_argument("--rounds", type=int, default=200,
                        help="rounds of one pod change per WorkloadSpread and run")
    parser.add_argument("--rollout-pods", type=int, default=1_000,
                        help="pods of the rollout measured through the fold and the rule")
    args = _tiny.arguments(parser, argv, {"observations": 400, "spread_pods": 40,
                                          "small_spread_pods": 20, "rounds": 5,
                                          "rollout_pods": 20})
    rollout_rounds(args.rollout_pods)
    spread_rounds(args.small_spread_pods, args.spread_pods, args.rounds)
    asyncio.run(measure(args.observations))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
