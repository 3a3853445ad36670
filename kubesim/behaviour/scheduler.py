"""The simulated kube-scheduler: a queue of unbound pods, a node cache, and binding.

The cache holds a :class:`~kubesim.behaviour.scheduling.NodeInfo` per node with the requests of
the pods assigned to it, maintained from the pod watch; a pod the scheduler has just bound is
"assumed" on its node at once, so the next decision already accounts for it. A pod that fits
nowhere gets ``PodScheduled=False`` with reason ``Unschedulable`` and the upstream message,
then waits until a node is added or changes, or a pod leaves, or the retry interval passes.
Binding goes through ``pods/binding`` so watchers see the same events as on a real cluster.

A pod that fits nowhere may preempt (:mod:`kubesim.behaviour.preemption`): its victims get the
``DisruptionTarget`` condition, a ``Preempted`` event and a graceful delete, pods of lower
priority nominated to that node lose their nomination, and the pod gets
``status.nominatedNodeName``; until it is bound, pods of no higher priority see its requests on
that node. Pending pods are retried highest priority first, as the scheduling queue sorts them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from kubesim.behaviour.events import EventRecorder
from kubesim.behaviour.informer import Informer, object_key
from kubesim.behaviour.preemption import Preemption, preempt, priority, with_nominated
from kubesim.behaviour.scheduling import NodeInfo, schedule
from kubesim.behaviour.settings import Settings
from kubesim.interface import NODES, PODS, ApiError, Cluster, JsonObject

log = logging.getLogger(__name__)

SCHEDULER_NAME = "default-scheduler"


def _is_terminal(pod: JsonObject) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _wants_scheduling(pod: JsonObject) -> bool:
    spec = pod.get("spec") or {}
    return (
        not spec.get("nodeName")
        and spec.get("schedulerName", SCHEDULER_NAME) == SCHEDULER_NAME
        and not spec.get("schedulingGates")
        and not (pod.get("metadata") or {}).get("deletionTimestamp")
        and not _is_terminal(pod)
    )


class Scheduler:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._running: _RunningScheduler | None = None

    async def start(self, cluster: Cluster) -> None:
        self._running = _RunningScheduler(cluster, self.settings)
        await self._running.start()

    async def stop(self) -> None:
        if self._running is not None:
            await self._running.stop()
            self._running = None


class _RunningScheduler:
    """The scheduler's caches and queues while it runs."""

    def __init__(self, cluster: Cluster, settings: Settings) -> None:
        self.settings = settings
        self._cluster = cluster
        self._nodes = Informer(cluster, NODES)
        self._pods = Informer(cluster, PODS)
        self._events = EventRecorder(cluster, SCHEDULER_NAME, enabled=settings.events)
        self._nodes.add_handler(self._on_node)
        self._pods.add_handler(self._on_pod)
        self._infos: dict[str, NodeInfo] = {}
        self._pod_node: dict[str, str] = {}
        self._active: dict[str, None] = {}
        self._unschedulable: set[str] = set()
        self._nominated: dict[str, tuple[str, JsonObject]] = {}
        """Pending pods nominated by a preemption: key -> (node, pod)."""
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._flush_pending = False

    async def start(self) -> None:
        self._nodes.start()
        await self._nodes.synced.wait()
        self._pods.start()
        await self._pods.synced.wait()
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._run(), name="scheduler"),
            loop.create_task(self._retry_unschedulable(), name="scheduler-retry"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._pods.stop()
        await self._nodes.stop()
        await self._events.stop()

    # -- cache -----------------------------------------------------------------------------

    def _on_node(self, old: JsonObject | None, new: JsonObject | None) -> None:
        if new is None:
            if old is not None:
                self._infos.pop(old["metadata"]["name"], None)
            return
        name = new["metadata"]["name"]
        info = self._infos.get(name)
        if info is None:
            info = self._infos[name] = NodeInfo(new)
            for key, node in self._pod_node.items():
                if node == name:
                    pod = self._pods.get(key)
                    if pod is not None:
                        info.add_pod(pod)
        else:
            info.node = new
        if (
            old is None
            or old.get("spec") != new.get("spec")
            or _allocatable(old) != _allocatable(new)
            or old["metadata"].get("labels") != new["metadata"].get("labels")
        ):
            self._requeue_unschedulable()

    def _on_pod(self, old: JsonObject | None, new: JsonObject | None) -> None:
        key = object_key(new if new is not None else old or {})
        nominated = (new or {}).get("status", {}).get("nominatedNodeName")
        if new is not None and nominated and _wants_scheduling(new):
            self._nominated[key] = (str(nominated), new)
        else:
            self._nominated.pop(key, None)
        bound = new is not None and bool(new["spec"].get("nodeName")) and not _is_terminal(new)
        previous = self._pod_node.get(key)
        if previous is not None and (
            not bound or new is None or new["spec"]["nodeName"] != previous
        ):
            info = self._infos.get(previous)
            if info is not None:
                info.remove_pod(key)
            del self._pod_node[key]
            self._requeue_unschedulable()
        if bound and new is not None:
            node = new["spec"]["nodeName"]
            self._pod_node[key] = node
            info = self._infos.get(node)
            if info is not None:
                info.add_pod(new)
            self._active.pop(key, None)
            self._unschedulable.discard(key)
            return
        if new is not None and _wants_scheduling(new):
            if key not in self._unschedulable or old is None or old.get("spec") != new.get("spec"):
                self._unschedulable.discard(key)
                self._active[key] = None
                self._wake.set()
        else:
            self._active.pop(key, None)
            self._unschedulable.discard(key)

    def _requeue_unschedulable(self) -> None:
        """Give pending pods another try soon: something changed that might make room.

        Bursts of changes (a deployment's pods going away) are coalesced into one retry. A pod
        joins the unschedulable set before any await, so no change can slip between.
        """
        if self._flush_pending or not self._unschedulable:
            return
        self._flush_pending = True
        asyncio.get_running_loop().call_later(0.02, self._flush_unschedulable)

    def _flush_unschedulable(self) -> None:
        self._flush_pending = False
        for key in sorted(self._unschedulable, key=self._queue_order):
            self._active[key] = None
        self._unschedulable.clear()
        self._wake.set()

    def _queue_order(self, key: str) -> tuple[int, str]:
        pod = self._pods.get(key)
        return (-priority(pod) if pod is not None else 0, key)

    async def _retry_unschedulable(self) -> None:
        while True:
            await asyncio.sleep(self.settings.unschedulable_retry)
            self._flush_unschedulable()

    # -- scheduling loop -------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            if not self._active:
                self._wake.clear()
                await self._wake.wait()
                continue
            key = next(iter(self._active))
            del self._active[key]
            try:
                await self._schedule_one(key)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("scheduling %s failed", key)
                self._unschedulable.add(key)

    async def _schedule_one(self, key: str) -> None:
        pod = self._pods.get(key)
        if pod is None or not _wants_scheduling(pod):
            return
        by_node: dict[str, list[JsonObject]] = {}
        for node, nominated in self._nominated.values():
            by_node.setdefault(node, []).append(nominated)
        infos = with_nominated(pod, self._infos.values(), by_node)
        decision = schedule(pod, infos)
        meta = pod["metadata"]
        if decision.node is None:
            self._unschedulable.add(key)
            chosen = preempt(pod, infos, dict(decision.rejected))
            if chosen is None:
                await self._report_unschedulable(pod, decision.message)
                return
            await self._preempt(pod, chosen)
            status = {**(pod.get("status") or {}), "nominatedNodeName": chosen.node}
            self._nominated[key] = (chosen.node, {**pod, "status": status})
            # Upstream's message after a preemption that succeeded has no preemption part.
            message = decision.message.split(" preemption: ", 1)[0]
            await self._report_unschedulable(pod, message, nominate=chosen.node)
            return
        info = self._infos[decision.node]
        assumed = {**pod, "spec": {**pod["spec"], "nodeName": decision.node}}
        info.add_pod(assumed)
        self._pod_node[key] = decision.node
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {
                "name": meta["name"],
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
            },
            "target": {"apiVersion": "v1", "kind": "Node", "name": decision.node},
        }
        try:
            await self._cluster.create(
                PODS,
                binding,
                namespace=meta.get("namespace"),
                name=meta["name"],
                subresource="binding",
            )
        except ApiError as exc:
            info.remove_pod(key)
            self._pod_node.pop(key, None)
            if exc.code == 404:
                return
            log.info("binding %s to %s failed: %s", key, decision.node, exc.message)
            self._unschedulable.add(key)
            return
        self._events.normal(
            pod, "Pod", "Scheduled", f"Successfully assigned {key} to {decision.node}"
        )

    async def _preempt(self, pod: JsonObject, chosen: Preemption) -> None:
        """``prepareCandidate``: the victims go, lower nominations to the node are cleared."""
        uid = pod["metadata"].get("uid")
        for victim in chosen.victims:
            meta = victim["metadata"]
            condition = {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "PreemptionByScheduler",
                "message": f"{SCHEDULER_NAME}: preempting to accommodate a higher priority pod",
                "lastTransitionTime": self._cluster.now(),
            }
            others = [c for c in (victim.get("status") or {}).get("conditions") or []
                      if c.get("type") != "DisruptionTarget"]
            try:
                await self._cluster.patch(
                    PODS, meta["name"], {"status": {"conditions": [*others, condition]}},
                    patch_type="merge", namespace=meta.get("namespace"), subresource="status")
                await self._cluster.delete(PODS, meta["name"], namespace=meta.get("namespace"),
                                           uid_precondition=meta.get("uid"))
            except ApiError as exc:
                if exc.code not in (404, 409):
                    raise
                continue
            self._events.normal(victim, "Pod", "Preempted",
                                f"Preempted by pod {uid} on node {chosen.node}")
        mine = priority(pod)
        for key, (node, other) in list(self._nominated.items()):
            if node != chosen.node or priority(other) >= mine:
                continue
            meta = other["metadata"]
            with contextlib.suppress(ApiError):
                await self._cluster.patch(
                    PODS, meta["name"], {"status": {"nominatedNodeName": None}},
                    patch_type="merge", namespace=meta.get("namespace"), subresource="status")
            self._nominated.pop(key, None)

    async def _report_unschedulable(self, pod: JsonObject, message: str,
                                    nominate: str | None = None) -> None:
        status = pod.get("status") or {}
        conditions = status.get("conditions") or []
        current = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
        if (
            current is not None
            and current.get("status") == "False"
            and current.get("message") == message
            and (nominate is None or status.get("nominatedNodeName") == nominate)
        ):
            return
        self._events.warning(pod, "Pod", "FailedScheduling", message)
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": message,
            "lastProbeTime": None,
            "lastTransitionTime": self._cluster.now(),
        }
        others = [c for c in conditions if c.get("type") != "PodScheduled"]
        body = {
            **pod,
            "status": {
                **(pod.get("status") or {}),
                "phase": "Pending",
                "conditions": [*others, condition],
                **({"nominatedNodeName": nominate} if nominate else {}),
            },
        }
        try:
            updated = await self._cluster.update(
                PODS, body, namespace=pod["metadata"].get("namespace"), subresource="status"
            )
        except ApiError as exc:
            if exc.code in (404, 409):
                return
            raise
        self._pods.write_result(updated)


def _allocatable(node: JsonObject) -> object:
    return (node.get("status") or {}).get("allocatable")
