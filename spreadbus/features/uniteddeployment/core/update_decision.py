"""Whether a subset workload is created, updated or left alone this round (Kruise's rule).

A spec subset without a workload is created. An existing one is updated when any of these
differ from what the UD wants: its revision label, its ``spec.replicas``, its partition as read
back (:func:`.partitions.read_partition`), its ``apps.kruise.io/subset-patch`` annotation; or
while its rollout is unfinished: fewer of the subset's active pods carry the UD's updated
revision than the workload's ``status.replicas``. That count is taken from the pods, as Kruise's
``convertToSubset`` does with ``CalculateUpdatedReplicas``, never from the workload's own
``status.updatedReplicas``, which lags its pods (or counts another revision). Changes of the
template that keep the revision (node selector, tolerations, a patch already recorded) are only
written when one of these triggers fires, exactly as in Kruise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from kubesemantics.lenient_json import as_int, as_map
from spreadbus.features.uniteddeployment.core.rendering import (
    REVISION_LABEL,
    SUBSET_PATCH_ANNOTATION,
)
from spreadbus.features.uniteddeployment.core.subset_workloads import labels_of

Action = Literal["create", "update", "none"]


def spec_replicas(workload: Mapping[str, Any]) -> int:
    """``spec.replicas``; the API server defaults an absent value to 1."""
    value = as_int(as_map(workload.get("spec")).get("replicas"))
    return 1 if value is None else value


def decide(
    workload: Mapping[str, Any] | None,
    *,
    revision: str,
    replicas: int,
    partition: int,
    current_partition: int,
    patch: str,
    updated_replicas: int,
) -> Action:
    """``updated_replicas``: the subset's active pods labelled with ``revision``."""
    if workload is None:
        return "create"
    status = as_map(workload.get("status"))
    annotations = as_map(as_map(workload.get("metadata")).get("annotations"))
    stale = (
        labels_of(workload).get(REVISION_LABEL) != revision
        or spec_replicas(workload) != replicas
        or current_partition != partition
        or annotations.get(SUBSET_PATCH_ANNOTATION, "") != patch
        or updated_replicas < (as_int(status.get("replicas")) or 0)
    )
    return "update" if stale else "none"
