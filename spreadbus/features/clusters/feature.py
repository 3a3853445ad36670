"""The cluster registry as a feature: each member cluster's Cluster object in the host kept as
Karmada keeps it.

- Watcher: the host's Cluster objects (``cluster.karmada.io/v1alpha1/clusters``); every watcher
  also puts its cluster's heartbeat in the bucket (:mod:`spreadbus.clusterregistry.heartbeat`).
- Planner: :class:`~.planning.rule.ClusterStatusRule` writes each Cluster's status (Ready,
  version, node and resource summaries) and its NoSchedule taints.
- Actuator: may write only those two, on the Cluster the plan is about.
"""

from __future__ import annotations

from typing import Final

from spreadbus.clusterregistry.heartbeat import BUCKET, STREAM
from spreadbus.clusterregistry.registry import KARMADA_CLUSTER
from spreadbus.engine.bus_access import BucketSpec, BusAccess
from spreadbus.engine.feature import Feature
from spreadbus.engine.plan_grants import Governor, PlanGrant
from spreadbus.features.clusters.planner import planner_side
from spreadbus.features.clusters.planning.rule import ClusterStatusRule
from spreadbus.features.clusters.settings import ClusterSettings

_GOVERNOR: Final = Governor(group=KARMADA_CLUSTER.group, kind=KARMADA_CLUSTER.kind,
                            resource=KARMADA_CLUSTER.plural, namespaced=False)

FEATURE: Final = Feature(
    name="clusters",
    settings=ClusterSettings,
    watches=(f"{KARMADA_CLUSTER.api_version}/{KARMADA_CLUSTER.plural}",),
    plan_grants=(
        PlanGrant(rule=ClusterStatusRule.name, verb="patch_status", group=_GOVERNOR.group,
                  resource=_GOVERNOR.resource, writes=(("status",),), governor=_GOVERNOR),
        PlanGrant(rule=ClusterStatusRule.name, verb="patch", group=_GOVERNOR.group,
                  resource=_GOVERNOR.resource, writes=(("spec", "taints"),), governor=_GOVERNOR),
    ),
    bus={
        "watcher": BusAccess(buckets=(BUCKET,)),
        "planner": BusAccess(reads=(STREAM,)),
    },
    buckets=(BucketSpec(name=BUCKET, description="the latest heartbeat of each cluster's agent"),),
    planner=planner_side,
    kinds={KARMADA_CLUSTER.plural: KARMADA_CLUSTER.kind},
)
