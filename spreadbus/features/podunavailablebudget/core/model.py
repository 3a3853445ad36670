"""The PodUnavailableBudget (``policy.kruise.io/v1alpha1``) as the rules read it.

The decoder is tolerant: a value of the wrong JSON type reads as absent, because validation is
where wrong types are reported, and the planner and the webhook must decide on any stored object.
``maxUnavailable`` and ``minAvailable`` are kept as given (an int or a string), since an
unparsable string has a meaning of its own (the status computation fails on it, as Kruise's
controller does). ``selector`` stays decoded JSON.

Well-known keys (Kruise v1.9.0):

- PUB annotation ``kruise.io/pub-protect-operations``: comma list of DELETE, UPDATE, EVICT,
  RESIZE; absent or empty protects DELETE, UPDATE and EVICT;
- PUB annotation ``pub.kruise.io/protect-total-replicas``: replaces the workload's replicas;
- pod annotation ``pub.kruise.io/no-protect: "true"``: the pod is never checked;
- pod annotation ``kruise.io/related-pub``: the budget protecting the pod, stamped at CREATE;
- pod label prefix ``unavailable-pod.kruise.io/``: a running, ready pod counts as unavailable.

Status times are second-precision RFC 3339, as ``metav1.Time`` serialises them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

import msgspec

from kubesemantics import target_ref
from kubesemantics.group_version import api_group, api_version_valid
from kubesemantics.lenient_json import as_int, as_map, as_str
from kubesemantics.timestamps import time_map

JSON = dict[str, Any]

NAME = "podunavailablebudget"
"""The name the feature registers under, which its admission handlers carry."""
GROUP: Final = "policy.kruise.io"
KIND: Final = "PodUnavailableBudget"
API_VERSION: Final = f"{GROUP}/v1alpha1"

PROTECT_OPERATIONS_ANNOTATION: Final = "kruise.io/pub-protect-operations"
PROTECT_TOTAL_REPLICAS_ANNOTATION: Final = "pub.kruise.io/protect-total-replicas"
NO_PROTECT_ANNOTATION: Final = "pub.kruise.io/no-protect"
RELATED_PUB_ANNOTATION: Final = "kruise.io/related-pub"
UNAVAILABLE_LABEL_PREFIX: Final = "unavailable-pod.kruise.io/"

DELETE: Final = "DELETE"
UPDATE: Final = "UPDATE"
EVICT: Final = "EVICT"
RESIZE: Final = "RESIZE"
OPERATIONS: Final = (DELETE, UPDATE, EVICT, RESIZE)
DEFAULT_OPERATIONS: Final = frozenset({DELETE, UPDATE, EVICT})

_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1
_PARSE_INT = re.compile(r"^[+-]?[0-9]+$")


def format_time(value: datetime) -> str:
    return truncate(value).strftime("%Y-%m-%dT%H:%M:%SZ")


def truncate(value: datetime) -> datetime:
    """Second precision in UTC, what a ``metav1.Time`` keeps."""
    return value.astimezone(UTC).replace(microsecond=0)


def parse_int32(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 32)``: None when it errs (syntax or range)."""
    if not _PARSE_INT.match(text):
        return None
    value = int(text)
    return value if _INT32_MIN <= value <= _INT32_MAX else None


def _go_parse_int32_lenient(text: str) -> int:
    """What Go's ParseInt returns when its error is ignored: 0 on bad syntax, the clamped
    bound when out of range."""
    if not _PARSE_INT.match(text):
        return 0
    return max(_INT32_MIN, min(_INT32_MAX, int(text)))


class TargetRef(target_ref.TargetRef, frozen=True):
    """A PUB's ``targetRef``: it names an object only with an apiVersion Go can parse."""

    @property
    def parsable(self) -> bool:
        """An apiVersion Go can parse; a reference with another names nothing."""
        return api_version_valid(self.api_version)

    def names(self, group: str, kind: str, name: str) -> bool:
        """Group, kind and name decide; the version never does."""
        return self.parsable and (self.group, self.kind, self.name) == (group, kind, name)


class BudgetStatus(msgspec.Struct, frozen=True):
    """``status`` of a PUB; times of the two maps are aware UTC datetimes."""

    unavailable_allowed: int = 0
    current_available: int = 0
    desired_available: int = 0
    total_replicas: int = 0
    disrupted_pods: Mapping[str, datetime] = msgspec.field(default_factory=dict)
    unavailable_pods: Mapping[str, datetime] = msgspec.field(default_factory=dict)
    observed_generation: int | None = None
    conditions: tuple[JSON, ...] = ()

    def records(self, pod_name: str) -> bool:
        return pod_name in self.disrupted_pods or pod_name in self.unavailable_pods


