"""A pod's phase, deletion, readiness and controller as the features read them.

The three readings of ``deletionTimestamp`` agree on what the API server writes and keep each
feature's reading of a hand-written value; the rows pin where they part.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubesemantics import pod_status
from kubesemantics.owner_refs import controller_ref, owner_references

ABSENT = object()


def pod(*, deletion: object = ABSENT, phase: object = "Running",
        conditions: object = ABSENT) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "p"}
    if deletion is not ABSENT:
        metadata["deletionTimestamp"] = deletion
    status: dict[str, Any] = {"phase": phase}
    if conditions is not ABSENT:
        status["conditions"] = conditions
    return {"metadata": metadata, "status": status}


@pytest.mark.parametrize(
    ("value", "deleting", "any_value", "truthy"),
    [
        (ABSENT, False, False, False),
        (None, False, False, False),
        ("2024-05-01T10:00:00Z", True, True, True),
        ("", False, True, False),
        (0, True, True, False),
        (False, True, True, False),
        (1, True, True, True),
    ],
)
def test_the_three_deletion_readings_part_only_on_values_the_api_server_refuses(
    value: object, deleting: bool, any_value: bool, truthy: bool
) -> None:
    obj = pod(deletion=value)
    assert (pod_status.deleting(obj), pod_status.deleting_any_value(obj),
            pod_status.deleting_truthy(obj)) == (deleting, any_value, truthy)


@pytest.mark.parametrize(
    ("phase", "active"),
    [("Running", True), ("Pending", True), ("", True), (7, True), ("Unknown", True),
     ("Succeeded", False), ("Failed", False)],
)
def test_a_pod_is_active_until_its_phase_ends(phase: object, active: bool) -> None:
    assert pod_status.active(pod(phase=phase)) is active
    assert pod_status.ended(pod(phase=phase)) is not active


def test_a_pod_being_deleted_is_not_active_whatever_its_phase() -> None:
    deleted = pod(deletion="2024-05-01T10:00:00Z")
    assert not pod_status.active(deleted)
    assert not pod_status.active(deleted, pod_status.deleting_truthy)
    assert pod_status.active(pod(deletion=""))
    assert not pod_status.active(pod(deletion=""), pod_status.deleting_any_value)


def test_a_malformed_pod_reads_as_empty_rather_than_raising() -> None:
    for bad in ({}, {"metadata": [], "status": "x"}, {"status": {"conditions": {"Ready": 1}}}):
        assert pod_status.phase(bad) == ""
        assert pod_status.active(bad)
        assert not pod_status.has_ready_condition(bad)
        assert controller_ref(bad) is None


def test_readiness_is_a_ready_condition_that_is_true() -> None:
    ready = {"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"}
    assert pod_status.ready_condition(pod(conditions=[{"type": "PodScheduled",
                                                       "status": "True"}, ready])) is ready
    assert not pod_status.has_ready_condition(pod(conditions=[{"type": "Ready",
                                                               "status": "False"}]))
    assert not pod_status.has_ready_condition(pod(conditions=[{"type": "Ready",
                                                               "status": True}]))
    # Any Ready=True condition counts, where upstream reads only the first of its type.
    assert pod_status.ready_condition(
        pod(conditions=["junk", {"type": "Ready", "status": "False"}, ready])) is ready


def test_the_controller_is_the_first_reference_whose_controller_is_true() -> None:
    owner = {"kind": "ReplicaSet", "name": "rs", "controller": True}
    refs: list[object] = [
        "junk", {"kind": "Node", "name": "n"}, {"kind": "X", "name": "x", "controller": "true"},
        owner, {"kind": "ReplicaSet", "name": "other", "controller": True},
    ]
    assert controller_ref({"metadata": {"ownerReferences": refs}}) is owner
    assert controller_ref({"metadata": {"ownerReferences": refs[:3]}}) is None
    assert controller_ref({"metadata": {"ownerReferences": {"0": owner}}}) is None


@pytest.mark.parametrize(
    ("value", "any_value", "truthy"),
    [(ABSENT, True, True), ("2024-05-01T10:00:00Z", False, False), ("", False, True),
     (0, False, True)],
)
def test_each_features_activity_is_active_with_its_deletion_reading(
    value: object, any_value: bool, truthy: bool
) -> None:
    obj = pod(deletion=value)
    assert pod_status.active_deleting_any_value(obj) is any_value
    assert pod_status.active_deleting_truthy(obj) is truthy
    assert not pod_status.active_deleting_truthy(pod(deletion=value, phase="Failed"))


def test_running_and_ready_needs_the_phase_the_condition_and_no_deletion() -> None:
    ready = [{"type": "Ready", "status": "True"}]
    assert pod_status.running_and_ready(pod(conditions=ready))
    assert not pod_status.running_and_ready(pod(conditions=ready, phase="Pending"))
    assert not pod_status.running_and_ready(pod(conditions=[{"type": "Ready", "status": "False"}]))
    assert not pod_status.running_and_ready(pod(conditions=ready, deletion="2024-05-01T10:00:00Z"))
    assert pod_status.running_and_ready(pod(conditions=ready, deletion=""))


def test_owner_references_are_every_reference_that_is_an_object_in_order() -> None:
    first, second = {"kind": "ReplicaSet", "name": "a"}, {"kind": "Job", "controller": True}
    refs: list[object] = ["junk", first, 7, second]
    assert owner_references({"metadata": {"ownerReferences": refs}}) == [first, second]
    assert owner_references({"metadata": {"ownerReferences": {"0": first}}}) == []
    assert owner_references({"metadata": "oops"}) == []
