"""Computed partitions, partitions read back per kind, and Kruise's update decision."""

from __future__ import annotations

from typing import Any

import pytest

from spreadbus.features.uniteddeployment.core.model import from_object
from spreadbus.features.uniteddeployment.core.partitions import (
    computed_partitions,
    read_partition,
)
from spreadbus.features.uniteddeployment.core.subset_workloads import (
    ADVANCED_STATEFUL_SET,
    CLONE_SET,
    DEPLOYMENT,
    STATEFUL_SET,
    WorkloadKind,
)
from spreadbus.features.uniteddeployment.core.update_decision import decide
from tests.uniteddeployment.world import REVISION, united, zone

JSON = dict[str, Any]


@pytest.mark.parametrize(
    ("update_strategy", "allocation", "expected"),
    [
        (
            {"type": "Manual", "manualUpdate": {"partitions": {"a": 2, "b": 9}}},
            {"a": 3, "b": 4},
            {"a": 2, "b": 4},
        ),
        (
            {"type": "Manual", "manualUpdate": {"partitions": {"a": -1}}},
            {"a": 3, "b": 4},
            {"a": -1, "b": 0},
        ),
        ({"type": "Manual", "manualUpdate": {}}, {"a": 3, "b": 4}, {"a": 0, "b": 0}),
        ({"manualUpdate": {"partitions": {"a": 2}}}, {"a": 3, "b": 4}, {"a": 0, "b": 0}),
        (
            {"type": "Manual", "manualUpdate": {"partitions": {"a": 2}}},
            {"a": 0, "b": 0},
            {"a": 0, "b": 0},
        ),
        (None, {"a": 3, "b": 4}, {"a": 0, "b": 0}),
    ],
    ids=["capped", "negative kept", "no map", "type unset", "nothing allocated", "no strategy"],
)
def test_computed_partitions(
    update_strategy: JSON | None, allocation: dict[str, int], expected: dict[str, int]
) -> None:
    ud = united([zone("a"), zone("b")])
    if update_strategy is not None:
        ud["spec"]["updateStrategy"] = update_strategy
    assert computed_partitions(from_object(ud), allocation) == expected


def pod(revision: str) -> JSON:
    return {"metadata": {"labels": {REVISION: revision}}}


@pytest.mark.parametrize(
    ("kind", "spec", "pods", "expected"),
    [
        (STATEFUL_SET, {"updateStrategy": {"rollingUpdate": {"partition": 2}}}, [], 2),
        (STATEFUL_SET, {}, [], 0),
        (STATEFUL_SET, {"updateStrategy": {"type": "OnDelete"}}, ["r1", "r0", "r0"], 2),
        (ADVANCED_STATEFUL_SET, {"updateStrategy": {"type": "OnDelete"}}, ["r1"], 0),
        (ADVANCED_STATEFUL_SET, {"updateStrategy": {"rollingUpdate": {"partition": 4}}}, [], 4),
        (CLONE_SET, {"replicas": 5, "updateStrategy": {"partition": 3}}, [], 3),
        (CLONE_SET, {"replicas": 5, "updateStrategy": {"partition": "50%"}}, [], 3),
        (CLONE_SET, {"replicas": 5}, [], 0),
        (DEPLOYMENT, {"replicas": 5}, [], 0),
    ],
)
def test_partition_read_back(
    kind: WorkloadKind, spec: JSON, pods: list[str], expected: int
) -> None:
    workload = {"metadata": {"labels": {REVISION: "r1"}}, "spec": spec}
    assert read_partition(kind, workload, [pod(r) for r in pods]) == expected


def observed(**changes: Any) -> JSON:
    found: JSON = {
        "metadata": {
            "labels": {REVISION: "r1"},
            "annotations": {"apps.kruise.io/subset-patch": ""},
        },
        "spec": {"replicas": 3},
        "status": {"replicas": 3, "updatedReplicas": 3},
    }
    for path, value in changes.items():
        section, key = path.split("__")
        if value is None:
            found[section].pop(key, None)
        else:
            found[section][key] = value
    return found


WANTED = {"revision": "r1", "replicas": 3, "partition": 0, "current_partition": 0, "patch": "",
          "updated_replicas": 3}


def test_a_missing_workload_is_created() -> None:
    assert decide(None, **WANTED) == "create"  # type: ignore[arg-type]


def test_a_workload_as_wanted_is_left_alone() -> None:
    assert decide(observed(), **WANTED) == "none"  # type: ignore[arg-type]


def test_a_missing_annotation_reads_as_no_patch() -> None:
    assert decide(observed(metadata__annotations=None), **WANTED) == "none"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("workload", "override"),
    [
        (observed(metadata__labels={REVISION: "r0"}), {}),
        (observed(spec__replicas=2), {}),
        (observed(), {"current_partition": 1}),
        (observed(metadata__annotations={"apps.kruise.io/subset-patch": '{"a":1}'}), {}),
        (observed(), {"updated_replicas": 2}),
        (observed(spec__replicas=None), {}),
    ],
    ids=["revision", "replicas", "partition", "patch", "rollout unfinished", "replicas default 1"],
)
def test_each_difference_makes_an_update(workload: JSON, override: JSON) -> None:
    assert decide(workload, **{**WANTED, **override}) == "update"


@pytest.mark.parametrize(
    ("status", "updated_pods", "expected"),
    [
        ({"replicas": 3, "updatedReplicas": 3}, 2, "update"),
        ({"replicas": 3, "updatedReplicas": 1}, 3, "none"),
        ({"replicas": 3}, 3, "none"),
        ({}, 0, "none"),
    ],
    ids=["status ahead of the pods", "status behind the pods", "no updatedReplicas", "no status"],
)
def test_an_unfinished_rollout_is_read_from_the_pods_not_the_workload_status(
    status: JSON, updated_pods: int, expected: str
) -> None:
    """Kruise's ``convertToSubset`` (pkg/controller/uniteddeployment/subset_control.go) sets a
    subset's ``updatedReplicas`` with ``CalculateUpdatedReplicas`` (adapter/adapter_util.go): its
    active pods carrying the updated revision; ``uniteddeployment_update.go`` compares that with
    the workload's ``status.replicas``."""
    workload = observed(status__replicas=None, status__updatedReplicas=None)
    workload["status"] = status
    assert decide(workload, **{**WANTED, "updated_replicas": updated_pods}) == expected
