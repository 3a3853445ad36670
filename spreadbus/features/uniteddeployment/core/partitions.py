"""Partitions: how many of a subset's pods stay on the old revision in a Manual update.

The UD computes one partition per spec subset (``manualUpdate.partitions[subset]`` when the
strategy type is ``Manual`` and the map is given, else 0; capped at the subset's allocated
replicas, no lower bound), writes it into each kind's own field and reads it back from the
workload to decide whether the workload needs an update:

- StatefulSet: ``updateStrategy.rollingUpdate.partition``; an empty strategy type becomes
  ``RollingUpdate``; ``OnDelete`` has no partition (read back: the pods not on the workload's
  revision);
- Advanced StatefulSet: the same field unless the type is ``OnDelete`` (read back the same way);
- CloneSet: ``updateStrategy.partition``, written as an integer, read back scaled against its
  replicas, rounding up;
- Deployment: none; it reads back as 0, so a non-zero partition re-updates it every round, as in
  Kruise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubesemantics.intstr import IntOrStrError, scaled_value
from kubesemantics.lenient_json import as_int, as_map, as_str
from spreadbus.features.uniteddeployment.core.model import MANUAL, UnitedDeployment
from spreadbus.features.uniteddeployment.core.subset_workloads import (
    ADVANCED_STATEFUL_SET,
    CLONE_SET,
    STATEFUL_SET,
    WorkloadKind,
    labels_of,
)

ROLLING_UPDATE = "RollingUpdate"
ON_DELETE = "OnDelete"
REVISION_LABEL = "apps.kruise.io/controller-revision-hash"


def computed_partitions(ud: UnitedDeployment, allocation: Mapping[str, int]) -> dict[str, int]:
    """Every spec subset's partition, capped at its allocated replicas."""
    strategy = ud.update_strategy
    manual = strategy.partitions if strategy.type == MANUAL and strategy.has_manual_update else None
    found: dict[str, int] = {}
    for subset in ud.subsets:
        partition = (manual or {}).get(subset.name, 0)
        found[subset.name] = min(partition, allocation.get(subset.name, 0))
    return found


def write_partition(kind: WorkloadKind, spec: dict[str, Any], partition: int) -> None:
    """Put ``partition`` into the workload spec's own field for ``kind`` (in place)."""
    strategy = dict(as_map(spec.get("updateStrategy")))
    if kind == STATEFUL_SET:
        if not as_str(strategy.get("type")):
            strategy["type"] = ROLLING_UPDATE
        if strategy["type"] == ROLLING_UPDATE:
            strategy["rollingUpdate"] = {
                **as_map(strategy.get("rollingUpdate")),
                "partition": partition,
            }
        spec["updateStrategy"] = strategy
    elif kind == ADVANCED_STATEFUL_SET:
        if as_str(strategy.get("type")) != ON_DELETE:
            strategy["rollingUpdate"] = {
                **as_map(strategy.get("rollingUpdate")),
                "partition": partition,
            }
            spec["updateStrategy"] = strategy
    elif kind == CLONE_SET:
        strategy["partition"] = partition
        spec["updateStrategy"] = strategy


def read_partition(
    kind: WorkloadKind, workload: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]
) -> int:
    """The partition the workload holds now, as Kruise reads it back."""
    return read_partition_counted(
        kind,
        workload,
        lambda revision: sum(1 for p in pods if labels_of(p).get(REVISION_LABEL, "") != revision),
    )


def read_partition_counted(
    kind: WorkloadKind, workload: Mapping[str, Any], off_revision: Callable[[str], int]
) -> int:
    """:func:`read_partition` where ``off_revision(r)`` counts the pods not on revision ``r``
    (the only thing it reads of them), so counted pods need not be listed."""
    spec = as_map(workload.get("spec"))
    strategy = as_map(spec.get("updateStrategy"))
    if kind in (STATEFUL_SET, ADVANCED_STATEFUL_SET):
        if as_str(strategy.get("type")) == ON_DELETE:
            return off_revision(labels_of(workload).get(REVISION_LABEL, ""))
        return as_int(as_map(strategy.get("rollingUpdate")).get("partition")) or 0
    if kind == CLONE_SET:
        value = strategy.get("partition")
        if value is None:
            return 0
        replicas = as_int(spec.get("replicas"))
        try:
            return scaled_value(value, 1 if replicas is None else replicas, round_up=True)
        except IntOrStrError:
            return 0
    return 0
