"""The UnitedDeployment (``apps.kruise.io/v1alpha1``) as the rules read it.

The decoder is tolerant in two ways. A subset's ``replicas``, ``minReplicas`` and ``maxReplicas``
are kept exactly as given (any JSON value; ``None`` when absent or null, which Kruise reads as
unset), because Kruise gives unparsable values a meaning of their own: the specific allocator
treats such a subset as unspecified and the min/max allocators read the value as 0. Everything
else of the wrong JSON type reads as absent; reporting it is validation's business.

``spec.template`` stays decoded JSON, as given: the revision is computed from it byte for byte and
the subset workloads are rendered from it. ``spec.replicas`` is not defaulted (Kruise v1.9.0:
absent means "the subsets' own replicas decide").

The status keeps what the allocation and the revision read of it: the collision count, the current
revision and each subset's ``Schedulable`` condition.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from kubesemantics.intstr import is_int
from kubesemantics.lenient_json import Condition, as_int, as_map, as_str, conditions

JSON = dict[str, Any]

NAME = "uniteddeployment"
"""The name the feature registers under, which its admission handlers carry."""
GROUP = "apps.kruise.io"
KIND = "UnitedDeployment"
API_VERSION = f"{GROUP}/v1alpha1"
FIXED = "Fixed"
ADAPTIVE = "Adaptive"
MANUAL = "Manual"
SCHEDULABLE = "Schedulable"
TEMPLATE_KINDS = (
    "statefulSetTemplate",
    "advancedStatefulSetTemplate",
    "cloneSetTemplate",
    "deploymentTemplate",
)
DEFAULT_RESCHEDULE_CRITICAL_SECONDS = 30
DEFAULT_UNSCHEDULABLE_SECONDS = 300


class Subset(msgspec.Struct, frozen=True):
    name: str
    replicas: object = None
    min_replicas: object = None
    max_replicas: object = None
    node_selector_term: JSON | None = None
    tolerations: tuple[JSON, ...] = ()
    patch: JSON | None = None
    target: str | None = None
    """``targetCluster.name``: the cluster the subset's workload lives in; None: the UD's."""

    @property
    def elastic(self) -> bool:
        """Has ``minReplicas`` or ``maxReplicas``: the UD is then split by min/max."""
        return self.min_replicas is not None or self.max_replicas is not None


class ScheduleStrategy(msgspec.Struct, frozen=True):
    type: str = ""
    has_adaptive: bool = False
    reschedule_critical_seconds: int | None = None
    unschedulable_seconds: int | None = None
    reserve_unschedulable_pods: bool = False

    @property
    def adaptive(self) -> bool:
        return self.type == ADAPTIVE

    @property
    def reservation(self) -> bool:
        """Adaptive with ``reserveUnschedulablePods``: pending pods are kept and substituted."""
        return self.adaptive and self.has_adaptive and self.reserve_unschedulable_pods

    @property
    def reschedule_critical(self) -> int:
        """Seconds a pod may stay unschedulable before it counts; defaulted at use, not stored."""
        if self.reschedule_critical_seconds is None:
            return DEFAULT_RESCHEDULE_CRITICAL_SECONDS
        return self.reschedule_critical_seconds

    @property
    def unschedulable_duration(self) -> int:
        """Seconds a subset stays unschedulable once marked; defaulted at use, not stored."""
        if self.unschedulable_seconds is None:
            return DEFAULT_UNSCHEDULABLE_SECONDS
        return self.unschedulable_seconds


class UpdateStrategy(msgspec.Struct, frozen=True):
    type: str = ""
    has_manual_update: bool = False
    partitions: dict[str, int] | None = None


class SubsetStatus(msgspec.Struct, frozen=True):
    name: str
    conditions: tuple[Condition, ...] = ()

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)


class Status(msgspec.Struct, frozen=True):
    observed_generation: int = 0
    collision_count: int | None = None
    current_revision: str = ""
    subset_statuses: tuple[SubsetStatus, ...] = ()

    def subset_status(self, name: str) -> SubsetStatus | None:
        return next((s for s in self.subset_statuses if s.name == name), None)


class UnitedDeployment(msgspec.Struct, frozen=True):
    namespace: str
    name: str
    uid: str = ""
    generation: int = 0
    deleting: bool = False
    replicas: int | None = None
    selector: JSON | None = None
    template: JSON = msgspec.field(default_factory=dict)
    subsets: tuple[Subset, ...] = ()
    schedule_strategy: ScheduleStrategy = ScheduleStrategy()
    update_strategy: UpdateStrategy = UpdateStrategy()
    revision_history_limit: int | None = None
    status: Status = Status()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def template_kinds(self) -> tuple[str, ...]:
        """Which of the four workload templates are given (exactly one is valid)."""
        return tuple(k for k in TEMPLATE_KINDS if isinstance(self.template.get(k), Mapping))

    def subset(self, name: str) -> Subset | None:
        return next((s for s in self.subsets if s.name == name), None)


def _subset(raw: Mapping[str, Any]) -> Subset:
    term = raw.get("nodeSelectorTerm")
    tolerations = raw.get("tolerations")
    patch = raw.get("patch")
    return Subset(
        name=as_str(raw.get("name")),
        replicas=raw.get("replicas"),
        min_replicas=raw.get("minReplicas"),
        max_replicas=raw.get("maxReplicas"),
        node_selector_term=dict(term) if isinstance(term, Mapping) else None,
        tolerations=tuple(dict(t) for t in tolerations if isinstance(t, Mapping))
        if isinstance(tolerations, list)
        else (),
        patch=dict(patch) if isinstance(patch, Mapping) else None,
        target=as_str(as_map(raw.get("targetCluster")).get("name")) or None,
    )


def _schedule_strategy(raw: Mapping[str, Any]) -> ScheduleStrategy:
    adaptive = raw.get("adaptive")
    settings = as_map(adaptive)
    return ScheduleStrategy(
        type=as_str(raw.get("type")),
        has_adaptive=isinstance(adaptive, Mapping),
        reschedule_critical_seconds=as_int(settings.get("rescheduleCriticalSeconds")),
        unschedulable_seconds=as_int(settings.get("unschedulableDuration")),
        reserve_unschedulable_pods=settings.get("reserveUnschedulablePods") is True,
    )


def _update_strategy(raw: Mapping[str, Any]) -> UpdateStrategy:
    manual = raw.get("manualUpdate")
    partitions = as_map(manual).get("partitions")
    return UpdateStrategy(
        type=as_str(raw.get("type")),
        has_manual_update=isinstance(manual, Mapping),
        partitions={k: v for k, v in partitions.items() if isinstance(k, str) and is_int(v)}
        if isinstance(partitions, Mapping)
        else None,
    )


def status_from_json(raw: object) -> Status:
    status = as_map(raw)
    subsets = status.get("subsetStatuses")
    return Status(
        observed_generation=as_int(status.get("observedGeneration")) or 0,
        collision_count=as_int(status.get("collisionCount")),
        current_revision=as_str(status.get("currentRevision")),
        subset_statuses=tuple(
            SubsetStatus(name=as_str(s.get("name")), conditions=conditions(s.get("conditions")))
            for s in subsets
            if isinstance(s, Mapping)
        )
        if isinstance(subsets, list)
        else (),
    )


def from_object(obj: Mapping[str, Any]) -> UnitedDeployment:
    """Decode a UnitedDeployment; replica fields of subsets are kept as given."""
    meta = as_map(obj.get("metadata"))
    spec = as_map(obj.get("spec"))
    topology = as_map(spec.get("topology"))
    subsets = topology.get("subsets")
    selector = spec.get("selector")
    return UnitedDeployment(
        namespace=as_str(meta.get("namespace")) or "default",
        name=as_str(meta.get("name")),
        uid=as_str(meta.get("uid")),
        generation=as_int(meta.get("generation")) or 0,
        deleting=bool(meta.get("deletionTimestamp")),
        replicas=as_int(spec.get("replicas")),
        selector=dict(selector) if isinstance(selector, Mapping) else None,
        template=dict(as_map(spec.get("template"))),
        subsets=tuple(_subset(s) for s in subsets if isinstance(s, Mapping))
        if isinstance(subsets, list)
        else (),
        schedule_strategy=_schedule_strategy(as_map(topology.get("scheduleStrategy"))),
        update_strategy=_update_strategy(as_map(spec.get("updateStrategy"))),
        revision_history_limit=as_int(spec.get("revisionHistoryLimit")),
        status=status_from_json(obj.get("status")),
    )
