"""The UnitedDeployment status a round writes, in Kruise v1.9.0's shape.

Counts are sums over every subset workload found this round, those being deleted included:
``replicas`` is the workloads' ``status.replicas`` less their reserved pods, ``reservedPods`` the
reserved pods, ``readyReplicas`` the workloads' ``status.readyReplicas``, ``updatedReplicas`` and
``updatedReadyReplicas`` the active (and Ready) pods on the expected revision.

``subsetReplicas`` is the allocation, ``updateStatus`` the expected revision and the computed
partitions. ``subsetStatuses`` keeps every entry it had (entries are never pruned) and gains one
per new spec subset; an entry whose subset has a workload gets its ``replicas`` (the workload's
``status.replicas``), ``readyReplicas``, ``partition`` and ``reservedPods``. Every entry carries
all six keys here, zeros included, where Kruise's encoder omits zeros.

``currentRevision`` is set when empty and moves to the expected revision once
``updatedReadyReplicas >= replicas``. ``SubsetFailure`` is always removed (no adapter reports
one). ``labelSelector`` is the selector as a string, excluding reserved pods in reservation mode.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesemantics import label_selector, pod_status
from kubesemantics.lenient_json import as_int, as_map, as_str
from spreadbus.features.uniteddeployment.core.conditions import (
    JSON,
    remove_condition,
)
from spreadbus.features.uniteddeployment.core.model import UnitedDeployment
from spreadbus.features.uniteddeployment.core.reservation import STATUS_SELECTOR_SUFFIX
from spreadbus.features.uniteddeployment.core.subset_workloads import label_of

REVISION_LABEL = "apps.kruise.io/controller-revision-hash"
SUBSET_FAILURE = "SubsetFailure"


@dataclass(frozen=True)
class SubsetCounts:
    """What the status reads of one subset workload and its pods."""

    replicas: int = 0
    ready_replicas: int = 0
    reserved_pods: int = 0
    updated_replicas: int = 0
    updated_ready_replicas: int = 0


def subset_counts(
    workload: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    *,
    expected_revision: str,
    reserved_pods: int = 0,
) -> SubsetCounts:
    updated = [
        p
        for p in pods
        if (label_of(p, REVISION_LABEL) or "") == expected_revision
        and pod_status.active_deleting_any_value(p)
    ]
    return counts_of(
        workload,
        len(updated),
        sum(1 for p in updated if pod_status.has_ready_condition(p)),
        reserved_pods=reserved_pods,
    )


def counts_of(
    workload: Mapping[str, Any], updated: int, updated_ready: int, *, reserved_pods: int = 0
) -> SubsetCounts:
    """:func:`subset_counts` from the pods already counted: active on the expected revision,
    and of those Ready."""
    status = as_map(workload.get("status"))
    return SubsetCounts(
        replicas=as_int(status.get("replicas")) or 0,
        ready_replicas=as_int(status.get("readyReplicas")) or 0,
        reserved_pods=reserved_pods,
        updated_replicas=updated,
        updated_ready_replicas=updated_ready,
    )


def selector_text(ud: UnitedDeployment) -> str:
    """``status.labelSelector``: what ``kubectl scale`` and an HPA select pods by."""
    try:
        text = label_selector.to_string(label_selector.from_label_selector(ud.selector))
    except label_selector.SelectorError:
        text = ""
    if ud.schedule_strategy.reservation:
        text += STATUS_SELECTOR_SUFFIX
    return text


def _subset_entry(raw: Mapping[str, Any]) -> JSON:
    return {
        "name": as_str(raw.get("name")),
        "replicas": as_int(raw.get("replicas")) or 0,
        "readyReplicas": as_int(raw.get("readyReplicas")) or 0,
        "partition": as_int(raw.get("partition")) or 0,
        "reservedPods": as_int(raw.get("reservedPods")) or 0,
        "conditions": copy.deepcopy(raw.get("conditions"))
        if isinstance(raw.get("conditions"), list)
        else [],
    }


def subset_statuses(
    ud: UnitedDeployment,
    old_status: Mapping[str, Any],
    conditions: Mapping[str, list[JSON]],
) -> list[JSON]:
    """The entries of ``old_status`` then one per new spec subset, with this round's conditions."""
    old = old_status.get("subsetStatuses")
    entries = (
        [_subset_entry(s) for s in old if isinstance(s, Mapping)] if isinstance(old, list) else []
    )
    names = {e["name"] for e in entries}
    for subset in ud.subsets:
        if subset.name not in names:
            entries.append(_subset_entry({"name": subset.name}))
            names.add(subset.name)
    for entry in entries:
        if entry["name"] in conditions:
            entry["conditions"] = copy.deepcopy(conditions[entry["name"]])
    return entries


def compute_status(
    ud: UnitedDeployment,
    old_status: Mapping[str, Any],
    *,
    counts: Mapping[str, SubsetCounts],
    allocation: Mapping[str, int],
    partitions: Mapping[str, int],
    subset_conditions: Mapping[str, list[JSON]],
    ud_conditions: list[JSON],
    current_revision: str,
    expected_revision: str,
    collision_count: int,
) -> JSON:
    """The whole status to write; fields of ``old_status`` this rule does not own are kept."""
    status: JSON = copy.deepcopy(dict(old_status))
    entries = subset_statuses(ud, old_status, subset_conditions)
    by_name = {e["name"]: e for e in entries}
    replicas = ready = reserved = updated = updated_ready = 0
    for name, found in counts.items():
        replicas += found.replicas - found.reserved_pods
        reserved += found.reserved_pods
        ready += found.ready_replicas
        updated += found.updated_replicas
        updated_ready += found.updated_ready_replicas
        entry = by_name.get(name)
        if entry is not None:
            entry["replicas"] = found.replicas
            entry["readyReplicas"] = found.ready_replicas
            entry["partition"] = partitions.get(name, 0)
            entry["reservedPods"] = found.reserved_pods
    current = as_str(status.get("currentRevision")) or current_revision
    if expected_revision != current and updated_ready >= replicas:
        current = expected_revision
    status.update(
        {
            "observedGeneration": ud.generation,
            "replicas": replicas,
            "readyReplicas": ready,
            "updatedReplicas": updated,
            "updatedReadyReplicas": updated_ready,
            "reservedPods": reserved,
            "collisionCount": collision_count,
            "currentRevision": current,
            "subsetReplicas": {s.name: allocation.get(s.name, 0) for s in ud.subsets},
            "updateStatus": {
                "updatedRevision": expected_revision,
                "currentPartitions": {s.name: partitions.get(s.name, 0) for s in ud.subsets},
            },
            "subsetStatuses": entries,
            "conditions": remove_condition(ud_conditions, SUBSET_FAILURE),
            "labelSelector": selector_text(ud),
        }
    )
    return status
