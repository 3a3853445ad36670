"""The resource templates the planner propagates live, and the resources it reads for them.

Offline, ``spreadbus plan`` takes a template of any kind; live, the watcher must list the kind in
the host and in every member, so the kinds are a table: Deployments, StatefulSets, CloneSets and
UnitedDeployments (divided or duplicated; a member's UnitedDeployment spreads its share over
its own subsets), ConfigMaps (duplicated: they have no replicas; watched only with
``--propagate-configmaps``, so a cluster that propagates nothing does not put every ConfigMap on
the bus) and ClusterRoles (cluster-scoped, through a ClusterResourceBinding; watched only with
``--propagate-clusterroles``, and written in a member only where its actuator is granted them:
see docs/security.md).
"""

from __future__ import annotations

from typing import Final

import msgspec

from events.messages import ResourceRef
from kubesemantics.karmada_binding import POLICY_GROUP, WORK_GROUP
from spreadbus.features.propagation.core.cluster import GROUP as CLUSTER_GROUP


class TemplateKind(msgspec.Struct, frozen=True):
    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool = True
    workload: bool = True
    """Divided or duplicated by replicas; a non-workload (a ConfigMap, a ClusterRole) goes whole
    to each cluster, and is watched only where its propagation is turned on
    (``--propagate-configmaps``, ``--propagate-clusterroles``)."""
    awaited: bool = True
    """The planner decides nothing before the kind is listed; OpenKruise's kinds are read once
    listed instead: a host or member without their CRDs lists none, and propagates the rest."""

    @property
    def ref(self) -> ResourceRef:
        return ResourceRef(group=self.group, version=self.version, resource=self.resource)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def watch(self) -> str:
        return f"{self.api_version}/{self.resource}"


TEMPLATES: Final = (
    TemplateKind("apps", "v1", "deployments", "Deployment"),
    TemplateKind("apps", "v1", "statefulsets", "StatefulSet"),
    TemplateKind("apps.kruise.io", "v1alpha1", "clonesets", "CloneSet", awaited=False),
    TemplateKind("apps.kruise.io", "v1alpha1", "uniteddeployments", "UnitedDeployment",
                 awaited=False),
    TemplateKind("", "v1", "configmaps", "ConfigMap", workload=False),
    TemplateKind("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole",
                 namespaced=False, workload=False),
)
BY_KIND: Final = {(t.group, t.kind): t for t in TEMPLATES}
GRANTED_APART: Final = frozenset((t.group, t.resource) for t in TEMPLATES if not t.namespaced)
"""(API group, resource) of the templates whose RBAC the base installation does not grant:
writing a ClusterRole is a right to grant rights, given only by the ``propagate-clusterroles``
deploy component."""

PROPAGATION_POLICIES: Final = ResourceRef(group=POLICY_GROUP, version="v1alpha1",
                                          resource="propagationpolicies")
CLUSTER_PROPAGATION_POLICIES: Final = ResourceRef(group=POLICY_GROUP, version="v1alpha1",
                                                  resource="clusterpropagationpolicies")
RESOURCE_BINDINGS: Final = ResourceRef(group=WORK_GROUP, version="v1alpha2",
                                       resource="resourcebindings")
CLUSTER_RESOURCE_BINDINGS: Final = ResourceRef(group=WORK_GROUP, version="v1alpha2",
                                               resource="clusterresourcebindings")
CLUSTERS: Final = ResourceRef(group=CLUSTER_GROUP, version="v1alpha1", resource="clusters")
KARMADA: Final = (PROPAGATION_POLICIES, CLUSTER_PROPAGATION_POLICIES, RESOURCE_BINDINGS,
                  CLUSTER_RESOURCE_BINDINGS, CLUSTERS)


def watch_of(ref: ResourceRef) -> str:
    return f"{ref.group}/{ref.version}/{ref.resource}" if ref.group else (
        f"{ref.version}/{ref.resource}")
