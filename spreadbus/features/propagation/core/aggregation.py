"""A member's copy of a template read back into the host, as Karmada's default interpreter does.

Read from Karmada's ``pkg/resourceinterpreter/default/native`` (``reflectstatus.go``,
``healthy.go``, ``aggregatestatus.go``): each member copy's status is reflected into the
binding's ``status.aggregatedStatus`` as ``{clusterName, status, applied, health}``; a workload
reflects its replica counts and generations, anything else nothing. A copy is healthy as
``healthy.go`` judges it: its controller observed its generation, and a Deployment has every
replica updated and every updated replica available, a StatefulSet every replica updated and
available (a partitioned update: those at or above the partition updated), a ReplicaSet every
replica available; a kind without a health rule is healthy once
applied. The
template's status in the host is the sum over the members: ``replicas``, ``readyReplicas``,
``updatedReplicas``, ``availableReplicas``, ``unavailableReplicas``; its
``observedGeneration`` becomes the template's generation once every copy was made from that
generation (:data:`TEMPLATE_GENERATION_ANNOTATION`) and its controller observed it, else it
stays. CloneSets and UnitedDeployments are read as Karmada's third-party interpreter reads them
(:mod:`.kruise_aggregation`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubesemantics.lenient_json import as_int, as_map, as_str
from spreadbus.features.propagation.core import kruise_aggregation as kruise

JSON = dict[str, Any]

TEMPLATE_GENERATION_ANNOTATION: Final = "resourcetemplate.karmada.io/generation"
"""On a member copy: the template's ``metadata.generation`` it was made from."""
HEALTHY: Final = "Healthy"
UNHEALTHY: Final = "Unhealthy"
UNKNOWN: Final = "Unknown"
"""What Karmada reports where its health script fails."""
SUMMED: Final = ("replicas", "readyReplicas", "updatedReplicas", "availableReplicas",
                 "unavailableReplicas")
"""The counts a workload's status reflects and the template's status sums."""
_WORKLOADS: Final = frozenset({("apps", "Deployment"), ("apps", "StatefulSet"),
                               ("apps", "ReplicaSet")})


def _group_kind(obj: Mapping[str, Any]) -> tuple[str, str]:
    api_version = as_str(obj.get("apiVersion"))
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    return group, as_str(obj.get("kind"))


def aggregates(template: Mapping[str, Any]) -> bool:
    """Whether the template's own status is the sum of its copies'."""
    return _group_kind(template) in _WORKLOADS or _group_kind(template) in kruise.KINDS


def reflected(obj: Mapping[str, Any]) -> JSON | None:
    """What the binding keeps of one copy's status (None: nothing for this kind)."""
    if _group_kind(obj) in kruise.KINDS:
        said = TEMPLATE_GENERATION_ANNOTATION in as_map(as_map(obj.get("metadata")).get(
            "annotations"))
        return kruise.reflected(_group_kind(obj), obj, made_from(obj) if said else None)
    if _group_kind(obj) not in _WORKLOADS:
        return None
    status = as_map(obj.get("status"))
    out: JSON = {key: as_int(status.get(key)) or 0 for key in SUMMED}
    out["observedGeneration"] = as_int(status.get("observedGeneration")) or 0
    out["generation"] = as_int(as_map(obj.get("metadata")).get("generation")) or 0
    out["resourceTemplateGeneration"] = made_from(obj)
    return out


def made_from(obj: Mapping[str, Any]) -> int:
    """The template generation a copy was made from (0: not said)."""
    text = as_map(as_map(obj.get("metadata")).get("annotations")).get(
        TEMPLATE_GENERATION_ANNOTATION)
    return int(text) if isinstance(text, str) and text.isdigit() and len(text) < 19 else 0


def health(obj: Mapping[str, Any]) -> str:
    group_kind = _group_kind(obj)
    if group_kind in kruise.KINDS:
        judged = kruise.healthy(group_kind, obj)
        return UNKNOWN if judged is None else HEALTHY if judged else UNHEALTHY
    if group_kind not in _WORKLOADS:
        return HEALTHY
    spec = as_map(obj.get("spec"))
    status = as_map(obj.get("status"))
    wanted = as_int(spec.get("replicas"))
    wanted = 1 if wanted is None else wanted
    generation = as_int(as_map(obj.get("metadata")).get("generation")) or 0
    observed = as_int(status.get("observedGeneration")) or 0
    updated = as_int(status.get("updatedReplicas")) or 0
    available = as_int(status.get("availableReplicas")) or 0
    if group_kind[1] == "ReplicaSet":
        ok = available >= wanted
    elif group_kind[1] == "StatefulSet":
        # A partitioned rolling update is complete once the pods at or above it are updated.
        rolling = as_map(as_map(spec.get("updateStrategy")).get("rollingUpdate"))
        partition = as_int(rolling.get("partition")) or 0
        ok = updated >= wanted - partition and available >= wanted
    else:
        ok = updated >= wanted and available >= updated
    return HEALTHY if ok and generation == observed else UNHEALTHY


def item(cluster: str, obj: Mapping[str, Any]) -> JSON:
    """One ``status.aggregatedStatus`` entry."""
    out: JSON = {"clusterName": cluster}
    status = reflected(obj)
    if status is not None:
        out["status"] = status
    out["applied"] = True
    out["health"] = health(obj)
    return out


def template_status(template: Mapping[str, Any], items: Sequence[Mapping[str, Any]]) -> JSON:
    """The template's status, summed over the copies' reflected statuses."""
    if _group_kind(template) in kruise.KINDS:
        return kruise.aggregated(_group_kind(template), template, items)
    old = as_map(template.get("status"))
    generation = as_int(as_map(template.get("metadata")).get("generation")) or 0
    out: JSON = dict.fromkeys(SUMMED, 0)
    current = 0
    for entry in items:
        status = as_map(entry.get("status"))
        for key in SUMMED:
            out[key] += as_int(status.get(key)) or 0
        if (as_int(status.get("resourceTemplateGeneration")) == generation
                and as_int(status.get("observedGeneration")) == as_int(status.get("generation"))):
            current += 1
    if items and current == len(items):
        out["observedGeneration"] = generation
    else:
        out["observedGeneration"] = as_int(old.get("observedGeneration")) or 0
    return out
