"""The webhook's own fold of what a budget decision reads: PUBs, pods and their owners.

An eviction's review carries the Eviction, not the pod, and Kruise then reads the pod from its
informer; here the pod comes from this fold of the observation stream. Budgets are read the same
way: the webhook trusts the status the planner last wrote, as Kruise's trusts its informer's.
Pod CREATE needs the pod's workload for a targetRef budget (a ReplicaSet resolves to its
Deployment), so ReplicaSets are kept too.

Only these resources are kept (other observations are skipped before decoding). PUBs and
ReplicaSets stay the raw JSON the watcher published and are decoded when a decision asks for
them; a pod is kept as what an eviction reads of it (:func:`.kept_pod.kept`), encoded: every
replica holds every pod, so its whole JSON would be the bulk of the replica's memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from events import codec
from events.messages import Observation
from events.subjects import escape
from spreadbus.features.podunavailablebudget.admission.kept_pod import kept
from spreadbus.projection.kube_state import KubeProjection, decode_object
from spreadbus.projection.pod_view import PodView, pod_identity
from spreadbus.projection.tracking import Tracked

PUB_GROUP: Final = "policy.kruise.io"
PUB_RESOURCE: Final = "podunavailablebudgets"
PODS: Final = escape("pods")
KEPT: Final = frozenset({PODS, escape(PUB_RESOURCE), escape("replicasets")})


def _encoded(pod: Mapping[str, Any], name: str, namespace: str) -> bytes:
    """What the view keeps of a pod: :func:`.kept_pod.kept`, encoded."""
    return msgspec.json.encode(kept(pod))


class BudgetView:
    """Pods, PUBs and ReplicaSets of one cluster as last observed."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self.projection = KubeProjection()
        self.pod_view = PodView(cluster, _encoded)
        self.pods: dict[tuple[str, str], bytes] = self.pod_view.kept
        """(namespace, name) -> the pod as kept, encoded."""
        self.apply_message = Tracked(self._fold, self.projection.state).apply
        """Follower sink: every message moves the projection's position, kept or not."""

    @property
    def seq(self) -> int:
        return self.projection.last_seq

    def _fold(self, seq: int, subject: str, data: bytes) -> None:
        tokens = subject.split(".", 6)
        if len(tokens) >= 5 and tokens[4] not in KEPT:
            return
        if len(tokens) == 7 and tokens[4] == PODS:
            self._fold_pod(data)
            return
        self.projection.fold(seq, subject, data)
        self.projection.changed.clear()

    def _fold_pod(self, data: bytes) -> None:
        event = codec.decode(data)
        if not isinstance(event, Observation):
            return
        at = pod_identity(event, self.cluster)
        if at is not None:
            self.pod_view.observe(at, None if event.event == "DELETED" else event.object)

    def synced(self) -> bool:
        return all(self.projection.synced(self.cluster, group, resource)
                   for group, resource in (("", "pods"), (PUB_GROUP, PUB_RESOURCE)))

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The pod as kept: what an eviction's decision reads of it."""
        found = self.pods.get((namespace, name))
        if found is None:
            return None
        pod: dict[str, Any] = msgspec.json.decode(found)
        return pod

    def replicaset(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.projection.get(self.cluster, "apps", "replicasets", namespace, name)

    def budget(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.projection.get(self.cluster, PUB_GROUP, PUB_RESOURCE, namespace, name)

    def budgets_in(self, namespace: str) -> list[dict[str, Any]]:
        """The namespace's PUBs in name order (Kruise lists them from its cache)."""
        prefix = escape(namespace) + "."
        found = self.projection.objects(self.cluster, PUB_GROUP, PUB_RESOURCE)
        return [decode_object(found[key]) for key in sorted(found) if key.startswith(prefix)]
