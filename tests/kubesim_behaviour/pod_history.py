"""Every state a set of pods goes through, as the API reports it, followed in a thread.

A timed poll can miss a moment when too many pods are unavailable; a watch from the version of
the list it follows sees each change, in the API's order, so counting after every event gives
the true peak. Unavailable is what Kruise counts: created but not Running and Ready, or
terminating.

Signature::

    PodHistory(core: CoreV1Api, selector: str, namespace: str = "default")
        .peak_unavailable -> int              # most pods unavailable at once since the list
        .events -> list[tuple[str, str, bool]]  # (type, pod name, terminating), in order
        .first(kind, *, terminating=False) -> list[str]   # names in order of first such event
        .stop() -> None                        # also on leaving ``with PodHistory(...)``
"""

from __future__ import annotations

import json
import threading
from types import TracebackType
from typing import Any

JSON = dict[str, Any]


def unavailable(pod: JSON) -> bool:
    status = pod.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )
    return bool(pod["metadata"].get("deletionTimestamp")) or not (
        status.get("phase") == "Running" and ready
    )


class PodHistory:
    def __init__(self, core: Any, selector: str, namespace: str = "default") -> None:
        listed: JSON = json.loads(
            core.list_namespaced_pod(
                namespace, label_selector=selector, _preload_content=False
            ).data
        )
        self._lock = threading.Lock()
        self._pods: dict[str, JSON] = {p["metadata"]["name"]: p for p in listed["items"]}
        self.events: list[tuple[str, str, bool]] = []
        self.peak_unavailable = sum(1 for p in self._pods.values() if unavailable(p))
        self._response = core.list_namespaced_pod(
            namespace,
            label_selector=selector,
            watch=True,
            resource_version=listed["metadata"]["resourceVersion"],
            timeout_seconds=120,
            _preload_content=False,
        )
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        buffer = b""
        try:
            for chunk in self._response.stream(64 * 1024):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        self._event(json.loads(line))
        except Exception:  # the watch is closed by stop()
            return

    def _event(self, event: JSON) -> None:
        kind, pod = event.get("type"), event.get("object") or {}
        name = (pod.get("metadata") or {}).get("name")
        if kind not in ("ADDED", "MODIFIED", "DELETED") or not name:
            return
        with self._lock:
            self.events.append((kind, name, bool(pod["metadata"].get("deletionTimestamp"))))
            if kind == "DELETED":
                self._pods.pop(name, None)
            else:
                self._pods[name] = pod
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

    def stop(self) -> None:
        self._response.shutdown()
        self._thread.join(10)
        self._response.release_conn()

    def __enter__(self) -> PodHistory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
