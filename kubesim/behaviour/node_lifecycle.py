"""The node lifecycle controller and its NoExecute taint manager.

A node whose Ready condition turns False gets ``node.kubernetes.io/not-ready`` and one whose
condition is Unknown (its kubelet stopped posting) gets ``node.kubernetes.io/unreachable``, each
with effects NoSchedule and NoExecute; a cordoned node gets ``node.kubernetes.io/unschedulable``.
Ready again, the taints go. Pods on a node that stops being Ready are marked not ready.

The taint manager deletes pods from nodes with NoExecute taints: at once if some taint is not
tolerated, after the smallest matching ``tolerationSeconds`` otherwise. The tolerations are the
pod's own: the API adds the not-ready/unreachable ones at creation, as upstream's
DefaultTolerationSeconds admission plugin does, for ``KubeSim(default_toleration_seconds=...)``
(the ``--default-toleration-seconds`` flag). Pods bound to a node that is deleted are removed at
once, as upstream's pod garbage collector does.
"""

from __future__ import annotations

import asyncio
import logging

from kubesemantics.tolerations import NO_EXECUTE, NO_SCHEDULE, toleration_seconds
from kubesim.behaviour.events import EventRecorder
from kubesim.behaviour.informer import object_key
from kubesim.behaviour.kubelet import node_ready_status
from kubesim.behaviour.replicaset import delete_pod
from kubesim.behaviour.settings import Settings
from kubesim.behaviour.shared_informers import Informers
from kubesim.behaviour.workqueue import WorkQueue
from kubesim.interface import NODES, PODS, ApiError, Cluster, JsonObject

log = logging.getLogger(__name__)

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
MANAGED = (NOT_READY, UNREACHABLE, UNSCHEDULABLE)


def desired_taints(node: JsonObject, now: str) -> list[JsonObject]:
    """The node's taints with the lifecycle ones set from its Ready condition and cordon."""
    current = (node.get("spec") or {}).get("taints") or []
    kept = [t for t in current if t.get("key") not in MANAGED]
    previous = {(t.get("key"), t.get("effect")): t for t in current}
    wanted: list[tuple[str, str]] = []
    status = node_ready_status(node)
    if status == "False":
        wanted += [(NOT_READY, NO_SCHEDULE), (NOT_READY, NO_EXECUTE)]
    elif status != "True":
        wanted += [(UNREACHABLE, NO_SCHEDULE), (UNREACHABLE, NO_EXECUTE)]
    if (node.get("spec") or {}).get("unschedulable"):
        wanted.append((UNSCHEDULABLE, NO_SCHEDULE))
    for key, effect in wanted:
        taint = previous.get((key, effect))
        if taint is None:
            taint = {"key": key, "effect": effect}
            if effect == NO_EXECUTE:
                taint["timeAdded"] = now
        kept.append(taint)
    return kept


