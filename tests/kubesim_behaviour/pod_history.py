"""Every state a set of pods goes through, as the API reports it, followed in a thread.

A timed poll can miss a moment when too many pods are unavailable; a watch from the version of
the list it follows (:class:`tests.fixtures.pod_watch.PodWatch`) sees each change, in the API's
order, so counting after every event gives the true peak. Unavailable is what Kruise counts:
created but not Running and Ready, or terminating.

Signature::

    PodHistory(core: CoreV1Api, selector: str, namespace: str = "default")
        .peak_unavailable -> int              # most pods unavailable at once since the list
        .events -> list[tuple[str, str, bool]]  # (type, pod name, terminating), in order
        .first(kind, *, terminating=False) -> list[str]   # names in order of first such event
        .stop() -> None                        # also on leaving ``with PodHistory(...)``
"""

from __future__ import annotations

from typing import Any

from tests.fixtures.pod_watch import JSON, PodWatch


def unavailable(pod: JSON) -> bool:
    status = pod.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )
    return bool(pod["metadata"].get("deletionTimestamp")) or not (
        status.get("phase") == "Running" and ready
    )


class PodHistory(PodWatch):
    def __init__(self, core: Any, selector: str, namespace: str = "default") -> None:
        self.events: list[tuple[str, str, bool]] = []
        self.peak_unavailable = 0
        super().__init__(core, namespace, label_selector=selector, timeout_seconds=120)

    def _listed(self) -> None:
        self.peak_unavailable = sum(1 for p in self._pods.values() if unavailable(p))

    def _changed(self, kind: str, name: str, pod: JSON) -> None:
        self.events.append((kind, name, bool(pod["metadata"].get("deletionTimestamp"))))
        count = sum(1 for p in self._pods.values() if unavailable(p))
        self.peak_unavailable = max(self.peak_unavailable, count)

    def first(self, kind: str, *, terminating: bool = False) -> list[str]:
        """Pod names in the order of their first ``kind`` event (or first terminating one)."""
        seen: list[str] = []
        with self._lock:
            for event_kind, name, is_terminating in self.events:
                hit = is_terminating if terminating else event_kind == kind
                if hit and name not in seen:
                    seen.append(name)
        return seen
