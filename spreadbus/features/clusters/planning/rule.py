"""The rule keeping each member's Cluster object in the host as Karmada's cluster-status and
cluster controllers keep it: its status from the member's heartbeats and observed nodes and
pods, its NoSchedule taints from its Ready condition (:mod:`..core.status`).

The Cluster objects are the planner's own cluster's (the host's); the heartbeats come from the
bucket's stream (keys of :data:`HEARTBEATS_RESOURCE` in ``changed``, one per member); a Cluster is
looked at again when its member's heartbeat would go stale, without any new event. The status is
written at the pace of the heartbeats, not on every pod change of the member, as the merge
patch from the status the host holds to the one wanted, so that what the member no longer
reports (an empty ``allocating``) goes too. A heartbeat moving Ready between True and not True
counts once the move has held for its threshold (``--cluster-success-threshold-seconds``,
``--cluster-failure-threshold-seconds``), as karmada-agent's condition cache has it.
"""

from __future__ import annotations

from collections.abc import Set
from datetime import timedelta
from typing import Any, Final

from events.messages import ObjectRef, ResourceRef
from kubesemantics import merge_patch
from kubesemantics.lenient_json import as_map, as_str
from spreadbus.clusterregistry.cluster_health import (
    FAILURE_THRESHOLD,
    MONITOR_GRACE_PERIOD,
    STARTUP_GRACE_PERIOD,
    SUCCESS_THRESHOLD,
    FlapGuard,
)
from spreadbus.clusterregistry.heartbeat import Heartbeat, decode, member_of
from spreadbus.clusterregistry.registry import KARMADA_CLUSTER
from spreadbus.clusterregistry.resource_summary import PodRequest, pod_request
from spreadbus.features.clusters.core.status import MemberInputs, cluster_state, next_look
from spreadbus.projection.kube_state import (
    KubeProjection,
    decode_object,
    object_key,
    resource_key,
    side_resource_key,
)
from spreadbus.projection.planning import Desired
from spreadbus.projection.wake_schedule import WakeSchedule

HEARTBEATS_RESOURCE: Final = "$clusterheartbeats"
"""``changed`` carries ``(side_resource_key(<member>, HEARTBEATS_RESOURCE), <member>)`` when a
member's heartbeat changes."""
CLUSTERS: Final = ResourceRef(group=KARMADA_CLUSTER.group, version="v1alpha1",
                              resource=KARMADA_CLUSTER.plural)
NODES: Final = ("", "nodes")
PODS: Final = ("", "pods")


class Heartbeats:
    """The latest heartbeat of every member, folded from the bucket's stream."""

    def __init__(self) -> None:
        self.latest: dict[str, Heartbeat] = {}

    def apply(self, seq: int, subject: str, data: bytes) -> tuple[str, str] | None:
        """The member whose heartbeat changed, as the cluster and key of the change."""
        member = member_of(subject)
        if member is None:
            return None
        beat = decode(data)
        if beat is None:
            self.latest.pop(member, None)
        else:
            self.latest[member] = beat
        return member, member