class NodeLifecycleController:
    def __init__(self, cluster: Cluster, informers: Informers, settings: Settings) -> None:
        self.cluster = cluster
        self.informers = informers
        self.settings = settings
        self.events = EventRecorder(cluster, "taint-eviction-controller", enabled=settings.events)
        self.nodes = WorkQueue("node-lifecycle", self._sync_node)
        self.evictions = WorkQueue("taint-eviction", self._sync_pod, workers=2)
        self.orphans = WorkQueue("pod-gc", self._collect_orphan)
        self._tainted_at: dict[str, float] = {}
        informers.nodes.add_handler(self._on_node)
        informers.pods.add_handler(self._on_pod)

    def start(self) -> None:
        self.nodes.start()
        self.evictions.start()
        self.orphans.start()

    async def stop(self) -> None:
        await self.nodes.stop()
        await self.evictions.stop()
        await self.orphans.stop()
        await self.events.stop()

    async def _collect_orphan(self, key: str) -> None:
        pod = self.informers.pods.get(key)
        node_name = (pod or {}).get("spec", {}).get("nodeName")
        if pod is None or not node_name or self.informers.nodes.get(node_name) is not None:
            return
        meta = pod["metadata"]
        try:
            result = await self.cluster.delete(
                PODS, meta["name"], namespace=meta.get("namespace"), grace_period_seconds=0
            )
        except ApiError as exc:
            if exc.code != 404:
                raise
            return
        self.informers.pods.remove(result)

    def _on_node(self, old: JsonObject | None, new: JsonObject | None) -> None:
        if new is None:
            if old is not None:
                # pod GC: pods bound to a node that no longer exists are deleted at once
                name = old["metadata"]["name"]
                self._tainted_at.pop(name, None)
                for key in self.informers.pods.index_keys("node", name):
                    self.orphans.add(key)
            return
        self.nodes.add(object_key(new))
        old_taints = ((old or {}).get("spec") or {}).get("taints") or []
        new_taints = (new.get("spec") or {}).get("taints") or []
        if old_taints != new_taints:
            name = new["metadata"]["name"]
            if any(t.get("effect") == NO_EXECUTE for t in new_taints):
                self._tainted_at.setdefault(name, asyncio.get_running_loop().time())
            else:
                self._tainted_at.pop(name, None)
            for key in self.informers.pods.index_keys("node", name):
                self.evictions.add(key)

    def _on_pod(self, old: JsonObject | None, new: JsonObject | None) -> None:
        if new is None:
            return
        node = (new.get("spec") or {}).get("nodeName")
        if (
            node
            and node in self._tainted_at
            and not ((old or {}).get("spec") or {}).get("nodeName")
        ):
            self.evictions.add(object_key(new))

    async def _sync_node(self, key: str) -> None:
        node = self.informers.nodes.get(key)
        if node is None:
            return
        now = self.cluster.now()
        taints = desired_taints(node, now)
        current = (node.get("spec") or {}).get("taints") or []
        if taints != current:
            spec = {**(node.get("spec") or {}), "taints": taints}
            if not taints:
                del spec["taints"]
            updated = await self.cluster.update(NODES, {**node, "spec": spec})
            self.informers.nodes.write_result(updated)
        if node_ready_status(node) != "True":
            await self._mark_pods_not_ready(node["metadata"]["name"], now)

    async def _mark_pods_not_ready(self, node_name: str, now: str) -> None:
        for pod in self.informers.pods.by_index("node", node_name):
            conditions = (pod.get("status") or {}).get("conditions") or []
            if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
                continue
            changed = [
                {**c, "status": "False", "lastTransitionTime": now}
                if c.get("type") == "Ready"
                else c
                for c in conditions
            ]
            body = {**pod, "status": {**pod["status"], "conditions": changed}}
            try:
                updated = await self.cluster.update(
                    PODS, body, namespace=pod["metadata"].get("namespace"), subresource="status"
                )
            except ApiError as exc:
                if exc.code in (404, 409):
                    self.nodes.add_after(node_name, 0.05)
                    continue
                raise
            self.informers.pods.write_result(updated)

    async def _sync_pod(self, key: str) -> None:
        pod = self.informers.pods.get(key)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        node_name = str((pod.get("spec") or {}).get("nodeName") or "")
        node = self.informers.nodes.get(node_name) if node_name else None
        if node is None:
            return
        taints = [
            t for t in (node.get("spec") or {}).get("taints") or [] if t.get("effect") == NO_EXECUTE
        ]
        if not taints:
            return
        seconds = toleration_seconds(taints, (pod.get("spec") or {}).get("tolerations") or [])
        if seconds is None:
            return
        loop = asyncio.get_running_loop()
        since = self._tainted_at.setdefault(node_name, loop.time())
        remaining = since + seconds - loop.time()
        if remaining > 0:
            self.evictions.add_after(key, remaining)
            return
        log.info("evicting %s from tainted node %s", key, node_name)
        self.events.normal(pod, "Pod", "TaintManagerEviction", f"Marking for deletion Pod {key}")
        await delete_pod(self.cluster, self.informers, pod)
