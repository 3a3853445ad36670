"""The status sync of a WorkloadRebalancer, checked against seed 004's examples and reference §2."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from spreadbus.features.workloadrebalancer.core.model import (
    ObservedWorkload,
    Status,
    WorkloadRef,
    from_object,
)
from spreadbus.features.workloadrebalancer.core.status import Placement, sync

NOW = datetime(2024, 5, 22, 11, 40, 10, tzinfo=UTC)
EARLIER = datetime(2024, 5, 22, 11, 36, 10, tzinfo=UTC)


def deploy(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "namespace": "default"}


def rebalancer(workloads: list[dict[str, Any]], *, generation: int = 1,
               status: dict[str, Any] | None = None, ttl: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"workloads": workloads}
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    obj: dict[str, Any] = {
        "apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
        "metadata": {"name": "demo", "uid": "u-demo", "generation": generation,
                     "creationTimestamp": "2024-05-22T11:36:10Z"},
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


GOVERNED = Placement(kind="WorkloadSpread", namespace="default", name="ws", delivered=True)


def governed_except(*missing: str) -> Any:
    def resolve(ref: WorkloadRef) -> Placement | None:
        return None if ref.name in missing else GOVERNED
    return resolve


def test_a_governed_workload_succeeds_and_the_rebalancer_finishes_now() -> None:
    outcome = sync(from_object(rebalancer([deploy("demo-deploy")])), governed_except(), NOW)
    assert outcome.write
    assert outcome.status.to_json() == {
        "finishTime": "2024-05-22T11:40:10Z",
        "observedGeneration": 1,
        "observedWorkloads": [{"result": "Successful", "workload": deploy("demo-deploy")}],
    }
    assert outcome.finished
    assert not outcome.delete
    assert outcome.requeue_at is None


def test_an_ungoverned_workload_fails_with_karmadas_reason() -> None:
    outcome = sync(from_object(rebalancer([deploy("demo-deploy")])),
                   governed_except("demo-deploy"), NOW)
    assert outcome.status.to_json()["observedWorkloads"] == [
        {"reason": "ReferencedBindingNotFound", "result": "Failed",
         "workload": deploy("demo-deploy")}]


def test_entries_are_ordered_by_api_version_kind_namespace_name() -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "name": "demo-config",
              "namespace": "default"}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "name": "demo-role"}
    outcome = sync(from_object(rebalancer([config, deploy("demo-deploy"), role])),
                   governed_except(), NOW)
    assert [e["workload"] for e in outcome.status.to_json()["observedWorkloads"]] == [
        deploy("demo-deploy"), role, config]


def test_an_edit_keeps_what_succeeded_drops_what_failed_and_adds_what_is_new() -> None:
    old_status = {
        "finishTime": "2024-05-22T11:36:10Z", "observedGeneration": 1,
        "observedWorkloads": [
            {"result": "Successful", "workload": deploy("demo-deploy-1")},
            {"reason": "ReferencedBindingNotFound", "result": "Failed",
             "workload": deploy("demo-deploy-2")},
        ],
    }
    wr = rebalancer([deploy("demo-deploy-3")], generation=2, status=old_status)
    outcome = sync(from_object(wr), governed_except(), NOW)
    assert outcome.status.to_json() == {
        "finishTime": "2024-05-22T11:40:10Z",
        "observedGeneration": 2,
        "observedWorkloads": [
            {"result": "Successful", "workload": deploy("demo-deploy-1")},
            {"result": "Successful", "workload": deploy("demo-deploy-3")},
        ],
    }


def test_a_modified_entry_is_a_deletion_plus_an_addition() -> None:
    old_status = {"finishTime": "2024-05-22T11:36:10Z", "observedGeneration": 1,
                  "observedWorkloads": [{"reason": "ReferencedBindingNotFound",
                                         "result": "Failed", "workload": deploy("a")}]}
    moved = {**deploy("a"), "namespace": "other"}
    outcome = sync(from_object(rebalancer([moved], generation=2, status=old_status)),
                   governed_except(), NOW)
    assert [e["workload"] for e in outcome.status.to_json()["observedWorkloads"]] == [moved]


def test_a_failed_entry_is_never_decided_again() -> None:
    old_status = {"finishTime": "2024-05-22T11:36:10Z", "observedGeneration": 1,
                  "observedWorkloads": [{"reason": "ReferencedBindingNotFound",
                                         "result": "Failed", "workload": deploy("a")}]}
    outcome = sync(from_object(rebalancer([deploy("a")], status=old_status)),
                   governed_except(), NOW)
    assert not outcome.write
    assert outcome.status.observed_workloads[0].result == "Failed"


def test_an_undelivered_request_waits_without_a_result_or_finish_time() -> None:
    waiting = Placement(kind="WorkloadSpread", namespace="default", name="ws", delivered=False)
    outcome = sync(from_object(rebalancer([deploy("a")], ttl=0)), lambda ref: waiting, NOW)
    assert outcome.status.to_json() == {
        "observedGeneration": 1, "observedWorkloads": [{"workload": deploy("a")}]}
    assert [t.placement for t in outcome.triggers] == [waiting]
    assert not outcome.finished
    assert not outcome.delete
    assert outcome.requeue_at is None


def test_a_ttl_of_zero_deletes_on_the_pass_that_finishes() -> None:
    outcome = sync(from_object(rebalancer([deploy("a")], ttl=0)), governed_except(), NOW)
    assert outcome.write
    assert outcome.delete


def test_the_ttl_counts_from_the_finish_time_just_written() -> None:
    outcome = sync(from_object(rebalancer([deploy("a")], ttl=60)), governed_except(),
                   NOW + timedelta(microseconds=700_000))
    assert outcome.status.finish_time == NOW
    assert not outcome.delete
    assert outcome.requeue_at == NOW + timedelta(seconds=60)


def test_the_ttl_expires_exactly_at_finish_time_plus_ttl() -> None:
    finished = {"finishTime": "2024-05-22T11:36:10Z", "observedGeneration": 1,
                "observedWorkloads": [{"result": "Successful", "workload": deploy("a")}]}
    wr = from_object(rebalancer([deploy("a")], ttl=240, status=finished))
    before = sync(wr, governed_except(), EARLIER + timedelta(seconds=239))
    assert not before.write
    assert not before.delete
    assert before.requeue_at == EARLIER + timedelta(seconds=240)
    assert sync(wr, governed_except(), EARLIER + timedelta(seconds=240)).delete


def test_an_edit_postpones_the_ttl_by_resetting_the_finish_time() -> None:
    finished = {"finishTime": "2024-05-22T11:36:10Z", "observedGeneration": 1,
                "observedWorkloads": [{"result": "Successful", "workload": deploy("a")}]}
    wr = from_object(rebalancer([deploy("a")], ttl=60, generation=2, status=finished))
    outcome = sync(wr, governed_except(), NOW)
    assert outcome.status.finish_time == NOW
    assert outcome.requeue_at == NOW + timedelta(seconds=60)


def test_unset_ttl_never_deletes() -> None:
    outcome = sync(from_object(rebalancer([deploy("a")])), governed_except(),
                   NOW + timedelta(days=365))
    assert not outcome.delete
    assert outcome.requeue_at is None


def test_a_stored_final_status_without_finish_time_is_not_rewritten() -> None:
    """Karmada's ``handleWorkloadRebalance``
    (pkg/controllers/workloadrebalancer/workloadrebalancer_controller.go) keeps the stored
    ``finishTime`` and sets a new one only when the recomputed status differs from the stored
    one and nothing is left to retry; with a TTL and no finishTime it never deletes."""
    done = {"observedGeneration": 1,
            "observedWorkloads": [{"result": "Successful", "workload": deploy("a")}]}
    outcome = sync(from_object(rebalancer([deploy("a")], ttl=0, status=done)),
                   governed_except(), NOW)
    assert not outcome.write
    assert outcome.status.finish_time is None
    assert outcome.finished
    assert not outcome.delete
    assert outcome.requeue_at is None


def test_a_change_while_a_request_waits_keeps_the_old_finish_time() -> None:
    """The same function: with a retry left, a changed status keeps the stored ``finishTime``
    (here one from an earlier generation)."""
    earlier = {"finishTime": "2024-05-22T11:36:10Z", "observedGeneration": 1,
               "observedWorkloads": [{"result": "Successful", "workload": deploy("a")}]}
    undelivered = Placement(kind="WorkloadSpread", namespace="default", name="ws")
    wr = from_object(rebalancer([deploy("a"), deploy("b")], generation=2, status=earlier))
    outcome = sync(wr, lambda ref: GOVERNED if ref.name == "a" else undelivered, NOW)
    assert outcome.write
    assert outcome.status.finish_time == EARLIER
    assert not outcome.finished


def test_a_final_status_that_changes_gets_the_finish_time_of_now() -> None:
    """A retried entry that succeeds changes the status: ``finishTime`` becomes now."""
    waiting = {"observedGeneration": 1, "observedWorkloads": [{"workload": deploy("a")}]}
    outcome = sync(from_object(rebalancer([deploy("a")], status=waiting)), governed_except(),
                   NOW)
    assert outcome.write
    assert outcome.status.finish_time == NOW


def test_a_removed_entry_without_result_is_dropped() -> None:
    pending = Status(observed_workloads=(ObservedWorkload(
        workload=WorkloadRef(api_version="apps/v1", kind="Deployment", name="gone",
                             namespace="default")),), observed_generation=1)
    wr = from_object(rebalancer([deploy("a")], generation=2))
    wr = type(wr)(**{**{f: getattr(wr, f) for f in wr.__struct_fields__}, "status": pending})
    outcome = sync(wr, governed_except(), NOW)
    assert [e.workload.name for e in outcome.status.observed_workloads] == ["a"]
