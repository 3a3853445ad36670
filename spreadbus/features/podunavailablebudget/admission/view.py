"""The webhook's own fold of what a budget decision reads: PUBs, pods and their owners.

An eviction's review carries the Eviction, not the pod, and Kruise then reads the pod from its
informer; here the pod comes from this fold of the observation stream. Budgets are read the same
way: the webhook trusts the status the planner last wrote, as Kruise's trusts its informer's.
Pod CREATE needs the pod's workload for a targetRef budget (a ReplicaSet resolves to its
Deployment), so ReplicaSets are kept too; and the workloads a member's copy may be and the
host's ResourceBindings, which tell a pod of a copy of a host's template
(:mod:`..core.member_spend`).

Only these resources are kept (other observations are skipped before decoding). PUBs and
ReplicaSets stay the raw JSON the watcher published and are decoded when a decision asks for
them; a pod is kept as what an eviction reads of it (:func:`.kept_pod.kept_encoded`): every
replica holds every pod, so its whole JSON would be the bulk of the replica's memory. The pods
are the feature's part of the replica's one pod view, which folds them, or of a view of its own
when none is given (a view used alone).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from events.subjects import escape
from spreadbus.features.podunavailablebudget.admission.kept_pod import kept_encoded
from spreadbus.features.podunavailablebudget.core.member_spend import COPY_RESOURCES
from spreadbus.projection.kube_state import KubeProjection, decode_object, object_key
from spreadbus.projection.pod_view import PodPart, PodView
from spreadbus.projection.tracking import Tracked

PUB_GROUP: Final = "policy.kruise.io"
PUB_RESOURCE: Final = "podunavailablebudgets"
PODS: Final = escape("pods")
BINDINGS: Final = ("work.karmada.io", "resourcebindings")
CLUSTERS: Final = ("cluster.karmada.io", "clusters")
COPY_GROUPS: Final = {resource: group for (group, _), resource in COPY_RESOURCES.items()}
KEPT: Final = frozenset({PODS, escape(PUB_RESOURCE), escape("replicasets"), escape(BINDINGS[1]),
                         escape(CLUSTERS[1]), *(escape(r) for r in COPY_GROUPS)})


class _Metadata(msgspec.Struct):
    metadata: dict[str, Any] = {}


_METADATA: Final = msgspec.json.Decoder(_Metadata)


class BudgetView:
    """Pods, PUBs and ReplicaSets of one cluster as last observed."""

    def __init__(self, cluster: str, pods: PodPart[bytes] | None = None) -> None:
        self.cluster = cluster
        self.projection = KubeProjection()
        self.own_pods: PodView | None = None
        """The view's own pod view when it was given none: it then folds the pods itself."""
        if pods is None:
            self.own_pods = PodView(cluster, (kept_encoded,))
            pods = self.own_pods.part(0)
        self.pods: Mapping[tuple[str, str], bytes] = pods
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
            if self.own_pods is not None:
                self.own_pods.fold(seq, subject, data)
            return
        self.projection.fold(seq, subject, data)
        self.projection.changed.clear()

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

    def binding(self, namespace: str, name: str) -> dict[str, Any] | None:
        """A ResourceBinding of this cluster (the host's, which places its templates)."""
        return self.projection.get(self.cluster, *BINDINGS, namespace, name)

    def registers(self, member: str) -> bool:
        """Whether this cluster holds the member's Cluster object: it is the member's host."""
        return bool(self.projection.objects(self.cluster, *CLUSTERS).get(object_key("", member)))

    def workload(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The metadata of a workload of a kind a member's copy may be (whose marks name its
        binding), as ``{"metadata": ...}``: asked on every pod deletion, so its spec is not
        decoded."""
        group = COPY_GROUPS.get(resource)
        if group is None:
            return None
        stored = self.projection.objects(self.cluster, group, resource).get(
            object_key(namespace, name))
        if stored is None:
            return None
        return {"metadata": _METADATA.decode(stored.raw).metadata}

    def budget(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.projection.get(self.cluster, PUB_GROUP, PUB_RESOURCE, namespace, name)

    def budgets_in(self, namespace: str) -> list[dict[str, Any]]:
        """The namespace's PUBs in name order (Kruise lists them from its cache)."""
        prefix = escape(namespace) + "."
        found = self.projection.objects(self.cluster, PUB_GROUP, PUB_RESOURCE)
        return [decode_object(found[key]) for key in sorted(found) if key.startswith(prefix)]
