"""Propagation's settings, and which services read each."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from spreadbus.engine.feature_settings import FeatureSettings, UsedBy
from spreadbus.features.propagation.planning.eviction_rate import DEFAULT_PER_SECOND
from spreadbus.features.propagation.planning.templates import TEMPLATES


class PropagationSettings(FeatureSettings):
    propagate_configmaps: Annotated[bool, UsedBy("watcher")] = False
    """Watch ConfigMaps, the templates propagation copies whole into members: on in the host and
    every member of a multi-cluster setup (``spreadbus up --members`` sets it true); off, a
    cluster that propagates nothing does not put every ConfigMap on the bus."""

    propagate_clusterroles: Annotated[bool, UsedBy("watcher")] = False
    """Watch ClusterRoles, the cluster-scoped templates propagation copies whole into members.
    A member's actuator writes them only where the ``propagate-clusterroles`` deploy component
    grants it ClusterRoles (docs/security.md); off, they are neither watched nor propagated."""

    resource_eviction_rate: Annotated[float, UsedBy("planner"), Field(ge=0)] = DEFAULT_PER_SECOND
    """Evictions per second the taint manager makes at most (Karmada's
    ``--resource-eviction-rate``); 0: no limit."""

    def watches(self) -> tuple[str, ...]:
        """The non-workload template kinds, each when it is to be propagated."""
        return tuple(t.watch for t in TEMPLATES if not t.workload and (
            self.propagate_configmaps if t.namespaced else self.propagate_clusterroles))
