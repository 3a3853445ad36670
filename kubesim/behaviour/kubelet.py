"""The kubelets of every simulated node, as one component.

Each node from the topology is registered at start. A pod bound to a node goes Pending with
its containers ``ContainerCreating``, then ``Running``, then ``Ready``, each after a configured
delay. A node whose Ready condition is Unknown has a dead kubelet: nothing on it progresses, and
pods deleted there stay Terminating, as on a real cluster that lost a node.

Tests steer pods through annotations, which work equally from kubectl:
``kubesim.spreadbus.io/ready: "false"`` holds a pod not ready and
``kubesim.spreadbus.io/restarts: "N"`` reports N container restarts. Graceful deletion
finishes after the pod's ``terminationGracePeriodSeconds``, capped by a setting, with a delete
at grace 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
from typing import Any

from kubesim.behaviour.informer import Informer, by_node_name, object_key
from kubesim.behaviour.settings import Settings
from kubesim.behaviour.topology import Topology
from kubesim.behaviour.workqueue import WorkQueue
from kubesim.interface import NODES, PODS, ApiError, Cluster, JsonObject

log = logging.getLogger(__name__)

READY_ANNOTATION = "kubesim.spreadbus.io/ready"
RESTARTS_ANNOTATION = "kubesim.spreadbus.io/restarts"

_CREATING, _RUNNING = "creating", "running"


def node_ready_status(node: JsonObject | None) -> str:
    for condition in ((node or {}).get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return str(condition.get("status"))
    return "Unknown"


def _condition(kind: str, status: bool, now: str, reason: str | None = None) -> JsonObject:
    condition: JsonObject = {
        "type": kind,
        "status": "True" if status else "False",
        "lastProbeTime": None,
        "lastTransitionTime": now,
    }
    if reason:
        condition["reason"] = reason
    return condition


def _keep_transition(new: list[JsonObject], old: list[JsonObject]) -> list[JsonObject]:
    """Keep lastTransitionTime of conditions whose status did not change."""
    previous = {c.get("type"): c for c in old}
    for condition in new:
        before = previous.get(condition["type"])
        if before and before.get("status") == condition["status"]:
            condition["lastTransitionTime"] = before.get("lastTransitionTime")
    return new


class Kubelet:
    """Registers the topology's nodes and runs the pods bound to them."""

    def __init__(self, topology: Topology, settings: Settings) -> None:
        self.topology = topology
        self.settings = settings
        self._running: _RunningKubelet | None = None

    async def start(self, cluster: Cluster) -> None:
        for node in self.topology.nodes(cluster.now()):
            try:
                await cluster.create(NODES, node)
            except ApiError as exc:
                if exc.code != 409:
                    raise
        self._running = _RunningKubelet(cluster, self.settings)
        await self._running.start()

    async def stop(self) -> None:
        if self._running is not None:
            await self._running.stop()
            self._running = None


