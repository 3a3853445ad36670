"""The UnitedDeployment part of ``spreadbus validate`` and ``spreadbus plan``.

``validate``: a UnitedDeployment is defaulted as Kruise's mutating webhook would on a CREATE (an
UPDATE from ``old``), and the defaulted object is validated as the validating webhook would see
it. Of the other objects of the input only the cluster registry's Cluster objects are read: a
subset's ``targetCluster`` must be among those its ``clusterRegistry`` finds.

``plan``: one reconcile of every UD in the input.

Objects of a member cluster carry the annotation ``multicluster.spreadbus.io/cluster: <name>``;
an object without it is the host's. A UnitedDeployment is reconciled against the objects of its
own cluster and, for a subset with a ``targetCluster``, those of that cluster (its workload
there names the UD by labels and an annotation instead of an owner reference); the Cluster
objects of the input are its registry, whose unavailable clusters make their subsets
unschedulable.

The input is planned as stored, as the controller sees it: no admission defaults, no
re-validation. Every UnitedDeployment (``apps.kruise.io``) is reconciled against the workloads,
ReplicaSets, disruption budgets, pods and ControllerRevisions of its namespace
(:func:`.core.reconcile.reconcile`),
and answered under ``unitedDeployments["<ns>/<name>"]``:

- ``subsets``: one entry per spec subset, ``{replicas, partition, action, workload, cluster}``,
  ``cluster`` the name of its ``targetCluster`` (``local`` when it has none);
- ``deletes``: the subset workloads to delete, as ``"<ns>/<name>"``;
- ``status``: the status the round writes (the input status when ``error`` is set);
- ``error``: why the allocation failed, or null;
- ``requeueAt``: the earliest timed wake-up (RFC 3339), absent when none.

Pods whose labels the planner sets (reserved-pod labels) appear under
``pods["<ns>/<pod>"].labels``. UDs are answered in key order, so the same input always gives the
same answer, byte for byte. An input without UnitedDeployments adds no key at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from kubesemantics.group_version import api_group
from kubesemantics.lenient_json import as_map, as_str
from spreadbus.clusterregistry.registry import LOCAL, cluster_of, kind_of
from spreadbus.engine.feature import OfflinePlan, OfflineValidation
from spreadbus.features.uniteddeployment.core.conditions import format_time
from spreadbus.features.uniteddeployment.core.defaulting import default_uniteddeployment
from spreadbus.features.uniteddeployment.core.model import GROUP, KIND
from spreadbus.features.uniteddeployment.core.reconcile import Reconciliation, reconcile
from spreadbus.features.uniteddeployment.core.subset_workloads import name_of, namespace_of
from spreadbus.features.uniteddeployment.core.target_clusters import target_cluster
from spreadbus.features.uniteddeployment.core.validation import validate_uniteddeployment

JSON = dict[str, Any]

_WORKLOAD_KINDS = {
    "StatefulSet",
    "CloneSet",
    "Deployment",
    "ReplicaSet",
    "PodDisruptionBudget",
    "PodUnavailableBudget",
}


def is_uniteddeployment(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == KIND and api_group(as_str(obj.get("apiVersion"))) == GROUP


def _key(obj: Mapping[str, Any]) -> str:
    return f"{namespace_of(obj)}/{name_of(obj)}"


def subset_clusters(ud: Mapping[str, Any]) -> dict[str, str]:
    """Each spec subset's cluster: its target cluster's name, else :data:`LOCAL`."""
    subsets = as_map(as_map(ud.get("spec")).get("topology")).get("subsets")
    return {as_str(s.get("name")): target_cluster(s)
            for s in (subsets if isinstance(subsets, list) else ()) if isinstance(s, Mapping)}


def plan_entry(result: Reconciliation, clusters: Mapping[str, str] | None = None) -> JSON:
    """The JSON answer for one UD's reconcile; ``clusters`` names each subset's cluster."""
    entry: JSON = {
        "subsets": {
            name: {
                "replicas": decision.replicas,
                "partition": decision.partition,
                "action": decision.action,
                "workload": decision.workload,
                "cluster": (clusters or {}).get(name, LOCAL),
            }
            for name, decision in result.subsets.items()
        },
        "deletes": [_key(w) for w in result.deletes],
        "status": result.status,
        "error": result.error,
    }
    if result.requeue_at is not None:
        entry["requeueAt"] = format_time(result.requeue_at)
    return entry


def offline_plan(objects: Sequence[JSON], now: datetime) -> OfflinePlan:
    uds = sorted((o for o in objects if is_uniteddeployment(o)), key=_key)
    if not uds:
        # An input without UnitedDeployments answers as before they existed.
        return OfflinePlan(answer={})
    answer: JSON = {"unitedDeployments": {}, "pods": {}}
    registry = [o for o in objects if kind_of(o) is not None]
    lines: list[str] = []
    for ud in uds:
        namespace, home = namespace_of(ud), cluster_of(ud)
        clusters = subset_clusters(ud)
        where = {home, *(c for c in clusters.values() if c != LOCAL)}

        def here(kinds: set[str], namespace: str = namespace,
                 where: set[str] = where) -> list[JSON]:
            return [
                o
                for o in objects
                if as_str(o.get("kind")) in kinds and namespace_of(o) == namespace
                and cluster_of(o) in where
            ]

        result = reconcile(
            ud,
            workloads=here(_WORKLOAD_KINDS),
            pods=here({"Pod"}),
            revisions=[r for r in here({"ControllerRevision"}) if cluster_of(r) == home],
            now=now,
            home=home,
            clusters=registry,
        )
        key = _key(ud)
        answer["unitedDeployments"][key] = plan_entry(result, clusters)
        for pod, labels in sorted(result.pod_labels.items()):
            answer["pods"].setdefault(pod, {}).setdefault("labels", {}).update(labels)
        lines.append(f"UnitedDeployment {key}" + (f": {result.error}" if result.error else ""))
        for name, decision in result.subsets.items():
            cluster = clusters.get(name, LOCAL)
            lines.append(
                f"  {name}: replicas={decision.replicas} partition={decision.partition} "
                f"{decision.action}" + ("" if cluster == LOCAL else f" cluster={cluster}")
            )
        lines.extend(f"  delete {_key(w)}" for w in result.deletes)
    for pod, value in answer["pods"].items():
        lines.append(f"pod {pod}: labels {value['labels']}")
    return OfflinePlan(answer=answer, lines=lines)


__all__ = ["offline_plan"]


def validate_offline(obj: dict[str, Any], *, old: dict[str, Any] | None,
                     context: Sequence[dict[str, Any]],
                     control_plane: bool = False) -> OfflineValidation:
    defaulted = default_uniteddeployment(obj, old=old)
    errors = validate_uniteddeployment(defaulted, old=old,
                                       clusters=[o for o in context if kind_of(o) is not None],
                                       control_plane=control_plane)
    return OfflineValidation(errors=errors, defaulted=defaulted)


def validate_offline_in_control_plane(obj: dict[str, Any], *, old: dict[str, Any] | None,
                                      context: Sequence[dict[str, Any]]) -> OfflineValidation:
    """As the webhook of a control-plane host answers (``--uniteddeployment-control-plane``):
    every subset must name its target cluster."""
    return validate_offline(obj, old=old, context=context, control_plane=True)
