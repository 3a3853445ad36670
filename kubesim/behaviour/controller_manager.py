"""The simulated kube-controller-manager: the workload, disruption, node and HPA controllers, and
OpenKruise's CloneSet controller (kruise-manager's part kubesim serves as a built-in kind)."""

from __future__ import annotations

from typing import Protocol

from kubesim.behaviour.advanced_statefulset import AdvancedStatefulSetController
from kubesim.behaviour.cloneset import CloneSetController
from kubesim.behaviour.deployment import DeploymentController
from kubesim.behaviour.disruption import DisruptionController
from kubesim.behaviour.horizontal_pod_autoscaler import HorizontalPodAutoscalerController
from kubesim.behaviour.node_lifecycle import NodeLifecycleController
from kubesim.behaviour.replicaset import ReplicaSetController
from kubesim.behaviour.settings import Settings
from kubesim.behaviour.shared_informers import Informers
from kubesim.behaviour.statefulset import StatefulSetController
from kubesim.interface import Cluster


class Controller(Protocol):
    def start(self) -> None: ...

    async def stop(self) -> None: ...


class ControllerManager:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._informers: Informers | None = None
        self._controllers: list[Controller] = []

    async def start(self, cluster: Cluster) -> None:
        informers = self._informers = Informers(cluster)
        self._controllers = [
            ReplicaSetController(cluster, informers, events=self.settings.events),
            DeploymentController(cluster, informers, events=self.settings.events),
            StatefulSetController(cluster, informers, events=self.settings.events),
            CloneSetController(cluster, informers, events=self.settings.events),
            AdvancedStatefulSetController(cluster, informers, events=self.settings.events),
            DisruptionController(cluster, informers),
            NodeLifecycleController(cluster, informers, self.settings),
            HorizontalPodAutoscalerController(cluster, informers, self.settings),
        ]
        informers.start()
        await informers.synced()
        for controller in self._controllers:
            controller.start()

    async def stop(self) -> None:
        for controller in self._controllers:
            await controller.stop()
        if self._informers is not None:
            await self._informers.stop()