class PodUnavailableBudget(msgspec.Struct, frozen=True):
    name: str
    namespace: str
    generation: int = 0
    uid: str = ""
    annotations: Mapping[str, str] = msgspec.field(default_factory=dict)
    selector: JSON | None = None
    target_ref: TargetRef | None = None
    max_unavailable: object = None
    min_available: object = None
    status: BudgetStatus = msgspec.field(default_factory=BudgetStatus)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def is_budget(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == KIND and api_group(as_str(obj.get("apiVersion"))) == GROUP


def status_from_json(value: object) -> BudgetStatus:
    raw = as_map(value)
    return BudgetStatus(
        unavailable_allowed=as_int(raw.get("unavailableAllowed")) or 0,
        current_available=as_int(raw.get("currentAvailable")) or 0,
        desired_available=as_int(raw.get("desiredAvailable")) or 0,
        total_replicas=as_int(raw.get("totalReplicas")) or 0,
        disrupted_pods=time_map(raw.get("disruptedPods")),
        unavailable_pods=time_map(raw.get("unavailablePods")),
        observed_generation=as_int(raw.get("observedGeneration")),
        conditions=tuple(dict(c) for c in raw.get("conditions") or () if isinstance(c, Mapping))
        if isinstance(raw.get("conditions"), list)
        else (),
    )


def status_to_json(status: BudgetStatus) -> JSON:
    """The status as Kruise serialises it: observedGeneration (0 when never set) and the four
    counters always, the maps only when not empty."""
    out: JSON = {"observedGeneration": status.observed_generation or 0}
    if status.disrupted_pods:
        out["disruptedPods"] = {
            k: format_time(v) for k, v in sorted(status.disrupted_pods.items())
        }
    if status.unavailable_pods:
        out["unavailablePods"] = {
            k: format_time(v) for k, v in sorted(status.unavailable_pods.items())
        }
    out["unavailableAllowed"] = status.unavailable_allowed
    out["currentAvailable"] = status.current_available
    out["desiredAvailable"] = status.desired_available
    out["totalReplicas"] = status.total_replicas
    if status.conditions:
        out["conditions"] = [dict(c) for c in status.conditions]
    return out


def _target_ref(value: object) -> TargetRef | None:
    if not isinstance(value, Mapping):
        return None
    return TargetRef(
        api_version=as_str(value.get("apiVersion")),
        kind=as_str(value.get("kind")),
        name=as_str(value.get("name")),
    )


def _int_or_str(value: object) -> object:
    if isinstance(value, str) or as_int(value) is not None:
        return value
    return None


def from_object(obj: Mapping[str, Any]) -> PodUnavailableBudget:
    meta = as_map(obj.get("metadata"))
    spec = as_map(obj.get("spec"))
    annotations = {
        k: v for k, v in as_map(meta.get("annotations")).items()
        if isinstance(k, str) and isinstance(v, str)
    }
    selector = spec.get("selector")
    return PodUnavailableBudget(
        name=as_str(meta.get("name")),
        namespace=as_str(meta.get("namespace")) or "default",
        generation=as_int(meta.get("generation")) or 0,
        uid=as_str(meta.get("uid")),
        annotations=annotations,
        selector=dict(selector) if isinstance(selector, Mapping) else None,
        target_ref=_target_ref(spec.get("targetRef")),
        max_unavailable=_int_or_str(spec.get("maxUnavailable")),
        min_available=_int_or_str(spec.get("minAvailable")),
        status=status_from_json(obj.get("status")),
    )


def protected_operations(
    pub: PodUnavailableBudget, *, inplace_vertical_scaling: bool = False
) -> frozenset[str]:
    """The operations the budget guards: the annotation's words exactly as written (no
    trimming; an unknown word guards nothing), or the default set; with in-place vertical
    scaling off a guarded UPDATE also guards RESIZE."""
    value = pub.annotations.get(PROTECT_OPERATIONS_ANNOTATION, "")
    operations = frozenset(value.split(",")) if value else DEFAULT_OPERATIONS
    if not inplace_vertical_scaling and UPDATE in operations:
        operations |= {RESIZE}
    return operations


def protect_total_replicas(pub: PodUnavailableBudget) -> int | None:
    """The annotation's replica count, read as Kruise's controller reads it (a bad value is
    0), or None when the annotation is absent or empty."""
    value = pub.annotations.get(PROTECT_TOTAL_REPLICAS_ANNOTATION)
    return _go_parse_int32_lenient(value) if value else None
