"""Watching a WorkloadSpread's subsets from outside while faults hit the stack: every episode
in which a subset holds more pods than its ``maxReplicas``.

A thread lists the namespace's pods through the official client every ``interval`` seconds
(the raw JSON: decoding 150 pods into client models each time would load the machine more than
the stack under test). Pods are counted as the WorkloadSpread counts them: active ones only (not
being deleted, not Succeeded or Failed), in the subset their ``matched`` annotation names or,
for a pod not annotated yet (admitted while no webhook steered it), in the subset its node's zone
matches, where the planner's node matching puts it.

Each sample also asks whether the webhook steers (its ``/readyz``): a pod created while it
cannot is admitted unsteered, and putting it right starts only once the webhook steers the
replacement again, so an episode's repair time is counted from its start or from the last
sample in which the webhook did not steer, whichever is later.
"""

from __future__ import annotations

import collections
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from tests.workloadspread_e2e.stack import MATCHED

Counts = dict[str, int]


@dataclass
class Episode:
    """A subset seen holding more than its maxReplicas, from the first such sample to the
    first sample that no longer does (``end`` None while it lasts)."""

    subset: str
    limit: int
    start: float
    peak: int
    end: float | None = None
    steered_again: float = 0.0
    """The latest sample before ``end`` in which the webhook did not steer (0: none)."""

    @property
    def seconds(self) -> float | None:
        return None if self.end is None else self.end - self.start

    @property
    def repair_seconds(self) -> float | None:
        """How long it lasted once the webhook steered again."""
        return None if self.end is None else self.end - max(self.start, self.steered_again)

    def brief(self, origin: float) -> str:
        end = "still over" if self.end is None else (
            f"{self.seconds:.1f} s, {self.repair_seconds:.1f} s after the webhook steered again")
        return (f"{self.subset} over {self.limit} (peak {self.peak}) from "
                f"{self.start - origin:.1f} s: {end}")


def pod_subset(pod: Mapping[str, Any], spread: str, zone_subsets: Mapping[str, str],
               node_zones: Mapping[str, str]) -> str | None:
    """The subset a pod counts in, None when it counts in none (ended, leaving, unplaced)."""
    meta = pod.get("metadata") or {}
    if meta.get("deletionTimestamp") or (pod.get("status") or {}).get("phase") in (
            "Succeeded", "Failed"):
        return None
    raw = (meta.get("annotations") or {}).get(MATCHED)
    if raw is not None:
        try:
            matched = json.loads(raw)
        except ValueError:
            matched = {}
        if isinstance(matched, dict) and matched.get("name") == spread:
            subset = matched.get("subset")
            return subset if isinstance(subset, str) else None
    node = (pod.get("spec") or {}).get("nodeName")
    return zone_subsets.get(node_zones.get(node, "")) if node else None


def subset_counts(pods: list[Mapping[str, Any]], spread: str, zone_subsets: Mapping[str, str],
                  node_zones: Mapping[str, str]) -> Counts:
    counted = collections.Counter(pod_subset(p, spread, zone_subsets, node_zones) for p in pods)
    return {name: n for name, n in counted.items() if name is not None}


class SubsetMonitor(threading.Thread):
    """Samples the pods of ``namespace`` labelled ``selector`` until :meth:`stop`."""

    def __init__(self, api: client.ApiClient, namespace: str, selector: str, *, spread: str,
                 limits: Mapping[str, int], zone_subsets: Mapping[str, str],
                 node_zones: Mapping[str, str], webhook_steers: Callable[[], bool],
                 interval: float = 0.2) -> None:
        super().__init__(name=f"monitor-{namespace}", daemon=True)
        self.core: Any = client.CoreV1Api(api)
        self.namespace = namespace
        self.selector = selector
        self.spread = spread
        self.limits = dict(limits)
        self.zone_subsets = dict(zone_subsets)
        self.node_zones = dict(node_zones)
        self.webhook_steers = webhook_steers
        self.interval = interval
        self.episodes: list[Episode] = []
        self.samples = 0
        self.failures = 0
        self.highest: Counts = {}
        self.started_at = time.monotonic()
        self._open: dict[str, Episode] = {}
        self._not_steering = 0.0
        self._halt = threading.Event()

    def sample(self) -> Counts:
        response = self.core.list_namespaced_pod(self.namespace, label_selector=self.selector,
                                                 _preload_content=False)
        pods = json.loads(response.data)["items"]
        return subset_counts(pods, self.spread, self.zone_subsets, self.node_zones)

    def observe(self, now: float, counts: Counts, steering: bool) -> None:
        """One sample: opens and closes episodes."""
        if not steering:
            self._not_steering = now
        for name, n in counts.items():
            self.highest[name] = max(n, self.highest.get(name, 0))
        for name, limit in self.limits.items():
            n = counts.get(name, 0)
            episode = self._open.get(name)
            if n > limit:
                if episode is None:
                    episode = self._open[name] = Episode(name, limit, now, n)
                    self.episodes.append(episode)
                episode.peak = max(episode.peak, n)
            elif episode is not None:
                episode.end = now
                episode.steered_again = self._not_steering
                del self._open[name]

    def run(self) -> None:
        while not self._halt.wait(self.interval):
            try:
                counts = self.sample()
            except Exception:  # the API busy for a moment: the next sample tries again
                self.failures += 1
                continue
            steering = self.webhook_steers()
            self.samples += 1
            self.observe(time.monotonic(), counts, steering)

    def stop(self) -> None:
        self._halt.set()
        self.join(30)
