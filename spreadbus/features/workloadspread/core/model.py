"""The WorkloadSpread as one internal model, whichever API version the user wrote.

``apps.kruise.io/v1alpha1`` names a subset's node constraints ``requiredNodeSelectorTerm`` and
``preferredNodeSelectorTerms``; ``v1beta1`` names them ``requiredNodeSelector`` and
``preferredNodeSelector``. Both spellings are accepted from either version and land in the same
fields here (the v1beta1 spelling wins if both are present), so nothing downstream ever branches on
the version. The decoder is tolerant: a value of the wrong JSON type reads as absent, because
:mod:`.validation` is where wrong types are reported; the rules never see garbage they must guard.

Node selector terms, tolerations and patches stay as decoded JSON: they are copied into pods
verbatim, and the node-affinity and toleration modules speak JSON too.

Timestamps inside status are second-precision RFC 3339, as ``metav1.Time`` serialises them;
:func:`truncate` is applied wherever a time is recorded so that expiry arithmetic matches what a
round trip through the API server would give.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import msgspec

from kubesemantics import pod_status
from kubesemantics.group_version import api_group as api_group
from kubesemantics.group_version import api_version_valid as api_version_valid
from kubesemantics.lenient_json import Condition as Condition
from kubesemantics.lenient_json import as_int, as_map, as_str, conditions
from kubesemantics.target_ref import TargetRef as TargetRef
from kubesemantics.timestamps import parse_time, time_map

JSON = dict[str, Any]

NAME = "workloadspread"
"""The name the feature registers under, which its admission handlers carry."""
GROUP = "apps.kruise.io"
KIND = "WorkloadSpread"
MATCHED_ANNOTATION = "apps.kruise.io/matched-workloadspread"
UNSTEERED_ANNOTATION = "spreadbus.io/unsteered"
"""On a pod matched to a subset by the planner although it was created after its WorkloadSpread:
its admission was not steered (the pod webhook fails open), so the planner may move it."""
DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
IGNORE_PATCH_EXISTING_ANNOTATION = "workloadspread.kruise.io/ignore-patch-existing-pods-metadata"
FAKE_SUBSET = "kruise.io/workloadspread-fake-subset-name"
VERSION_IGNORED = "versionIgnored"
FIXED = "Fixed"
ADAPTIVE = "Adaptive"
SCHEDULABLE = "Schedulable"


def format_time(value: datetime) -> str:
    return truncate(value).strftime("%Y-%m-%dT%H:%M:%SZ")


def truncate(value: datetime) -> datetime:
    """Second precision in UTC, what a ``metav1.Time`` keeps."""
    return value.astimezone(UTC).replace(microsecond=0)


class Subset(msgspec.Struct, frozen=True):
    name: str
    required_node_selector: JSON | None = None
    preferred_node_selector: tuple[JSON, ...] = ()
    tolerations: tuple[JSON, ...] = ()
    max_replicas: int | str | None = None
    min_replicas: int | str | None = None
    patch: JSON | None = None


class TargetFilter(msgspec.Struct, frozen=True):
    selector: JSON | None = None
    replicas_path_list: tuple[str, ...] = ()


class ScheduleStrategy(msgspec.Struct, frozen=True):
    type: str = ""
    reschedule_critical_seconds: int | None = None
    has_adaptive: bool = False

    @property
    def reschedule_enabled(self) -> bool:
        """Rescheduling needs type Adaptive, an ``adaptive`` block and a positive threshold."""
        return (
            self.type == ADAPTIVE
            and self.has_adaptive
            and self.reschedule_critical_seconds is not None
            and self.reschedule_critical_seconds > 0
        )


class SubsetStatus(msgspec.Struct, frozen=True):
    name: str
    replicas: int = 0
    missing_replicas: int = 0
    creating_pods: dict[str, datetime] = msgspec.field(default_factory=dict)
    deleting_pods: dict[str, datetime] = msgspec.field(default_factory=dict)
    conditions: tuple[Condition, ...] = ()

    def condition(self, type_: str) -> Condition | None:
        # A loop, not next() over a generator: every admission asks this of every subset.
        for condition in self.conditions:
            if condition.type == type_:
                return condition
        return None

    @property
    def unschedulable(self) -> bool:
        cond = self.condition(SCHEDULABLE)
        return cond is not None and cond.status == "False"


class Status(msgspec.Struct, frozen=True):
    observed_generation: int = 0
    subset_statuses: tuple[SubsetStatus, ...] = ()
    versioned_subset_statuses: dict[str, tuple[SubsetStatus, ...]] = msgspec.field(
        default_factory=dict
    )


class WorkloadSpread(msgspec.Struct, frozen=True):
    namespace: str
    name: str
    api_version: str = f"{GROUP}/v1alpha1"
    uid: str = ""
    generation: int = 0
    annotations: dict[str, str] = msgspec.field(default_factory=dict)
    created: datetime | None = None
    deleting: bool = False
    target_ref: TargetRef | None = None
    target_filter: TargetFilter | None = None
    subsets: tuple[Subset, ...] = ()
    schedule_strategy: ScheduleStrategy = ScheduleStrategy()
    status: Status = Status()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def subset(self, name: str) -> Subset | None:
        return next((s for s in self.subsets if s.name == name), None)


def _intorstr(value: object) -> int | str | None:
    if isinstance(value, str):
        return value
    return as_int(value)


def _dicts(value: object) -> tuple[JSON, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(dict(v) for v in value if isinstance(v, Mapping))


def _subset(raw: Mapping[str, Any]) -> Subset:
    required = raw.get("requiredNodeSelector", raw.get("requiredNodeSelectorTerm"))
    preferred = raw.get("preferredNodeSelector", raw.get("preferredNodeSelectorTerms"))
    patch = raw.get("patch")
    return Subset(
        name=as_str(raw.get("name")),
        required_node_selector=dict(required) if isinstance(required, Mapping) else None,
        preferred_node_selector=_dicts(preferred),
        tolerations=_dicts(raw.get("tolerations")),
        max_replicas=_intorstr(raw.get("maxReplicas")),
        min_replicas=_intorstr(raw.get("minReplicas")),
        patch=dict(patch) if isinstance(patch, Mapping) else None,
    )


def _subset_statuses(value: object) -> tuple[SubsetStatus, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(
        SubsetStatus(
            name=as_str(s.get("name")),
            replicas=as_int(s.get("replicas")) or 0,
            missing_replicas=as_int(s.get("missingReplicas")) or 0,
            creating_pods=time_map(s.get("creatingPods")),
            deleting_pods=time_map(s.get("deletingPods")),
            conditions=conditions(s.get("conditions")),
        )
        for s in value
        if isinstance(s, Mapping)
    )


def status_from_json(raw: object) -> Status:
    status = as_map(raw)
    return Status(
        observed_generation=as_int(status.get("observedGeneration")) or 0,
        subset_statuses=_subset_statuses(status.get("subsetStatuses")),
        versioned_subset_statuses={
            k: _subset_statuses(v)
            for k, v in as_map(status.get("versionedSubsetStatuses")).items()
            if isinstance(k, str)
        },
    )


def from_object(obj: Mapping[str, Any]) -> WorkloadSpread:
    """Decode a WorkloadSpread of either API version; wrong types read as absent."""
    meta = as_map(obj.get("metadata"))
    spec = as_map(obj.get("spec"))
    ref_raw = spec.get("targetRef")
    target_ref = (
        TargetRef(
            api_version=as_str(ref_raw.get("apiVersion")),
            kind=as_str(ref_raw.get("kind")),
            name=as_str(ref_raw.get("name")),
        )
        if isinstance(ref_raw, Mapping)
        else None
    )
    filter_raw = spec.get("targetFilter")
    target_filter = None
    if isinstance(filter_raw, Mapping):
        selector = filter_raw.get("selector")
        paths = filter_raw.get("replicasPathList")
        target_filter = TargetFilter(
            selector=dict(selector) if isinstance(selector, Mapping) else None,
            replicas_path_list=tuple(p for p in paths if isinstance(p, str))
            if isinstance(paths, list)
            else (),
        )
    strategy_raw = as_map(spec.get("scheduleStrategy"))
    adaptive = strategy_raw.get("adaptive")
    strategy = ScheduleStrategy(
        type=as_str(strategy_raw.get("type")),
        reschedule_critical_seconds=as_int(as_map(adaptive).get("rescheduleCriticalSeconds")),
        has_adaptive=isinstance(adaptive, Mapping),
    )
    subsets_raw = spec.get("subsets")
    annotations = {k: v for k, v in as_map(meta.get("annotations")).items() if isinstance(v, str)}
    return WorkloadSpread(
        namespace=as_str(meta.get("namespace")) or "default",
        name=as_str(meta.get("name")),
        api_version=as_str(obj.get("apiVersion")) or f"{GROUP}/v1alpha1",
        uid=as_str(meta.get("uid")),
        generation=as_int(meta.get("generation")) or 0,
        annotations=annotations,
        created=parse_time(meta.get("creationTimestamp")),
        deleting=pod_status.deleting_truthy(obj),
        target_ref=target_ref,
        target_filter=target_filter,
        subsets=tuple(_subset(s) for s in subsets_raw if isinstance(s, Mapping))
        if isinstance(subsets_raw, list)
        else (),
        schedule_strategy=strategy,
        status=status_from_json(obj.get("status")),
    )


def _condition_json(cond: Condition, *, beta: bool) -> JSON:
    out: JSON = {"type": cond.type, "status": cond.status}
    if cond.last_transition_time is not None:
        out["lastTransitionTime"] = format_time(cond.last_transition_time)
    # metav1.Condition (v1beta1) requires a reason; conversion fills "Unknown".
    reason = cond.reason or ("Unknown" if beta else "")
    if reason:
        out["reason"] = reason
    if cond.message or beta:
        out["message"] = cond.message
    return out


def subset_status_json(status: SubsetStatus, *, beta: bool = False) -> JSON:
    out: JSON = {
        "name": status.name,
        "replicas": status.replicas,
        "missingReplicas": status.missing_replicas,
    }
    if status.creating_pods:
        out["creatingPods"] = {k: format_time(v) for k, v in sorted(status.creating_pods.items())}
    if status.deleting_pods:
        out["deletingPods"] = {k: format_time(v) for k, v in sorted(status.deleting_pods.items())}
    if status.conditions:
        out["conditions"] = [_condition_json(c, beta=beta) for c in status.conditions]
    return out


def status_to_json(status: Status, *, api_version: str = f"{GROUP}/v1alpha1") -> JSON:
    """The status subresource body in the shape Kruise writes for ``api_version``."""
    beta = api_version.endswith("/v1beta1")
    out: JSON = {
        "observedGeneration": status.observed_generation,
        "subsetStatuses": [subset_status_json(s, beta=beta) for s in status.subset_statuses],
    }
    if status.versioned_subset_statuses:
        out["versionedSubsetStatuses"] = {
            version: [subset_status_json(s, beta=beta) for s in statuses]
            for version, statuses in sorted(status.versioned_subset_statuses.items())
        }
    return out
