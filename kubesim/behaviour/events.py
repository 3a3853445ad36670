"""Kubernetes Events from the simulated components, for ``kubectl describe`` and ``get events``.

Events are written in the background, never awaited by the controller that records them, and
dropped when too many are already in flight, as upstream's broadcaster drops on a full queue:
an event is a hint for people, not state anything depends on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets

from kubesim.interface import EVENTS, ApiError, Cluster, JsonObject

log = logging.getLogger(__name__)

MAX_IN_FLIGHT = 500


class EventRecorder:
    def __init__(self, cluster: Cluster, component: str, *, enabled: bool = True) -> None:
        self.cluster = cluster
        self.component = component
        self.enabled = enabled
        self._in_flight: set[asyncio.Task[None]] = set()

    def normal(self, obj: JsonObject, kind: str, reason: str, message: str) -> None:
        self._record(obj, kind, "Normal", reason, message)

    def warning(self, obj: JsonObject, kind: str, reason: str, message: str) -> None:
        self._record(obj, kind, "Warning", reason, message)

    def _record(self, obj: JsonObject, kind: str, type_: str, reason: str, message: str) -> None:
        if not self.enabled or len(self._in_flight) >= MAX_IN_FLIGHT:
            return
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        now = self.cluster.now()
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{meta.get('name')}.{secrets.token_hex(8)}",
                "namespace": namespace,
            },
            "involvedObject": {
                "apiVersion": obj.get("apiVersion")
                or ("v1" if kind == "Pod" or kind == "Node" else "apps/v1"),
                "kind": kind,
                "name": meta.get("name"),
                "namespace": meta.get("namespace") or "",
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "reportingInstance": f"{self.component}-kubesim",
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        task = asyncio.get_running_loop().create_task(self._write(event, namespace))
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)

    async def _write(self, event: JsonObject, namespace: str) -> None:
        try:
            await self.cluster.create(EVENTS, event, namespace=namespace)
        except ApiError as exc:
            log.debug("event %s not recorded: %s", event["reason"], exc.message)

    async def stop(self) -> None:
        for task in list(self._in_flight):
            task.cancel()
        for task in list(self._in_flight):
            with contextlib.suppress(asyncio.CancelledError):
                await task
