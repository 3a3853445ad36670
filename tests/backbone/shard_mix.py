"""A workload mix over many namespaces, as the watcher publishes it, for the planner shard tests.

Per namespace a Deployment, its ReplicaSet, running pods on zoned nodes and a WorkloadSpread with
two zone subsets; the nodes are cluster-scoped, and so is a WorkloadRebalancer naming Deployments
in several namespaces. Every resource the rules read is marked synced.
"""

from __future__ import annotations

from typing import Any, Final

from events import codec, subjects
from events.messages import Observation, ResourceRef, SyncMarker
from events.shards import Shards
from spreadbus.features.workloadrebalancer.planning.rule import WorkloadRebalancerRule
from spreadbus.features.workloadspread.planning.rule import WorkloadSpreadRule
from spreadbus.projection.planning import Rule
from tests.fixtures.observed_generation import ObservedGeneration

CLUSTER: Final = "c1"
ZONES: Final = ("zone-a", "zone-b")
NODES: Final = 4
PODS: Final = 3
NOW: Final = 1_800_000_000.0
STAMP: Final = "2027-01-15T08:00:00Z"


def rules(shards: Shards) -> list[Rule]:
    return [WorkloadSpreadRule(CLUSTER, min_interval_seconds=0.0),
            WorkloadRebalancerRule(CLUSTER, shards), ObservedGeneration(CLUSTER)]


def observation(group: str, version: str, resource: str, obj: dict[str, Any],
                event: str = "ADDED") -> tuple[str, bytes]:
    metadata = obj["metadata"]
    message = Observation(cluster=CLUSTER, group=group, version=version, resource=resource,
                          event=event, object=obj, ts=NOW)  # type: ignore[arg-type]
    subject = subjects.observation(CLUSTER, group, resource, metadata.get("namespace", ""),
                                   metadata["name"])
    return subject, codec.encode(message)


def synced(ref: ResourceRef) -> tuple[str, bytes]:
    marker = SyncMarker(cluster=CLUSTER, group=ref.group, version=ref.version,
                        resource=ref.resource, complete=True)
    return subjects.sync(CLUSTER, ref.group, ref.resource), codec.encode(marker)


def meta(name: str, namespace: str, rv: int, **more: Any) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}",
            "resourceVersion": str(rv), "creationTimestamp": STAMP, **more}


def deployment(namespace: str, rv: int, generation: int = 1) -> tuple[str, bytes]:
    obj = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": meta("web", namespace, rv, generation=generation, annotations={}),
           "spec": {"replicas": PODS, "selector": {"matchLabels": {"app": "web"}}}}
    return observation("apps", "v1", "deployments", obj)


def namespace_objects(namespace: str, rv: int) -> list[tuple[str, bytes]]:
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
             "uid": f"uid-{namespace}-web", "controller": True}
    replicaset = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                  "metadata": meta("web-5f7c", namespace, rv + 1, ownerReferences=[owner],
                                   labels={"app": "web", "pod-template-hash": "5f7c"}),
                  "spec": {"replicas": PODS}}
    rs_owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5f7c",
                "uid": f"uid-{namespace}-web-5f7c", "controller": True}
    out = [deployment(namespace, rv), observation("apps", "v1", "replicasets", replicaset)]
    for i in range(PODS):
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": meta(f"web-5f7c-{i}", namespace, rv + 2 + i, ownerReferences=[rs_owner],
                                labels={"app": "web", "pod-template-hash": "5f7c"}),
               "spec": {"nodeName": f"node-{i % NODES}", "containers": [{"name": "c"}]},
               "status": {"phase": "Running",
                          "conditions": [{"type": "Ready", "status": "True"}]}}
        out.append(observation("", "v1", "pods", pod))
    spread = {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
              "metadata": meta("ws", namespace, rv + 2 + PODS, generation=1),
              "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                     "name": "web"},
                       "subsets": [zone_subset(ZONES[0], 2), zone_subset(ZONES[1])]}}
    out.append(observation("apps.kruise.io", "v1alpha1", "workloadspreads", spread))
    return out


def zone_subset(zone: str, max_replicas: int | None = None) -> dict[str, Any]:
    subset: dict[str, Any] = {"name": zone, "requiredNodeSelectorTerm": {"matchExpressions": [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}}
    if max_replicas is not None:
        subset["maxReplicas"] = max_replicas
    return subset


def cluster_objects(rebalanced: list[str], rv: int) -> list[tuple[str, bytes]]:
    out = []
    for i in range(NODES):
        node = {"apiVersion": "v1", "kind": "Node",
                "metadata": meta(f"node-{i}", "", rv + i,
                                 labels={"topology.kubernetes.io/zone": ZONES[i % 2]})}
        out.append(observation("", "v1", "nodes", node))
    rebalancer = {"apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
                  "metadata": meta("rb", "", rv + NODES, generation=1),
                  "spec": {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                          "name": "web", "namespace": ns}
                                         for ns in rebalanced]}}
    out.append(observation("apps.karmada.io", "v1alpha1", "workloadrebalancers", rebalancer))
    return out


def mix(namespaces: list[str], rebalanced: list[str]) -> list[tuple[str, bytes]]:
    """Every object, then a sync marker for every resource the rules read."""
    out = cluster_objects(rebalanced, 1)
    for k, namespace in enumerate(namespaces):
        out += namespace_objects(namespace, 100 * (k + 1))
    read = {(r.group, r.resource): r for rule in rules(Shards()) for r in rule.resources}
    out += [synced(ref) for ref in read.values()]
    return out
