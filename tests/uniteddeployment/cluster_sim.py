"""A tiny simulated cluster to drive the scheduling rules round after round.

Each subset is a Deployment-like workload on a node pool that can be switched between
schedulable and full. A round runs the scheduling pass, the allocator and the reservation
post-processing exactly as the reconcile composes them, then lets the "workload controller"
create or delete pods (not-ready pods first, newest first) and the "scheduler" bind pending pods
of schedulable pools. A bound pod is Running and Ready ``startup`` seconds later.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from spreadbus.features.uniteddeployment.core.allocation import AllocationError, allocate
from spreadbus.features.uniteddeployment.core.conditions import JSON, format_time
from spreadbus.features.uniteddeployment.core.model import from_object
from spreadbus.features.uniteddeployment.core.rebalance import (
    HANDLED_ANNOTATION,
    REQUEST_ANNOTATION,
)
from spreadbus.features.uniteddeployment.core.reservation import (
    RESERVED_POD_LABEL,
    new_subset_conditions,
)
from spreadbus.features.uniteddeployment.core.scheduling import (
    after_allocation,
    rebalance_allocation,
    schedule_round,
)


@dataclass
class SimPod:
    name: str
    created: datetime
    bound_at: datetime | None = None
    labels: dict[str, str] = field(default_factory=dict)


@dataclass
class SimSubset:
    schedulable: bool = True
    replicas: int = 0
    pods: list[SimPod] = field(default_factory=list)


class Cluster:
    def __init__(
        self, ud: dict[str, Any], start: datetime, *, full: Iterable[str] = (), startup: int = 2
    ) -> None:
        self.ud = ud
        self.now = start
        self.startup = timedelta(seconds=startup)
        self.subsets: dict[str, SimSubset] = {name: SimSubset(schedulable=False) for name in full}
        self.conditions: dict[str, list[JSON]] = {}
        self.serial = 0
        self.last_requeue: timedelta | None = None

    # --- observation -------------------------------------------------------------------------

    def _ready(self, pod: SimPod) -> bool:
        return pod.bound_at is not None and pod.bound_at + self.startup <= self.now

    def pod_json(self, subset: SimSubset, pod: SimPod) -> dict[str, Any]:
        conditions: list[dict[str, Any]] = []
        phase = "Pending"
        if pod.bound_at is None:
            if not subset.schedulable:
                conditions.append(
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
                )
        else:
            conditions.append({"type": "PodScheduled", "status": "True"})
            if self._ready(pod):
                phase = "Running"
                conditions.append(
                    {
                        "type": "Ready",
                        "status": "True",
                        "lastTransitionTime": format_time(pod.bound_at + self.startup),
                    }
                )
        return {
            "metadata": {
                "namespace": "default",
                "name": pod.name,
                "creationTimestamp": format_time(pod.created),
                "labels": dict(pod.labels),
            },
            "spec": {"nodeName": "node"} if pod.bound_at is not None else {},
            "status": {"phase": phase, "conditions": conditions},
        }

    def names(self) -> list[str]:
        """Spec subsets, in spec order."""
        return [s["name"] for s in self.ud["spec"]["topology"]["subsets"]]

    def ready_total(self) -> int:
        return sum(1 for s in self.subsets.values() for p in s.pods if self._ready(p))

    def counts(self) -> dict[str, int]:
        return {name: len(self.subsets.get(name, SimSubset()).pods) for name in self.names()}

    def reserved(self) -> dict[str, int]:
        return {
            name: sum(
                1
                for p in self.subsets.get(name, SimSubset()).pods
                if p.labels.get(RESERVED_POD_LABEL) == "true"
            )
            for name in self.names()
        }

    def unschedulable(self) -> dict[str, bool]:
        found = {}
        for name in self.names():
            entry = next(
                (c for c in self.conditions.get(name, []) if c["type"] == "Schedulable"), None
            )
            found[name] = entry is not None and entry["status"] == "False"
        return found

    # --- driving -----------------------------------------------------------------------------

    def fix(self, name: str) -> None:
        """The subset's node pool gets room: its pending pods can be scheduled."""
        self.subsets[name].schedulable = True

    def request_rebalance(self, uid: str) -> None:
        self.ud["metadata"].setdefault("annotations", {})[REQUEST_ANNOTATION] = uid

    def rebalance_handled(self) -> str | None:
        found = self.ud["metadata"].get("annotations", {}).get(HANDLED_ANNOTATION)
        return found if isinstance(found, str) else None

    def set_replicas(self, replicas: int) -> None:
        self.ud["spec"]["replicas"] = replicas

    def tick(self, seconds: int = 1) -> None:
        for _ in range(seconds):
            self.round()
            self.now += timedelta(seconds=1)

    def round(self) -> None:
        model = from_object(self.ud)
        had = bool(self.conditions)
        for subset in model.subsets:
            self.subsets.setdefault(subset.name, SimSubset())
            if subset.name not in self.conditions:
                self.conditions[subset.name] = new_subset_conditions(
                    reservation=model.schedule_strategy.reservation,
                    statuses_exist=had,
                    now=self.now,
                )
        workloads = {
            name: {
                "spec": {"replicas": s.replicas},
                "status": {
                    "replicas": len(s.pods),
                    "readyReplicas": sum(1 for p in s.pods if self._ready(p)),
                },
            }
            for name, s in self.subsets.items()
        }
        pods = {name: [self.pod_json(s, p) for p in s.pods] for name, s in self.subsets.items()}
        updated = {
            "type": "UnitedDeploymentUpdated",
            "status": "True",
            "lastTransitionTime": format_time(self.now - timedelta(days=1)),
        }
        round_ = schedule_round(
            model,
            self.conditions,
            workloads,
            pods,
            updated_revision="",
            ud_updated_condition=updated,
            now=self.now,
        )
        allocation = allocate(
            model, {n: round_.workloads[n] for n in round_.workloads if model.subset(n)}
        )
        assert not isinstance(allocation, AllocationError), allocation
        annotations = self.ud["metadata"].setdefault("annotations", {})
        allocation, handled = rebalance_allocation(model, annotations, round_, allocation)
        if handled is not None:
            annotations[HANDLED_ANNOTATION] = handled
        round_ = after_allocation(model, round_, allocation, now=self.now)
        self.conditions = round_.conditions
        self.last_requeue = round_.requeue_after
        for s in self.subsets.values():
            for pod in s.pods:
                pod.labels.update(round_.pod_labels.get(f"default/{pod.name}", {}))
        for name, replicas in allocation.items():
            self._scale(self.subsets[name], replicas)
        for s in self.subsets.values():
            for pod in s.pods:
                if pod.bound_at is None and s.schedulable:
                    pod.bound_at = self.now

    def _scale(self, subset: SimSubset, replicas: int) -> None:
        subset.replicas = replicas
        while len(subset.pods) < replicas:
            self.serial += 1
            subset.pods.append(SimPod(name=f"pod-{self.serial}", created=self.now))
        if len(subset.pods) > replicas:
            # ReplicaSet order: unbound, then not ready, then newest first
            ranked = sorted(
                subset.pods,
                key=lambda p: (p.bound_at is not None, self._ready(p), -p.created.timestamp()),
            )
            doomed = {id(p) for p in ranked[: len(subset.pods) - replicas]}
            subset.pods = [p for p in subset.pods if id(p) not in doomed]
