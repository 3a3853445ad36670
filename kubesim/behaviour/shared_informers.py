"""The informers the controller manager's controllers share, with the indexes they use.

One informer per resource is shared by every controller, as in the real controller manager, so
a pod change is decoded once and fans out only to the controllers whose indexes name it.
"""

from __future__ import annotations

import asyncio

from kubesim.behaviour.informer import (
    Informer,
    by_controller_uid,
    by_namespace,
    by_node_name,
)
from kubesim.interface import (
    ADVANCED_STATEFULSETS,
    CLONESETS,
    CONTROLLERREVISIONS,
    DEPLOYMENTS,
    HORIZONTALPODAUTOSCALERS,
    NODES,
    PODDISRUPTIONBUDGETS,
    PODS,
    REPLICASETS,
    STATEFULSETS,
    Cluster,
)


class Informers:
    """The shared caches, with the indexes the controllers look objects up by."""

    def __init__(self, cluster: Cluster) -> None:
        self.pods = Informer(cluster, PODS)
        self.nodes = Informer(cluster, NODES)
        self.replicasets = Informer(cluster, REPLICASETS)
        self.deployments = Informer(cluster, DEPLOYMENTS)
        self.statefulsets = Informer(cluster, STATEFULSETS)
        self.advanced_statefulsets = Informer(cluster, ADVANCED_STATEFULSETS)
        self.revisions = Informer(cluster, CONTROLLERREVISIONS)
        self.budgets = Informer(cluster, PODDISRUPTIONBUDGETS)
        self.clonesets = Informer(cluster, CLONESETS)
        self.hpas = Informer(cluster, HORIZONTALPODAUTOSCALERS)
        self.pods.add_index("owner", by_controller_uid)
        self.pods.add_index("namespace", by_namespace)
        self.pods.add_index("node", by_node_name)
        self.replicasets.add_index("owner", by_controller_uid)
        self.revisions.add_index("owner", by_controller_uid)
        self.budgets.add_index("namespace", by_namespace)
        self.all = [
            self.nodes,
            self.deployments,
            self.replicasets,
            self.statefulsets,
            self.advanced_statefulsets,
            self.revisions,
            self.budgets,
            self.clonesets,
            self.pods,
            self.hpas,
        ]

    def start(self) -> None:
        for informer in self.all:
            informer.start()

    async def synced(self) -> None:
        await asyncio.gather(*(i.synced.wait() for i in self.all))

    async def stop(self) -> None:
        for informer in self.all:
            await informer.stop()
