"""The status a round writes: counts, subset entries, revisions, conditions, selector."""

from __future__ import annotations

import copy
from typing import Any

from spreadbus.features.uniteddeployment.core.model import from_object
from spreadbus.features.uniteddeployment.core.status import (
    SubsetCounts,
    compute_status,
    selector_text,
    subset_counts,
)
from tests.uniteddeployment.world import REVISION, materialize, owned_pod, run, united, zone

JSON = dict[str, Any]
UD = united([zone("a"), zone("b")])


def status(old: JSON, counts: dict[str, SubsetCounts], **overrides: Any) -> JSON:
    arguments: dict[str, Any] = {
        "counts": counts,
        "allocation": {"a": 3, "b": 3},
        "partitions": {"a": 1, "b": 0},
        "subset_conditions": {},
        "ud_conditions": [],
        "current_revision": "r1",
        "expected_revision": "r2",
        "collision_count": 0,
    }
    arguments.update(overrides)
    return compute_status(from_object(UD), old, **arguments)


def test_counts_sum_every_found_subset_and_exclude_reserved_pods() -> None:
    found = status(
        {},
        {
            "a": SubsetCounts(replicas=3, ready_replicas=2, reserved_pods=1, updated_replicas=1),
            "gone": SubsetCounts(replicas=2, ready_replicas=2, updated_ready_replicas=2),
        },
    )
    assert (found["replicas"], found["reservedPods"], found["readyReplicas"]) == (4, 1, 4)
    assert (found["updatedReplicas"], found["updatedReadyReplicas"]) == (1, 2)
    entries = {e["name"]: e for e in found["subsetStatuses"]}
    assert entries["a"] == {
        "name": "a",
        "replicas": 3,
        "readyReplicas": 2,
        "partition": 1,
        "reservedPods": 1,
        "conditions": [],
    }
    assert entries["b"]["replicas"] == 0
    assert "gone" not in entries


def test_old_entries_stay_new_subsets_are_appended_and_unknown_fields_kept() -> None:
    old = {
        "subsetStatuses": [
            {"name": "stale", "replicas": 4},
            {"name": "b", "conditions": [{"type": "X"}]},
        ],
        "somethingElse": 1,
    }
    found = status(old, {})
    assert [e["name"] for e in found["subsetStatuses"]] == ["stale", "b", "a"]
    assert found["subsetStatuses"][0]["replicas"] == 4
    assert found["subsetStatuses"][1]["conditions"] == [{"type": "X"}]
    assert found["somethingElse"] == 1


def test_the_round_s_conditions_replace_an_entry_s() -> None:
    written = [{"type": "Schedulable", "status": "True"}]
    found = status(
        {"subsetStatuses": [{"name": "a", "conditions": []}]}, {}, subset_conditions={"a": written}
    )
    assert found["subsetStatuses"][0]["conditions"] == written


def test_allocation_partitions_and_revisions() -> None:
    found = status({}, {}, collision_count=2)
    assert found["subsetReplicas"] == {"a": 3, "b": 3}
    assert found["updateStatus"] == {"updatedRevision": "r2", "currentPartitions": {"a": 1, "b": 0}}
    assert found["collisionCount"] == 2
    assert found["observedGeneration"] == 3


def test_current_revision_is_kept_set_when_empty_and_moves_when_all_are_updated() -> None:
    behind = {"a": SubsetCounts(replicas=3, updated_ready_replicas=2)}
    done = {"a": SubsetCounts(replicas=3, updated_ready_replicas=3)}
    assert status({"currentRevision": "r0"}, behind)["currentRevision"] == "r0"
    assert status({}, behind)["currentRevision"] == "r1"
    assert status({"currentRevision": "r0"}, done)["currentRevision"] == "r2"


def test_subset_failure_is_always_removed() -> None:
    conditions = [
        {"type": "SubsetFailure", "status": "True"},
        {"type": "SubsetUpdated", "status": "True"},
    ]
    found = status({}, {}, ud_conditions=conditions)
    assert [c["type"] for c in found["conditions"]] == ["SubsetUpdated"]


def test_the_label_selector_excludes_reserved_pods_in_reservation_mode() -> None:
    plain = united([zone("a")])
    plain["spec"]["selector"] = {
        "matchLabels": {"app": "sample"},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "api"]}],
    }
    assert selector_text(from_object(plain)) == "app=sample,tier in (api,web)"
    reserving = copy.deepcopy(plain)
    reserving["spec"]["topology"]["scheduleStrategy"] = {
        "type": "Adaptive",
        "adaptive": {"reserveUnschedulablePods": True},
    }
    assert selector_text(from_object(reserving)).endswith(
        ",apps.kruise.io/united-deployment-reserved-pod=false"
    )


def test_updated_pods_are_active_pods_of_the_expected_revision() -> None:
    workload = materialize(run(united([zone("a")])).subsets["a"].workload)
    pods = [
        owned_pod(workload, 0, revision="r2"),
        owned_pod(workload, 1, revision="r2", ready=False),
        owned_pod(workload, 2, revision="r1"),
        owned_pod(workload, 3, revision="r2", phase="Succeeded"),
    ]
    deleting = owned_pod(workload, 4, revision="r2")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T11:59:00Z"
    counts = subset_counts(workload, [*pods, deleting], expected_revision="r2", reserved_pods=1)
    assert (counts.updated_replicas, counts.updated_ready_replicas) == (2, 1)
    assert (counts.replicas, counts.ready_replicas, counts.reserved_pods) == (6, 6, 1)
    assert pods[0]["metadata"]["labels"][REVISION] == "r2"


def test_a_subset_added_under_reservation_starts_unschedulable() -> None:
    strategy = {"type": "Adaptive", "adaptive": {"reserveUnschedulablePods": True}}
    ud = united([zone("a")], key="cloneSetTemplate", strategy=strategy)
    first = run(ud)
    ud["status"] = first.status
    ud["spec"]["topology"]["subsets"].append(zone("b"))
    workloads = [materialize(first.subsets["a"].workload)]
    result = run(ud, workloads, [], first.revision_creates)
    (entry,) = [e for e in result.status["subsetStatuses"] if e["name"] == "b"]
    assert [(c["status"], c["reason"]) for c in entry["conditions"]] == [("False", "created")]
    assert first.status["subsetStatuses"][0]["conditions"] == []
