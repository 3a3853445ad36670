"""A budget's status as Kruise's PUB controller computes it: pods, expected count, rounding,
expiry of recorded pods, counters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubesemantics.intstr import IntOrStrError
from spreadbus.features.podunavailablebudget.core.budget import (
    BudgetComputation,
    compute_status,
    desired_available,
)
from spreadbus.features.podunavailablebudget.core.model import (
    format_time,
    from_object,
    status_to_json,
)
from tests.podunavailablebudget.builders import budget, pod, replicaset, status, workload

JSON = dict[str, Any]
NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def at(seconds: int) -> str:
    return format_time(NOW + timedelta(seconds=seconds))


def compute(pub: JSON, *objects: JSON) -> BudgetComputation:
    pods = [o for o in objects if o["kind"] == "Pod"]
    others = [o for o in objects if o["kind"] != "Pod"]
    return compute_status(from_object(pub), workloads=others, pods=pods, now=NOW)


def seed_objects(count: int = 5, replicas: int = 5) -> list[JSON]:
    deployment = workload(replicas=replicas)
    rs = replicaset(deployment)
    return [deployment, rs, *(pod(f"web-server-abc-{i}", owner=rs) for i in range(count))]


def test_the_seed_budget_over_five_replicas() -> None:
    result = compute(budget(generation=4), *seed_objects())
    assert status_to_json(result.status) == {
        "observedGeneration": 4,
        "unavailableAllowed": 3,
        "currentAvailable": 5,
        "desiredAvailable": 2,
        "totalReplicas": 5,
    }
    assert result.changed
    assert result.error is None
    assert result.requeue_at is None


@pytest.mark.parametrize(
    ("max_unavailable", "min_available", "total", "desired"),
    [
        ("30%", None, 10, 7),
        ("10%", None, 15, 13),
        ("30%", None, 1, 0),
        ("33%", None, 10, 6),
        (None, "33%", 10, 4),
        (None, 100, 10, 100),
        (2, None, 10, 8),
        (20, None, 10, 0),
        ("30%", None, -1, 0),
        (None, None, 10, 0),
        ("100%", None, 7, 0),
        (None, "0%", 7, 0),
    ],
)
def test_desired_available_rounds_percentages_up(
    max_unavailable: object, min_available: object, total: int, desired: int
) -> None:
    pub = from_object(budget(max_unavailable=max_unavailable, min_available=min_available))
    assert desired_available(pub, total) == desired


def test_a_string_that_is_not_a_percentage_cannot_be_scaled() -> None:
    with pytest.raises(IntOrStrError):
        desired_available(from_object(budget(max_unavailable="3")), 10)


def test_a_failed_computation_keeps_the_counters_and_says_why() -> None:
    stored = status(1, current=4, desired=3, total=5)
    result = compute(budget(max_unavailable="3", status=stored), *seed_objects())
    assert result.error is not None
    assert "string is not a percentage" in result.error
    written = status_to_json(result.status)
    assert {k: written[k] for k in stored} == stored
    (condition,) = written["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "Calculated", "False", "CalculateExpectedPodCountFailed")
    assert [e.reason for e in result.events] == ["CalculateExpectedPodCountFailed"]
    assert len(result.pods) == 5


def test_recorded_pods_expire_after_20_and_10_seconds() -> None:
    maps = {
        "disruptedPods": {"web-server-abc-0": at(-20), "web-server-abc-1": at(-21),
                          "gone": at(0)},
        "unavailablePods": {"web-server-abc-2": at(-10), "web-server-abc-3": at(-11)},
    }
    result = compute(budget(status=status(0, **maps)), *seed_objects())
    written = status_to_json(result.status)
    assert written["disruptedPods"] == {"web-server-abc-0": at(-20)}
    assert written["unavailablePods"] == {"web-server-abc-2": at(-10)}
    assert written["currentAvailable"] == 3  # abc-0 and abc-2 are recorded
    assert written["unavailableAllowed"] == 1
    assert result.requeue_at == NOW
    assert [(e.reason, e.pod) for e in result.events] == [("NotDeleted", "web-server-abc-1")]
    assert result.events[0].message == (
        "Pod was expected by PUB web/web-server-pub to be deleted but it wasn't")


def test_the_next_recheck_is_the_earliest_expiry() -> None:
    maps = {"disruptedPods": {"web-server-abc-0": at(-5)},
            "unavailablePods": {"web-server-abc-1": at(-5)}}
    result = compute(budget(status=status(0, **maps)), *seed_objects())
    assert result.requeue_at == NOW + timedelta(seconds=5)


def test_unready_and_finished_pods_do_not_count_and_terminating_ones_are_not_listed() -> None:
    deployment, rs, *pods = seed_objects()
    pods[0] = pod("web-server-abc-0", owner=rs, ready=False)
    pods[1] = pod("web-server-abc-1", owner=rs, phase="Succeeded")
    pods[2] = pod("web-server-abc-2", owner=rs, deleting=True)
    maps = {"disruptedPods": {"web-server-abc-2": at(-1)}}
    result = compute(budget(status=status(0, **maps)), deployment, rs, *pods)
    assert result.status.current_available == 2
    assert result.status.disrupted_pods == {}
    assert result.pods == ("web-server-abc-0", "web-server-abc-3", "web-server-abc-4")


def test_a_deployment_counts_its_replicas_not_its_pods() -> None:
    deployment = workload(replicas=3)
    old_rs, new_rs = replicaset(deployment, "old", 2), replicaset(deployment, "new", 2)
    pods = [pod(f"a{i}", owner=old_rs) for i in range(2)] + [
        pod(f"b{i}", owner=new_rs) for i in range(2)]
    result = compute(budget(max_unavailable=1), deployment, old_rs, new_rs, *pods)
    assert (result.status.total_replicas, result.status.current_available,
            result.status.desired_available, result.status.unavailable_allowed) == (3, 4, 2, 2)


def test_a_selector_counts_each_deployment_once_across_its_replicasets() -> None:
    deployment = workload(replicas=10)
    old_rs, new_rs = replicaset(deployment, "old"), replicaset(deployment, "new")
    pods = [pod("a", owner=old_rs), pod("b", owner=new_rs), pod("bare"),
            pod("elsewhere", owner=new_rs, namespace="other"),
            pod("other-app", owner=new_rs, labels={"app": "api"})]
    pub = budget(target=None, selector={"matchLabels": {"app": "web"}}, max_unavailable=1)
    result = compute(pub, deployment, old_rs, new_rs, *pods)
    assert result.status.total_replicas == 10
    assert result.pods == ("a", "b", "bare")
    assert result.status.current_available == 3


def test_a_selector_sums_distinct_workloads() -> None:
    web, api = workload(replicas=3), workload("CloneSet", "api", replicas=4,
                                             api_version="apps.kruise.io/v1alpha1")
    pods = [pod("w", owner=web), pod("a", owner=api)]
    pub = budget(target=None, selector={"matchLabels": {"app": "web"}})
    assert compute(pub, web, api, *pods).status.total_replicas == 7


def test_protect_total_replicas_replaces_the_workload_count() -> None:
    notes = {"pub.kruise.io/protect-total-replicas": "10"}
    assert compute(budget(annotations=notes), *seed_objects()).status.total_replicas == 10
    bad = {"pub.kruise.io/protect-total-replicas": "ten"}
    assert compute(budget(annotations=bad), *seed_objects()).status.total_replicas == 0


def test_a_workload_scaled_to_zero_has_no_pods() -> None:
    result = compute(budget(), *seed_objects(replicas=0))
    assert result.pods == ()
    assert status_to_json(result.status)["totalReplicas"] == 0
    assert [e.reason for e in result.events] == ["NoPods"]


def test_a_deleting_or_missing_workload_has_no_pods() -> None:
    _, rs, *pods = seed_objects()
    deleting = workload(deleting=True)
    assert compute(budget(), deleting, rs, *pods).status.total_replicas == 0
    result = compute(budget(), rs, *pods)
    assert (result.pods, result.status.total_replicas) == ((), 0)


def test_an_int_min_available_keeps_protecting_after_the_workload_is_gone() -> None:
    result = compute(budget(max_unavailable=None, min_available=2))
    assert result.status.desired_available == 2


def test_a_cloneset_target() -> None:
    cs = workload("CloneSet", "web-server", replicas=2, api_version="apps.kruise.io/v1alpha1")
    pub = budget(target=("apps.kruise.io/v1alpha1", "CloneSet", "web-server"), max_unavailable=1)
    result = compute(pub, cs, pod("c0", owner=cs), pod("c1", owner=cs), pod("stray"))
    assert (result.pods, result.status.unavailable_allowed) == (("c0", "c1"), 1)


def test_a_united_deployment_target_counts_its_subset_pods() -> None:
    ud = workload("UnitedDeployment", "web-ud", replicas=4,
                  api_version="apps.kruise.io/v1alpha1")
    subset_a = workload("CloneSet", "web-ud-a", replicas=2,
                        api_version="apps.kruise.io/v1alpha1", owner=ud)
    subset_b = workload("Deployment", "web-ud-b", replicas=2, owner=ud)
    rs = replicaset(subset_b)
    pods = [pod("a0", owner=subset_a), pod("a1", owner=subset_a), pod("b0", owner=rs),
            pod("x", owner=workload())]
    pub = budget(target=("apps.kruise.io/v1alpha1", "UnitedDeployment", "web-ud"),
                 max_unavailable="25%")
    result = compute(pub, ud, subset_a, subset_b, rs, *pods)
    assert result.pods == ("a0", "a1", "b0")
    assert (result.status.total_replicas, result.status.desired_available,
            result.status.unavailable_allowed) == (4, 3, 0)


def test_pods_without_the_annotation_are_to_be_annotated() -> None:
    deployment, rs, *pods = seed_objects(2)
    pods[1] = pod("web-server-abc-1", owner=rs, related=None)
    result = compute(budget(), deployment, rs, *pods)
    assert result.pods_to_annotate == ("web-server-abc-1",)


def test_an_unchanged_status_is_not_written_again() -> None:
    first = compute(budget(generation=2), *seed_objects())
    stored = status_to_json(first.status)
    again = compute(budget(generation=2, status=stored), *seed_objects())
    assert not again.changed
    assert compute(budget(generation=3, status=stored), *seed_objects()).changed


def test_pods_of_a_replicaset_missing_from_the_input_still_count_for_their_deployment() -> None:
    deployment = workload(replicas=4)
    listed = replicaset(deployment, "new")
    unlisted = replicaset(deployment, "old")
    deleting_rs = {**replicaset(deployment, "gone"),
                   "metadata": {**replicaset(deployment, "gone")["metadata"],
                                "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    pods = [pod("n0", owner=listed), pod("o0", owner=unlisted), pod("g0", owner=deleting_rs),
            pod("x0", owner=replicaset(workload(name="api"), "zzz"))]
    result = compute(budget(max_unavailable=1), deployment, listed, deleting_rs, *pods)
    assert result.pods == ("n0", "o0")


def test_the_total_annotation_counts_only_where_kruise_reads_it() -> None:
    total = {"pub.kruise.io/protect-total-replicas": "7"}
    no_selector = budget(target=None, annotations=total)
    assert compute(no_selector, *seed_objects()).status.total_replicas == 0
    unknown_operator = budget(target=None, annotations=total, selector={
        "matchExpressions": [{"key": "app", "operator": "Near"}]})
    result = compute(unknown_operator, *seed_objects())
    assert (result.pods, result.status.total_replicas, result.error) == ((), 0, None)
    in_nothing = budget(target=None, annotations=total, selector={
        "matchExpressions": [{"key": "app", "operator": "In"}]})
    result = compute(in_nothing, *seed_objects())
    assert (result.pods, result.status.total_replicas) == ((), 7)
    missing_target = budget(target=("apps/v1", "Deployment", "absent"), annotations=total)
    assert compute(missing_target, *seed_objects()).status.total_replicas == 7
    empty = budget(annotations={"pub.kruise.io/protect-total-replicas": ""})
    assert compute(empty, *seed_objects()).status.total_replicas == 5


def test_a_custom_kind_that_owns_no_pods_lists_them_by_its_scale_selector() -> None:
    rollout = workload("Rollout", "web-server", replicas=3, api_version="argoproj.io/v1alpha1")
    rollout["status"] = {"selector": "app=web"}
    rs = workload("ReplicaSet", "web-server-x", replicas=3, owner=rollout)
    pods = [pod("r0", owner=rs), pod("r1", owner=rs), pod("api", labels={"app": "api"})]
    pub = budget(target=("argoproj.io/v1alpha1", "Rollout", "web-server"), max_unavailable=1)
    result = compute(pub, rollout, rs, *pods)
    assert (result.pods, result.status.total_replicas, result.status.unavailable_allowed) == (
        ("r0", "r1"), 3, 0)
    no_replicas = workload("Rollout", "web-server", replicas=None,
                           api_version="argoproj.io/v1alpha1")
    assert compute(pub, no_replicas, *pods).status.total_replicas == -1


def test_an_unvalidated_selector_selects_as_written() -> None:
    not_in_nothing = budget(target=None, selector={
        "matchExpressions": [{"key": "app", "operator": "NotIn"}]})
    assert len(compute(not_in_nothing, *seed_objects()).pods) == 5
    exists_with_values = budget(target=None, selector={
        "matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]})
    assert len(compute(exists_with_values, *seed_objects()).pods) == 5
    everything = budget(target=None, selector={})
    assert compute(everything, *seed_objects(), pod("bare", labels={})).pods[-1] == "bare"


def test_a_target_with_an_unparsable_api_version_names_nothing() -> None:
    result = compute(budget(target=("apps/v1/x", "Deployment", "web-server")), *seed_objects())
    assert (result.pods, result.status.total_replicas) == ((), 0)
