"""The WorkloadRebalancer as the rules read it, and its status written back as JSON.

Decoding is lenient (a field of the wrong type reads as absent): the rules decide on whatever
is stored and validation is where a wrong type becomes an error. A workload reference is the
exact 4-tuple Karmada compares (apiVersion, kind, namespace, name); an empty namespace names a
cluster-scoped object.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, Literal

import msgspec

from kubesemantics import pod_status
from kubesemantics.lenient_json import as_int, as_map, as_str
from kubesemantics.timestamps import parse_time

JSON = dict[str, Any]

NAME = "workloadrebalancer"
"""The name the feature registers under, which its admission handlers carry."""
GROUP: Final = "apps.karmada.io"
KIND: Final = "WorkloadRebalancer"
API_VERSION: Final = f"{GROUP}/v1alpha1"
RESOURCE: Final = "workloadrebalancers"

SUCCESSFUL: Final = "Successful"
FAILED: Final = "Failed"
BINDING_NOT_FOUND: Final = "ReferencedBindingNotFound"
"""Karmada's only failure reason, kept so that its tooling reads spreadbus the same way."""

REQUEST_ANNOTATION: Final = "rebalance.spreadbus.io/request"
"""Set on the governing object to the rebalancer's uid: place afresh."""
HANDLED_ANNOTATION: Final = "rebalance.spreadbus.io/handled"
"""Set by the governing feature to the request it finished."""

Result = Literal["Successful", "Failed", ""]


class WorkloadRef(msgspec.Struct, frozen=True, order=True):
    api_version: str
    kind: str
    name: str
    namespace: str = ""

    @property
    def sort_key(self) -> str:
        """Karmada orders by this joined string, byte by byte (a cluster-scoped entry has two
        spaces in a row); code-point order of a str is the byte order of its UTF-8."""
        return f"{self.api_version} {self.kind} {self.namespace} {self.name}"

    def to_json(self) -> JSON:
        out: JSON = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.namespace:
            out["namespace"] = self.namespace
        return out

    def describe(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name} ({self.api_version})"


class ObservedWorkload(msgspec.Struct, frozen=True):
    workload: WorkloadRef
    result: Result = ""
    reason: str = ""

    def to_json(self) -> JSON:
        out: JSON = {"workload": self.workload.to_json()}
        if self.result:
            out["result"] = self.result
        if self.reason:
            out["reason"] = self.reason
        return out


class Status(msgspec.Struct, frozen=True):
    observed_workloads: tuple[ObservedWorkload, ...] = ()
    observed_generation: int = 0
    finish_time: datetime | None = None

    def to_json(self) -> JSON:
        out: JSON = {
            "observedWorkloads": [w.to_json() for w in self.observed_workloads],
            "observedGeneration": self.observed_generation,
        }
        if self.finish_time is not None:
            out["finishTime"] = format_time(self.finish_time)
        return out


class WorkloadRebalancer(msgspec.Struct, frozen=True):
    name: str
    uid: str = ""
    generation: int = 0
    created: datetime | None = None
    deleting: bool = False
    workloads: tuple[WorkloadRef, ...] = ()
    ttl_seconds_after_finished: int | None = None
    status: Status = Status()


def format_time(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def to_second(value: datetime) -> datetime:
    """``metav1.Time`` keeps whole seconds: a time is recorded as it will be read back."""
    return value.astimezone(UTC).replace(microsecond=0)


def workload_ref(raw: object) -> WorkloadRef | None:
    """A reference from JSON; None when it is not an object at all."""
    if not isinstance(raw, Mapping):
        return None
    return WorkloadRef(
        api_version=as_str(raw.get("apiVersion")),
        kind=as_str(raw.get("kind")),
        name=as_str(raw.get("name")),
        namespace=as_str(raw.get("namespace")),
    )


def _result(value: object) -> Result:
    return "Successful" if value == SUCCESSFUL else "Failed" if value == FAILED else ""


def status_from_json(raw: object) -> Status:
    status = as_map(raw)
    entries: list[ObservedWorkload] = []
    items = status.get("observedWorkloads")
    for item in items if isinstance(items, list) else ():
        entry = as_map(item)
        ref = workload_ref(entry.get("workload"))
        if ref is None:
            continue
        entries.append(ObservedWorkload(workload=ref, result=_result(entry.get("result")),
                                        reason=as_str(entry.get("reason"))))
    finish = parse_time(status.get("finishTime"))
    return Status(
        observed_workloads=tuple(entries),
        observed_generation=as_int(status.get("observedGeneration")) or 0,
        finish_time=None if finish is None else to_second(finish),
    )


def from_object(obj: Mapping[str, Any]) -> WorkloadRebalancer:
    metadata = as_map(obj.get("metadata"))
    spec = as_map(obj.get("spec"))
    raw_workloads = spec.get("workloads")
    refs = [workload_ref(w) for w in (raw_workloads if isinstance(raw_workloads, list) else ())]
    created = parse_time(metadata.get("creationTimestamp"))
    return WorkloadRebalancer(
        name=as_str(metadata.get("name")),
        uid=as_str(metadata.get("uid")),
        generation=as_int(metadata.get("generation")) or 0,
        created=None if created is None else to_second(created),
        deleting=pod_status.deleting_truthy(obj),
        workloads=tuple(r for r in refs if r is not None),
        ttl_seconds_after_finished=as_int(spec.get("ttlSecondsAfterFinished")),
        status=status_from_json(obj.get("status")),
    )


def is_workloadrebalancer(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == KIND and as_str(obj.get("apiVersion")).startswith(f"{GROUP}/")
