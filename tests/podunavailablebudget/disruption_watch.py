"""Continuous sampling of a Deployment's unavailable pods while a scenario runs.

Unavailable = the Deployment's replicas - its pods that are ready and not terminating, read in
that order (pods first), so a scale-down between the two reads can only under-count.

The pod webhook fails open: a deletion or eviction whose review the API server could not deliver
in time goes through unchecked, and may take one more pod than the budget allows. The watch
counts those (the API server's fail-open metric), so a budget is held when the worst disruption
stays within the budget plus the disruptions no webhook saw.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from kubernetes import client

from tests.fixtures.apiserver_metrics import failed_open

POD_WEBHOOK = "vpod.spreadbus.io"


def ready(pod: Any) -> bool:
    if pod.metadata.deletion_timestamp is not None or pod.status.phase != "Running":
        return False
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


class DisruptionWatch:
    """Samples in a thread until stopped; ``worst`` is the most unavailable pods seen."""

    def __init__(self, api: client.ApiClient, namespace: str, app: str) -> None:
        self.api = api
        self.core: Any = client.CoreV1Api(api)
        self.apps: Any = client.AppsV1Api(api)
        self.namespace = namespace
        self.app = app
        self.worst = 0
        self.samples = 0
        self.worst_at: tuple[int, int] = (0, 0)
        self.unchecked = 0
        """Pod deletions and evictions let through unchecked (failed open) while watching."""
        self._failed_open_before = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> DisruptionWatch:
        self._failed_open_before = failed_open(self.api, POD_WEBHOOK)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.unchecked = failed_open(self.api, POD_WEBHOOK) - self._failed_open_before

    def _run(self) -> None:
        while not self._stop.is_set():
            pods = self.core.list_namespaced_pod(
                self.namespace, label_selector=f"app={self.app}").items
            replicas = self.apps.read_namespaced_deployment(self.app, self.namespace).spec.replicas
            available = sum(1 for p in pods if ready(p))
            unavailable = replicas - available
            self.samples += 1
            if unavailable > self.worst:
                self.worst = unavailable
                self.worst_at = (replicas, available)
            time.sleep(0.01)

    def held(self, budget: int) -> bool:
        return self.worst <= budget + self.unchecked

    def report(self) -> str:
        replicas, available = self.worst_at
        return (f"at most {self.worst} unavailable over {self.samples} samples "
                f"(worst: {available} ready of {replicas} replicas); "
                f"{self.unchecked} disruptions reached no webhook (failed open)")