class ClusterStatusRule:
    name = "cluster-status"

    def __init__(self, home: str, heartbeats: Heartbeats, *,
                 grace_period: timedelta = MONITOR_GRACE_PERIOD,
                 startup_grace_period: timedelta = STARTUP_GRACE_PERIOD,
                 success_threshold: timedelta = SUCCESS_THRESHOLD,
                 failure_threshold: timedelta = FAILURE_THRESHOLD) -> None:
        self.home = home
        self.heartbeats = heartbeats
        self.grace_period = grace_period
        self.startup_grace_period = startup_grace_period
        self.success_threshold = success_threshold
        self.failure_threshold = failure_threshold
        self._guards: dict[str, FlapGuard] = {}
        """Member -> the Ready status its heartbeats last reported, and since when: Karmada's
        condition cache, in memory as there (a new planner starts as a member just joined)."""
        self.resources: tuple[ResourceRef, ...] = (CLUSTERS,)
        self.rk_clusters = resource_key(home, CLUSTERS.group, CLUSTERS.resource)
        self._wakes = WakeSchedule()
        """Cluster object key -> when its member's heartbeat goes stale."""
        self._requests: dict[str, dict[str, tuple[int, PodRequest]]] = {}
        """Member -> pod key -> (the observation's stream position, its request)."""

    def due(self, now: float) -> set[tuple[str, str]]:
        return {(self.rk_clusters, okey) for okey in self._wakes.due(now)}

    def next_wake(self) -> float | None:
        return self._wakes.next_wake()

    def desired(self, view: KubeProjection, changed: Set[tuple[str, str]],
                now: float) -> list[Desired]:
        okeys: set[str] = set()
        for rkey, okey in changed:
            if rkey == self.rk_clusters:
                okeys.add(okey)
            elif rkey == side_resource_key(okey, HEARTBEATS_RESOURCE):
                okeys.add(object_key("", okey))
        out: list[Desired] = []
        for okey in sorted(okeys):
            cluster = view.decoded(self.rk_clusters, okey)
            if cluster is not None:
                out.extend(self._cluster(view, cluster, okey, now))
            else:  # unregistered: one that registers again starts as a member just joined
                for member in [m for m in self._guards if object_key("", m) == okey]:
                    del self._guards[member]
                    self._requests.pop(member, None)
        return out

    def _cluster(self, view: KubeProjection, cluster: dict[str, Any], okey: str,
                 now: float) -> list[Desired]:
        meta = as_map(cluster.get("metadata"))
        name = as_str(meta.get("name"))
        beat = self.heartbeats.latest.get(name)
        inputs = MemberInputs(beat, self._listed(view, name, NODES), self._pod_requests(view, name),
                              guard=self._guards.get(name))
        state = cluster_state(cluster, inputs, now, grace_period=self.grace_period,
                              startup_grace_period=self.startup_grace_period,
                              success_threshold=self.success_threshold,
                              failure_threshold=self.failure_threshold)
        if state.guard is not None:
            self._guards[name] = state.guard
        look = next_look(cluster, beat, grace_period=self.grace_period,
                         startup_grace_period=self.startup_grace_period)
        if look is not None and look > now:
            self._wakes.set(okey, look)
        target = ObjectRef(group=CLUSTERS.group,
                           version=as_str(cluster.get("apiVersion")).split("/")[-1]
                           or CLUSTERS.version,
                           resource=CLUSTERS.resource, name=name, uid=as_str(meta.get("uid")))
        generation = meta.get("generation")
        gen = generation if isinstance(generation, int) else 0
        out: list[Desired] = []
        # The difference, not the whole status: a JSON merge patch of the whole would leave a
        # part that emptied (``allocating`` once every pod is bound) as it was, for good.
        status_patch = merge_patch.diff(as_map(cluster.get("status")), state.status)
        if status_patch:
            out.append(Desired(verb="patch_status", target=target, governor=target,
                               governor_generation=gen, patch={"status": status_patch},
                               serial=True, reason=f"status of member cluster {name}"))
        spec = as_map(cluster.get("spec"))
        if state.taints != (spec.get("taints") or []):
            out.append(Desired(verb="patch", target=target, governor=target,
                               governor_generation=gen, patch={"spec": {"taints": state.taints}},
                               serial=True, reason=f"taints of member cluster {name}"))
        return out

    @staticmethod
    def _listed(view: KubeProjection, member: str, ref: tuple[str, str]) -> list[Any] | None:
        if not view.synced(member, *ref):
            return None
        rkey = resource_key(member, *ref)
        return [view.decoded(rkey, okey) for okey in view.objects(member, *ref)]

    def _pod_requests(self, view: KubeProjection, member: str) -> list[PodRequest] | None:
        """The member's pods' requests, in the projection's order; a pod is decoded and its
        quantities parsed once per observation, not on every heartbeat."""
        if not view.synced(member, *PODS):
            return None
        known = self._requests.get(member, {})
        fresh: dict[str, tuple[int, PodRequest]] = {}
        for okey, stored in view.objects(member, *PODS).items():
            kept = known.get(okey)
            if kept is None or kept[0] != stored.seq:
                kept = (stored.seq, pod_request(decode_object(stored)))
            fresh[okey] = kept
        self._requests[member] = fresh
        return [request for _, request in fresh.values()]
