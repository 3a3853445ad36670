"""Continuous sampling of a Deployment's unavailable pods while a scenario runs.

Unavailable = the Deployment's replicas - its pods that are ready and not terminating, read in
that order (pods first), so a scale-down between the two reads can only under-count.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from kubernetes import client


def ready(pod: Any) -> bool:
    if pod.metadata.deletion_timestamp is not None or pod.status.phase != "Running":
        return False
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


class DisruptionWatch:
    """Samples in a thread until stopped; ``worst`` is the most unavailable pods seen."""

    def __init__(self, api: client.ApiClient, namespace: str, app: str) -> None:
        self.core: Any = client.CoreV1Api(api)
        self.apps: Any = client.AppsV1Api(api)
        self.namespace = namespace
        self.app = app
        self.worst = 0
        self.samples = 0
        self.worst_at: tuple[int, int] = (0, 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> DisruptionWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

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

    def report(self) -> str:
        replicas, available = self.worst_at
        return (f"at most {self.worst} unavailable over {self.samples} samples "
                f"(worst: {available} ready of {replicas} replicas)")
