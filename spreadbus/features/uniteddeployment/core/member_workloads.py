"""A subset workload in another cluster than its UnitedDeployment's, and how it is told apart.

An owner reference cannot name an object of another cluster, so a subset workload in a member
carries none to its UnitedDeployment. It names the UD instead by two labels (the UD's uid and
cluster, so a member's workloads of one UD can be selected) and by the annotation
:data:`IDENTITY_ANNOTATION`, which holds the UD's cluster, namespace, name and uid as JSON. A
reconcile takes such a workload as the UD's when the annotation names the UD and the uid label
agrees with it.

Which cluster an observed object is in is said the way ``spreadbus plan`` reads its input: the
annotation :data:`~spreadbus.clusterregistry.registry.CLUSTER_ANNOTATION` naming a member, none
for the UD's own cluster (:data:`~spreadbus.clusterregistry.registry.LOCAL`). The planner marks
its copies of a member's objects the same way (:func:`observed_in`), so one reconcile serves both.
Rendering never writes that mark onto a workload.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubesemantics.lenient_json import as_map, as_str
from spreadbus.clusterregistry.registry import CLUSTER_ANNOTATION, LOCAL, cluster_of

JSON = dict[str, Any]

UID_LABEL: Final = "multicluster.spreadbus.io/united-deployment-uid"
CLUSTER_LABEL: Final = "multicluster.spreadbus.io/united-deployment-cluster"
IDENTITY_ANNOTATION: Final = "multicluster.spreadbus.io/united-deployment"


@dataclass(frozen=True)
class Identity:
    """The UnitedDeployment a member's subset workload belongs to."""

    cluster: str
    namespace: str
    name: str
    uid: str

    def annotation(self) -> str:
        return json.dumps({"cluster": self.cluster, "namespace": self.namespace,
                           "name": self.name, "uid": self.uid},
                          sort_keys=True, separators=(",", ":"))

    def labels(self) -> dict[str, str]:
        return {UID_LABEL: self.uid, CLUSTER_LABEL: self.cluster}


def identity_of(obj: Mapping[str, Any]) -> Identity | None:
    """The UD a workload names, or None when it names none or its labels disagree."""
    meta = as_map(obj.get("metadata"))
    raw = as_map(meta.get("annotations")).get(IDENTITY_ANNOTATION)
    if not isinstance(raw, str):
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(value, Mapping):
        return None
    found = Identity(as_str(value.get("cluster")), as_str(value.get("namespace")),
                     as_str(value.get("name")), as_str(value.get("uid")))
    if not (found.cluster and found.namespace and found.name and found.uid):
        return None
    labels = as_map(meta.get("labels"))
    if labels.get(UID_LABEL) != found.uid or labels.get(CLUSTER_LABEL) != found.cluster:
        return None
    return found


def observed_cluster(obj: Mapping[str, Any], home: str = LOCAL) -> str:
    """The cluster an observed object is marked as in, :data:`LOCAL` for the UD's own
    (``home``: its name, which an offline input may mark the UD's own objects with)."""
    cluster = cluster_of(obj)
    return LOCAL if cluster == home else cluster


def in_member(obj: Mapping[str, Any], home: str = LOCAL) -> bool:
    """Whether an observed object is marked as another cluster's than the UD's."""
    return observed_cluster(obj, home) != LOCAL


def subset_cluster(target: str | None, home: str) -> str:
    """Where a subset's workload lives, as observed objects are marked: :data:`LOCAL` for the
    UD's own cluster (no target, or a target naming it), else the target's name."""
    return LOCAL if not target or target == home else target


def observed_in(obj: Mapping[str, Any], cluster: str) -> JSON:
    """A copy of ``obj`` marked as observed in ``cluster`` (a shallow copy: ``obj`` is shared)."""
    meta = dict(as_map(obj.get("metadata")))
    meta["annotations"] = {**as_map(meta.get("annotations")), CLUSTER_ANNOTATION: cluster}
    return {**obj, "metadata": meta}


def unmarked(annotations: Mapping[str, Any]) -> dict[str, Any]:
    """Annotations without the observed-in mark, which is never written to an object."""
    return {k: v for k, v in annotations.items() if k != CLUSTER_ANNOTATION}