class _RunningKubelet:
    """The kubelet's caches, queue and per-pod progress while it runs."""

    def __init__(self, cluster: Cluster, settings: Settings) -> None:
        self.settings = settings
        self._cluster = cluster
        self._nodes = Informer(cluster, NODES)
        self._pods = Informer(cluster, PODS)
        self._pods.add_index("node", by_node_name)
        self._queue = WorkQueue("kubelet", self._sync, workers=4)
        self._pods.add_handler(self._on_pod)
        self._nodes.add_handler(self._on_node)
        # per pod uid: stage reached and when; first sighting; start of termination
        self._progress: dict[str, tuple[str, float]] = {}
        self._seen: dict[str, float] = {}
        self._terminating: dict[str, float] = {}
        # pod addresses: per uid (podCIDR, address, host number); per podCIDR hosts in use
        self._ips: dict[str, tuple[str, str, int]] = {}
        self._used_ips: dict[str, set[int]] = {}

    async def start(self) -> None:
        self._nodes.start()
        self._pods.start()
        self._queue.start()
        await self._nodes.synced.wait()
        await self._pods.synced.wait()

    async def stop(self) -> None:
        await self._queue.stop()
        await self._pods.stop()
        await self._nodes.stop()

    def _on_pod(self, old: JsonObject | None, new: JsonObject | None) -> None:
        if new is None:
            if old is not None:
                uid = str(old["metadata"].get("uid"))
                for memory in (self._progress, self._seen, self._terminating):
                    memory.pop(uid, None)
                self._release_ip(uid)
            return
        if (new.get("spec") or {}).get("nodeName") and kubelet_acts_on(old, new):
            self._queue.add(object_key(new))

    def _on_node(self, old: JsonObject | None, new: JsonObject | None) -> None:
        if new is None or node_ready_status(old) == node_ready_status(new):
            return
        for key in self._pods.index_keys("node", new["metadata"]["name"]):
            self._queue.add(key)

    async def _sync(self, key: str) -> None:
        pod = self._pods.get(key)
        if pod is None:
            return
        node_name = pod["spec"].get("nodeName")
        node = self._nodes.get(node_name) if node_name else None
        if node is None:
            return
        ready_status = node_ready_status(node)
        if ready_status == "Unknown":
            return  # the kubelet is gone; nothing happens on this node
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            await self._finish_deletion(key, pod)
            return
        if ready_status != "True":
            return
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            return
        uid = str(meta.get("uid"))
        loop = asyncio.get_running_loop()
        now = loop.time()
        stage = self._progress.get(uid)
        status = pod.get("status") or {}
        if stage is None:
            if status.get("startTime") and phase == "Running":
                self._progress[uid] = (_RUNNING, now - self.settings.ready_delay)
                await self._report(pod)
                return
            due = self._seen.setdefault(uid, now) + self.settings.create_delay
            if now < due:
                self._queue.add_after(key, due - now)
                return
            self._progress[uid] = (_CREATING, now)
            self._seen.pop(uid, None)
            await self._write_status(pod, self._creating_status(pod, node))
            self._queue.add_after(key, self.settings.start_delay)
            return
        name, since = stage
        if name == _CREATING:
            due = since + self.settings.start_delay
            if now < due:
                self._queue.add_after(key, due - now)
                return
            self._progress[uid] = (_RUNNING, now)
            await self._report(pod)
            if self.settings.ready_delay > 0:
                self._queue.add_after(key, self.settings.ready_delay)
            return
        await self._report(pod)
        due = since + self.settings.ready_delay
        if now < due:
            self._queue.add_after(key, due - now)

    async def _finish_deletion(self, key: str, pod: JsonObject) -> None:
        meta = pod["metadata"]
        grace = meta.get("deletionGracePeriodSeconds")
        if grace is None:
            grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
        wait = min(float(grace or 0), self.settings.max_termination_grace)
        uid = str(meta.get("uid"))
        loop = asyncio.get_running_loop()
        started = self._terminating.setdefault(uid, loop.time())
        remaining = started + wait - loop.time()
        if remaining > 0:
            self._queue.add_after(key, remaining)
            return
        self._terminating.pop(uid, None)
        with contextlib.suppress(ApiError):
            await self._cluster.delete(
                PODS,
                meta["name"],
                namespace=meta.get("namespace"),
                grace_period_seconds=0,
                uid_precondition=uid,
            )

    def _creating_status(self, pod: JsonObject, node: JsonObject) -> JsonObject:
        now = self._cluster.now()
        containers = pod["spec"].get("containers") or []
        return {
            "phase": "Pending",
            "hostIP": _node_ip(node),
            "hostIPs": [{"ip": _node_ip(node)}],
            "startTime": now,
            "qosClass": _qos_class(pod["spec"]),
            "conditions": [
                _condition("PodReadyToStartContainers", False, now),
                _condition("Initialized", True, now),
                _condition("Ready", False, now, "ContainersNotReady"),
                _condition("ContainersReady", False, now, "ContainersNotReady"),
                _condition("PodScheduled", True, now),
            ],
            "containerStatuses": [
                {
                    "name": c.get("name"),
                    "image": c.get("image", ""),
                    "imageID": "",
                    "ready": False,
                    "started": False,
                    "restartCount": 0,
                    "state": {"waiting": {"reason": "ContainerCreating"}},
                    "lastState": {},
                }
                for c in containers
            ],
        }

    async def _report(self, pod: JsonObject) -> None:
        """Write the Running status with readiness as the annotations and delays say."""
        uid = str(pod["metadata"].get("uid"))
        stage = self._progress.get(uid)
        if stage is None:
            return
        loop = asyncio.get_running_loop()
        now = self._cluster.now()
        old = pod.get("status") or {}
        annotations = pod["metadata"].get("annotations") or {}
        ready = (
            loop.time() >= stage[1] + self.settings.ready_delay
            and str(annotations.get(READY_ANNOTATION, "true")).lower() != "false"
        )
        restarts = _int(annotations.get(RESTARTS_ANNOTATION))
        previous = {s.get("name"): s for s in old.get("containerStatuses") or ()}
        statuses = []
        for container in pod["spec"].get("containers") or []:
            before = previous.get(container.get("name")) or {}
            started_at = ((before.get("state") or {}).get("running") or {}).get("startedAt") or now
            status: JsonObject = {
                "name": container.get("name"),
                "image": container.get("image", ""),
                "imageID": f"kubesim://{container.get('image', '')}",
                "containerID": f"kubesim://{uid}-{container.get('name')}",
                "ready": ready,
                "started": True,
                "restartCount": restarts,
                "state": {"running": {"startedAt": started_at}},
                "lastState": {},
            }
            if restarts:
                status["lastState"] = {
                    "terminated": {"exitCode": 1, "reason": "Error", "finishedAt": started_at}
                }
            statuses.append(status)
        conditions = _keep_transition(
            [
                _condition("PodReadyToStartContainers", True, now),
                _condition("Initialized", True, now),
                _condition("Ready", ready, now, None if ready else "ContainersNotReady"),
                _condition("ContainersReady", ready, now, None if ready else "ContainersNotReady"),
                _condition("PodScheduled", True, now),
            ],
            old.get("conditions") or [],
        )
        new_status = {
            **old,
            "phase": "Running",
            "podIP": self._allocate_ip(pod),
            "podIPs": [{"ip": self._allocate_ip(pod)}],
            "conditions": conditions,
            "containerStatuses": statuses,
        }
        if new_status != old:
            await self._write_status(pod, new_status)

    def _allocate_ip(self, pod: JsonObject) -> str:
        """The pod's address in its node's podCIDR: the lowest host number free there."""
        uid = str(pod["metadata"].get("uid"))
        if uid in self._ips:
            return self._ips[uid][1]
        node = self._nodes.get(pod["spec"]["nodeName"]) or {}
        cidr = str((node.get("spec") or {}).get("podCIDR") or "10.127.252.0/22")
        network = ipaddress.IPv4Network(cidr, strict=False)
        used = self._used_ips.setdefault(cidr, set())
        held = (pod.get("status") or {}).get("podIP")
        if held:
            # an address given before a restart of kubesim: keep it and keep it taken
            host = int(ipaddress.IPv4Address(held)) - int(network.network_address)
            used.add(host)
            self._ips[uid] = (cidr, str(held), host)
            return str(held)
        host = next(h for h in range(2, network.num_addresses - 1) if h not in used)
        used.add(host)
        address = str(network.network_address + host)
        self._ips[uid] = (cidr, address, host)
        return address

    def _release_ip(self, uid: str) -> None:
        allocated = self._ips.pop(uid, None)
        if allocated is not None:
            self._used_ips.get(allocated[0], set()).discard(allocated[2])

    async def _write_status(self, pod: JsonObject, status: JsonObject) -> None:
        meta = pod["metadata"]
        body = {**pod, "status": status}
        try:
            updated = await self._cluster.update(
                PODS, body, namespace=meta.get("namespace"), subresource="status"
            )
        except ApiError as exc:
            if exc.code == 404:
                return
            raise
        self._pods.write_result(updated)


