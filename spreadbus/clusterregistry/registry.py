"""The cluster registry a UnitedDeployment's ``spec.topology.clusterRegistry`` queries.

Two Cluster kinds are served as registries: Karmada's ``cluster.karmada.io/v1alpha1`` Cluster
(cluster-scoped: a query's ``namespaces`` and a target's ``namespace`` do not apply) and the
Kubernetes cluster-registry API's ``clusterregistry.k8s.io/v1alpha1`` Cluster (namespaced). A
query names its kind (``clusterType``: ``apiVersion`` and ``kind``), the namespaces its
clusters live in (``default`` when none is given) and the labels they must all carry
(``selector``, a map of label to value, as the design of multi-cluster UnitedDeployment writes
it). A subset's ``targetCluster`` names one cluster the query finds; the cluster's name is the
member's name. A target without a namespace is looked up in the query's first namespace.

Objects of member clusters are told apart from the host's by the annotation
:data:`CLUSTER_ANNOTATION` naming their cluster; an object without it is the host's, which a
single-cluster installation calls :data:`LOCAL`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from kubesemantics.lenient_json import as_map, as_str

Obj = Mapping[str, Any]
_O = TypeVar("_O", bound=Obj)

CLUSTER_ANNOTATION: Final = "multicluster.spreadbus.io/cluster"
LOCAL: Final = "local"
DEFAULT_NAMESPACE: Final = "default"


@dataclass(frozen=True)
class ClusterKind:
    """A Cluster kind a registry may hold."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def group(self) -> str:
        return self.api_version.split("/", 1)[0]

    def describe(self) -> str:
        return f"{self.api_version}, Kind={self.kind}"


KARMADA_CLUSTER: Final = ClusterKind("cluster.karmada.io/v1alpha1", "Cluster", "clusters",
                                     namespaced=False)
REGISTRY_CLUSTER: Final = ClusterKind("clusterregistry.k8s.io/v1alpha1", "Cluster", "clusters",
                                      namespaced=True)
SERVED_KINDS: Final = (KARMADA_CLUSTER, REGISTRY_CLUSTER)


def served_kind(api_version: object, kind: object) -> ClusterKind | None:
    """The served Cluster kind of that apiVersion and kind, or None."""
    return next((k for k in SERVED_KINDS if k.api_version == api_version and k.kind == kind),
                None)


def kind_of(obj: Obj) -> ClusterKind | None:
    """The served Cluster kind ``obj`` is, or None when it is no registry's Cluster."""
    return served_kind(obj.get("apiVersion"), obj.get("kind"))


def cluster_of(obj: Obj) -> str:
    """The cluster an object of an offline input belongs to: its annotation, else the host."""
    annotations = as_map(as_map(obj.get("metadata")).get("annotations"))
    return as_str(annotations.get(CLUSTER_ANNOTATION)) or LOCAL


def host_objects(objects: Iterable[_O]) -> list[_O]:
    """The objects of an offline input that are the host's: what a feature that plans one
    cluster reads, so a member's pods never count among the host's."""
    return [o for o in objects if cluster_of(o) == LOCAL]


@dataclass(frozen=True)
class RegistryQuery:
    """A read ``clusterRegistry``: the kind, namespaces and labels it selects by."""

    kind: ClusterKind
    namespaces: tuple[str, ...]
    selector: Mapping[str, str]

    def matches(self, obj: Obj) -> bool:
        if kind_of(obj) != self.kind:
            return False
        meta = as_map(obj.get("metadata"))
        if self.kind.namespaced and (as_str(meta.get("namespace")) or DEFAULT_NAMESPACE) \
                not in self.namespaces:
            return False
        labels = as_map(meta.get("labels"))
        return all(labels.get(key) == value for key, value in self.selector.items())

    def clusters(self, objects: Iterable[Obj]) -> list[Obj]:
        """The clusters among ``objects`` the query finds."""
        return [o for o in objects if self.matches(o)]

    def target_namespace(self, target: Obj) -> str:
        return as_str(target.get("namespace")) or self.namespaces[0]

    def find(self, target: Obj, objects: Iterable[Obj]) -> Obj | None:
        """The cluster ``target`` (``namespace``, ``name``) names among those found."""
        name = as_str(target.get("name"))
        namespace = self.target_namespace(target)
        for cluster in self.clusters(objects):
            meta = as_map(cluster.get("metadata"))
            if as_str(meta.get("name")) != name:
                continue
            if self.kind.namespaced and (as_str(meta.get("namespace")) or DEFAULT_NAMESPACE) \
                    != namespace:
                continue
            return cluster
        return None


def read_query(registry: object) -> RegistryQuery | None:
    """The query a ``clusterRegistry`` value asks, or None when it is absent or its
    ``clusterType`` is not served (validation says why)."""
    spec = as_map(registry)
    if not spec:
        return None
    cluster_type = as_map(spec.get("clusterType"))
    kind = served_kind(cluster_type.get("apiVersion"), cluster_type.get("kind"))
    if kind is None:
        return None
    raw = spec.get("namespaces")
    namespaces = tuple(n for n in raw if isinstance(n, str) and n) if isinstance(raw, list) else ()
    selector = {str(k): v for k, v in as_map(spec.get("selector")).items() if isinstance(v, str)}
    return RegistryQuery(kind, namespaces or (DEFAULT_NAMESPACE,), selector)
