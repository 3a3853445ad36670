"""The simulated kube-scheduler: a queue of unbound pods, a node cache, and binding.

The cache holds a :class:`~kubesim.behaviour.scheduling.NodeInfo` per node with the requests of
the pods assigned to it, maintained from the pod watch; a pod the scheduler has just bound is
"assumed" on its node at once, so the next decision already accounts for it. A pod that fits
nowhere gets ``PodScheduled=False`` with reason ``Unschedulable`` and the upstream message,
then waits until a node is added or changes, or a pod leaves, or the retry interval passes.
Binding goes through ``pods/binding`` so watchers see the same events as on a real cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from kubesim.behaviour.events import EventRecorder
from kubesim.behaviour.informer import Informer, object_key
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
        for key in sorted(self._unschedulable):
            self._active[key] = None
        self._unschedulable.clear()
        self._wake.set()

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
        decision = schedule(pod, self._infos.values())
        meta = pod["metadata"]
        if decision.node is None:
            self._unschedulable.add(key)
            await self._report_unschedulable(pod, decision.message)
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

    async def _report_unschedulable(self, pod: JsonObject, message: str) -> None:
        conditions = (pod.get("status") or {}).get("conditions") or []
        current = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
        if (
            current is not None
            and current.get("status") == "False"
            and current.get("message") == message
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