_STEERING = (READY_ANNOTATION, RESTARTS_ANNOTATION)


def kubelet_acts_on(old: JsonObject | None, new: JsonObject) -> bool:
    """Whether a pod change gives the kubelet anything to do.

    As a real kubelet, it acts on a new pod, the spec, the status, a deletion and (here) its
    steering annotations; other metadata (labels, owners, a controller's deletion cost written
    on a running pod) costs it nothing.
    """
    if old is None or old.get("spec") != new.get("spec") or old.get("status") != new.get("status"):
        return True
    before, after = old.get("metadata") or {}, new.get("metadata") or {}
    if any(before.get(f) != after.get(f)
           for f in ("uid", "deletionTimestamp", "deletionGracePeriodSeconds")):
        return True
    notes_before, notes_after = before.get("annotations") or {}, after.get("annotations") or {}
    return any(notes_before.get(a) != notes_after.get(a) for a in _STEERING)


def _int(raw: Any) -> int:
    try:
        return max(int(str(raw)), 0)
    except (TypeError, ValueError):
        return 0


def _node_ip(node: JsonObject) -> str:
    for address in (node.get("status") or {}).get("addresses") or ():
        if address.get("type") == "InternalIP":
            return str(address.get("address"))
    return ""


def _qos_class(spec: JsonObject) -> str:
    containers = spec.get("containers") or []
    requests = [((c.get("resources") or {}).get("requests") or {}) for c in containers]
    limits = [((c.get("resources") or {}).get("limits") or {}) for c in containers]
    if not any(requests) and not any(limits):
        return "BestEffort"
    guaranteed = all(
        lim.get("cpu")
        and lim.get("memory")
        and req.get("cpu", lim["cpu"]) == lim["cpu"]
        and req.get("memory", lim["memory"]) == lim["memory"]
        for req, lim in zip(requests, limits, strict=True)
    )
    return "Guaranteed" if guaranteed else "Burstable"
