"""The webhook's own projection of the cluster, folded from the observation stream.

Admission must answer in milliseconds without asking the API server, so the webhook keeps, per
namespace, exactly what an admission decision reads:

- WorkloadSpreads, and the workloads a pod's owner chain walks through (ReplicaSet, Deployment,
  StatefulSet, Job, CloneSet), as the API served them;
- pods, and an index of the active pods that carry the ``apps.kruise.io/matched-workloadspread``
  annotation: ``(namespace, spread) -> subset -> {pod key: version}``. A subset's count is a
  dictionary length, so a decision costs O(subsets), never O(pods).

A pod's key is the ``uid`` of its annotation when the pod had no name at admission
(``generateName``), else its name: the same key the reservation ledger uses, so a pod that is
both reserved and observed is counted once (see :mod:`services.webhook.ledger`).

``seq`` is the last stream sequence folded in; the ledger records the ``seq`` its writer's view
had reached, and a reader behind it waits until it catches up.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from events import codec
from events.messages import Observation, SyncMarker

log = logging.getLogger(__name__)

MATCHED_ANNOTATION: Final = "apps.kruise.io/matched-workloadspread"
SPREAD_KEY: Final = ("apps.kruise.io", "workloadspreads")
POD_KEY: Final = ("", "pods")
WATCHED: Final = frozenset(
    {
        POD_KEY,
        SPREAD_KEY,
        ("apps", "replicasets"),
        ("apps", "deployments"),
        ("apps", "statefulsets"),
        ("batch", "jobs"),
        ("apps.kruise.io", "clonesets"),
        ("apps.kruise.io", "statefulsets"),
    }
)
"""(group, resource) pairs the view keeps; other observations are skipped cheaply."""

Objects = dict[tuple[str, str], dict[str, Any]]
"""(namespace, name) -> object, for one resource."""


@dataclass(frozen=True)
class Matched:
    """What a pod's matched-workloadspread annotation says."""

    spread: str
    subset: str
    uid: str = ""


def matched_of(pod: Mapping[str, Any]) -> Matched | None:
    """Parse the annotation as Go would: keys case-insensitively, junk ignored."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(MATCHED_ANNOTATION) if isinstance(annotations, dict) else None
    if not isinstance(raw, str):
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    folded = {str(k).lower(): v for k, v in data.items()}
    name, subset, uid = folded.get("name"), folded.get("subset"), folded.get("uid", "")
    if not isinstance(name, str) or not isinstance(subset, str) or not name:
        return None
    return Matched(name, subset, uid if isinstance(uid, str) else "")


def is_active(pod: Mapping[str, Any]) -> bool:
    """Kubernetes' IsPodActive: not finished and not being deleted."""
    phase = (pod.get("status") or {}).get("phase")
    deleting = (pod.get("metadata") or {}).get("deletionTimestamp")
    return phase not in ("Succeeded", "Failed") and not deleting


def pod_version(pod: Mapping[str, Any]) -> str:
    """The pod's template version, as WorkloadSpread groups rolling updates."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    for key in ("pod-template-hash", "controller-revision-hash"):
        value = labels.get(key) if isinstance(labels, dict) else None
        if isinstance(value, str) and value:
            return value
    return ""


def pod_key(pod: Mapping[str, Any], matched: Matched | None) -> str:
    if matched is not None and matched.uid:
        return matched.uid
    name = (pod.get("metadata") or {}).get("name")
    return name if isinstance(name, str) else ""


@dataclass
class View:
    """Objects by resource, the subset index, and how far the stream has been folded."""

    cluster: str
    objects: dict[tuple[str, str], Objects] = field(default_factory=dict)
    subsets: dict[tuple[str, str], dict[str, dict[str, str]]] = field(default_factory=dict)
    """(namespace, spread) -> subset -> pod key -> version."""
    _indexed: dict[tuple[str, str], tuple[str, str, str]] = field(default_factory=dict)
    """(namespace, pod name) -> (spread, subset, key) where the pod is counted."""
    seq: int = 0
    synced: set[tuple[str, str]] = field(default_factory=set)
    skipped: int = 0

    # -- folding ------------------------------------------------------------------------------

    def apply_message(self, seq: int, subject: str, data: bytes) -> None:
        """Follower sink: decode and fold; a message it cannot read is counted, never raised."""
        event = codec.decode(data)
        if isinstance(event, Observation):
            self.apply(event)
        elif isinstance(event, SyncMarker):
            key = (event.group, event.resource)
            if event.cluster == self.cluster and key in WATCHED:
                if event.complete:
                    self.synced.add(key)
                else:
                    self.synced.discard(key)
        else:
            self.skipped += 1
        self.seq = seq

    def apply(self, event: Observation) -> None:
        key = (event.group, event.resource)
        if event.cluster != self.cluster or key not in WATCHED:
            return
        metadata = event.object.get("metadata") or {}
        name, namespace = metadata.get("name"), metadata.get("namespace") or ""
        if not isinstance(name, str) or not isinstance(namespace, str):
            self.skipped += 1
            return
        store = self.objects.setdefault(key, {})
        if event.event == "DELETED":
            store.pop((namespace, name), None)
        else:
            store[(namespace, name)] = event.object
        if key == POD_KEY:
            self._index_pod(namespace, name, None if event.event == "DELETED" else event.object)

    def _index_pod(self, namespace: str, name: str, pod: dict[str, Any] | None) -> None:
        previous = self._indexed.pop((namespace, name), None)
        if previous is not None:
            spread, subset, key = previous
            by_subset = self.subsets.get((namespace, spread), {})
            by_subset.get(subset, {}).pop(key, None)
        if pod is None or not is_active(pod):
            return
        matched = matched_of(pod)
        if matched is None:
            return
        key = pod_key(pod, matched)
        by_subset = self.subsets.setdefault((namespace, matched.spread), {})
        by_subset.setdefault(matched.subset, {})[key] = pod_version(pod)
        self._indexed[(namespace, name)] = (matched.spread, matched.subset, key)

    # -- reading ------------------------------------------------------------------------------

    def get(self, group: str, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get((group, resource), {}).get((namespace, name))

    def spreads_in(self, namespace: str) -> list[dict[str, Any]]:
        """WorkloadSpreads of one namespace, in name order (the API server's list order)."""
        store = self.objects.get(SPREAD_KEY, {})
        return [store[k] for k in sorted(k for k in store if k[0] == namespace)]

    def subset_pods(self, namespace: str, spread: str) -> dict[str, dict[str, str]]:
        """subset -> {pod key: version} for the active pods of one spread."""
        return self.subsets.get((namespace, spread), {})

    def pod_counted(self, namespace: str, spread: str, key: str) -> bool:
        return any(key in pods for pods in self.subset_pods(namespace, spread).values())
