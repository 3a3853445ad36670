"""One reconcile round, end to end over plain JSON: subsets, deletes, status, wake-ups."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.uniteddeployment.core.reconcile import Reconciliation
from tests.uniteddeployment.world import (
    NOW,
    REVISION,
    SUBSET,
    materialize,
    owned_pod,
    run,
    settle,
    united,
    zone,
)

JSON = dict[str, Any]


def sample(**kwargs: Any) -> JSON:
    return united(
        [
            zone("subset-a", "zone-a", replicas=1),
            zone("subset-b", "zone-b", replicas="50%"),
            zone("subset-c", "zone-c"),
        ],
        **kwargs,
    )


def summary(result: Reconciliation) -> dict[str, tuple[int, int | None, str]]:
    return {k: (d.replicas, d.partition, d.action) for k, d in result.subsets.items()}


def as_json(result: Reconciliation) -> str:
    return json.dumps(
        {
            "subsets": {k: vars(v) for k, v in result.subsets.items()},
            "deletes": result.deletes,
            "status": result.status,
            "error": result.error,
            "requeue": None if result.requeue_at is None else result.requeue_at.isoformat(),
            "labels": result.pod_labels,
            "revisions": [
                result.revision_creates,
                result.revision_updates,
                result.revision_deletes,
            ],
        },
        sort_keys=True,
    )


def test_the_seed_sample_creates_one_three_and_two() -> None:
    result = run(sample())
    assert summary(result) == {
        "subset-a": (1, 0, "create"),
        "subset-b": (3, 0, "create"),
        "subset-c": (2, 0, "create"),
    }
    assert result.error is None
    assert result.deletes == []
    assert result.requeue_at is None
    (revision,) = result.revision_creates
    name = revision["metadata"]["name"]
    status = result.status
    assert status["subsetReplicas"] == {"subset-a": 1, "subset-b": 3, "subset-c": 2}
    assert status["updateStatus"] == {
        "updatedRevision": name,
        "currentPartitions": {"subset-a": 0, "subset-b": 0, "subset-c": 0},
    }
    assert status["currentRevision"] == name
    assert status["observedGeneration"] == 3
    assert status["labelSelector"] == "app=sample"
    assert [c["type"] for c in status["conditions"]] == [
        "UnitedDeploymentUpdated",
        "SubsetProvisioned",
        "SubsetUpdated",
    ]
    assert [s["name"] for s in status["subsetStatuses"]] == ["subset-a", "subset-b", "subset-c"]
    for decision in result.subsets.values():
        assert decision.workload["metadata"]["labels"][REVISION] == name


def settled_round(ud: JSON, *, ready: bool = True) -> tuple[Reconciliation, list[JSON], list[JSON]]:
    first = run(ud)
    workloads = settle(ud, first)
    revision = first.status["updateStatus"]["updatedRevision"]
    pods = [
        owned_pod(w, i, revision=revision, ready=ready)
        for w in workloads
        for i in range(w["spec"]["replicas"])
    ]
    ud = copy.deepcopy(ud)
    ud["status"] = first.status
    return run(ud, workloads, pods, first.revision_creates), workloads, pods


def test_a_settled_ud_changes_nothing_and_counts_its_pods() -> None:
    result, _, _ = settled_round(sample())
    assert {d.action for d in result.subsets.values()} == {"none"}
    assert result.revision_creates == []
    assert result.deletes == []
    status = result.status
    assert (status["replicas"], status["readyReplicas"]) == (6, 6)
    assert (status["updatedReplicas"], status["updatedReadyReplicas"]) == (6, 6)
    assert [(s["name"], s["replicas"], s["readyReplicas"]) for s in status["subsetStatuses"]] == [
        ("subset-a", 1, 1),
        ("subset-b", 3, 3),
        ("subset-c", 2, 2),
    ]


def test_a_workload_status_that_lags_its_pods_decides_nothing_the_pods_do() -> None:
    """Kruise counts a subset's updated replicas from its pods (``convertToSubset`` with
    ``CalculateUpdatedReplicas``, pkg/controller/uniteddeployment/subset_control.go), so a
    workload whose ``status.updatedReplicas`` lags is not updated, and one whose status claims a
    finished rollout while a pod is still on the old revision is."""
    ud = sample()
    first = run(ud)
    workloads = settle(ud, first)
    revision = first.status["updateStatus"]["updatedRevision"]
    pods = [owned_pod(w, i, revision=revision) for w in workloads
            for i in range(w["spec"]["replicas"])]
    lagging, ahead = workloads[1], workloads[2]
    lagging["status"]["updatedReplicas"] = 0
    old = next(p for p in pods if p["metadata"]["name"] == f"{ahead['metadata']['name']}-0")
    old["metadata"]["labels"]["apps.kruise.io/controller-revision-hash"] = "old"
    ud["status"] = first.status
    result = run(ud, workloads, pods, first.revision_creates)
    actions = {name: d.action for name, d in result.subsets.items()}
    assert actions == {"subset-a": "none", "subset-b": "none", "subset-c": "update"}


def test_a_new_template_updates_every_subset_and_current_waits_for_ready_pods() -> None:
    _, workloads, pods = settled_round(sample())
    previous = run(sample())
    ud = sample(image="nginx:2", partitions={"subset-a": 0, "subset-b": 2, "subset-c": 9})
    ud["status"] = copy.deepcopy(previous.status)
    result = run(ud, workloads, pods, previous.revision_creates)
    assert summary(result) == {
        "subset-a": (1, 0, "update"),
        "subset-b": (3, 2, "update"),
        "subset-c": (2, 2, "update"),
    }
    new = result.status["updateStatus"]["updatedRevision"]
    old = previous.status["currentRevision"]
    assert new != old
    assert result.status["currentRevision"] == old
    updated = next(c for c in result.status["conditions"] if c["type"] == "UnitedDeploymentUpdated")
    assert (updated["status"], updated["message"]) == ("False", f"updating to revision {new}")
    assert [c["revision"] for c in result.revision_creates] == [2]
    workload_b = result.subsets["subset-b"].workload
    assert workload_b["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 2
    assert workload_b["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    assert result.status["updatedReplicas"] == 0
    assert [s["partition"] for s in result.status["subsetStatuses"]] == [0, 2, 2]


def test_current_revision_moves_once_every_pod_is_updated_and_ready() -> None:
    result, workloads, pods = settled_round(sample())
    ud = sample()
    ud["status"] = copy.deepcopy(result.status)
    ud["status"]["currentRevision"] = "sample-ud-old"
    again = run(ud, workloads, pods, [])
    assert again.status["currentRevision"] == again.status["updateStatus"]["updatedRevision"]
    not_ready = [dict(p, status={"phase": "Running", "conditions": []}) for p in pods]
    waiting = run(ud, workloads, not_ready, [])
    assert waiting.status["currentRevision"] == "sample-ud-old"


def test_an_allocation_error_plans_nothing_and_keeps_the_status() -> None:
    status = {"replicas": 4, "currentRevision": "sample-ud-x", "conditions": []}
    ud = united([zone("a", replicas=5), zone("b", replicas=3)], replicas=6, status=status)
    result = run(ud)
    assert result.error == (
        "specified subsets' replica (8) is greater than UnitedDeployment replica (6)"
    )
    assert result.subsets == {}
    assert result.status == status
    assert result.requeue_at is None


def test_subsets_gone_from_spec_and_other_kinds_are_deleted() -> None:
    first = run(united([zone("a"), zone("b")], key="cloneSetTemplate"))
    clones = settle({}, first)
    result = run(united([zone("a")], key="cloneSetTemplate"), clones)
    assert [w["metadata"]["labels"][SUBSET] for w in result.deletes] == ["b"]
    switched = run(united([zone("a")]), clones)
    assert sorted(w["kind"] for w in switched.deletes) == ["CloneSet", "CloneSet"]
    assert summary(switched) == {"a": (6, 0, "create")}
    assert switched.subsets["a"].workload["kind"] == "StatefulSet"


def test_a_ud_being_deleted_is_left_alone() -> None:
    ud = sample(status={"replicas": 6})
    ud["metadata"]["deletionTimestamp"] = "2026-01-01T11:00:00Z"
    result = run(ud)
    assert result.subsets == {}
    assert result.status == {"replicas": 6}
    assert result.error is None


def test_creating_a_subset_under_adaptive_wakes_up_after_the_critical_seconds() -> None:
    ud = united(
        [zone("a", maxReplicas=3), zone("b")],
        replicas=5,
        key="deploymentTemplate",
        strategy={"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 20}},
    )
    result = run(ud)
    assert summary(result) == {"a": (3, 0, "create"), "b": (2, 0, "create")}
    assert result.requeue_at == NOW + timedelta(seconds=20)
    fixed = copy.deepcopy(ud)
    del fixed["spec"]["topology"]["scheduleStrategy"]
    assert run(fixed).requeue_at is None


def stuck_pod(owner: JSON, index: int, created_ago: int) -> JSON:
    found = owned_pod(owner, index, ready=False, phase="Pending")
    found["metadata"]["creationTimestamp"] = (NOW - timedelta(seconds=created_ago)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    del found["spec"]["nodeName"]
    found["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    ]
    return found


def adaptive_ud() -> JSON:
    return united(
        [zone("a", maxReplicas=3), zone("b")],
        replicas=5,
        key="cloneSetTemplate",
        strategy={"type": "Adaptive"},
    )


def test_adaptive_moves_stuck_pods_to_the_next_subset() -> None:
    ud = adaptive_ud()
    first = run(ud)
    workloads = [
        materialize(d.workload, ready=1 if n == "a" else None) for n, d in first.subsets.items()
    ]
    a_sts = workloads[0]
    pods = [owned_pod(a_sts, 0), stuck_pod(a_sts, 1, 60), stuck_pod(a_sts, 2, 10)]
    ud["status"] = first.status
    result = run(ud, workloads, pods, first.revision_creates)
    assert summary(result) == {"a": (1, 0, "update"), "b": (4, 0, "update")}
    a_status = result.status["subsetStatuses"][0]
    assert a_status["conditions"][0]["status"] == "False"
    assert a_status["conditions"][0]["message"] == "timeout pending pods found"
    # The younger stuck pod is re-checked once it has waited 30 seconds.
    assert result.requeue_at == NOW + timedelta(seconds=20)


def test_reservation_labels_the_pods_and_filters_the_selector() -> None:
    ud = united(
        [zone("a", maxReplicas=2), zone("b")],
        replicas=3,
        key="cloneSetTemplate",
        strategy={"type": "Adaptive", "adaptive": {"reserveUnschedulablePods": True}},
    )
    first = run(ud)
    workloads = [materialize(d.workload) for d in first.subsets.values()]
    revision = first.status["updateStatus"]["updatedRevision"]
    pods = [owned_pod(workloads[0], 0, revision=revision), stuck_pod(workloads[0], 1, 60)]
    ud["status"] = first.status
    result = run(ud, workloads, pods, first.revision_creates)
    assert result.pod_labels == {
        "default/sample-ud-a-x1-0": {"apps.kruise.io/united-deployment-reserved-pod": "false"},
        "default/sample-ud-a-x1-1": {"apps.kruise.io/united-deployment-reserved-pod": "true"},
    }
    assert result.status["labelSelector"] == (
        "app=sample,apps.kruise.io/united-deployment-reserved-pod=false"
    )
    assert result.status["reservedPods"] == 1
    assert result.status["replicas"] == 2
    # The reserved pod's replica is placed again in subset b as a substitute.
    assert result.subsets["b"].replicas == 2


_replicas_values = st.one_of(
    st.none(),
    st.integers(0, 8),
    st.sampled_from(["25%", "50%", "100%", "abc", "%", "-5%", "101%", "7", "", "1.5%"]),
)


@settings(max_examples=60, deadline=None)
@given(
    total=st.one_of(st.none(), st.integers(0, 12)),
    values=st.lists(_replicas_values, min_size=1, max_size=4),
    key=st.sampled_from(["statefulSetTemplate", "cloneSetTemplate", "deploymentTemplate"]),
)
def test_the_plan_is_deterministic_and_errors_have_their_shape(
    total: int | None, values: list[object], key: str
) -> None:
    subsets = [
        zone(f"s{i}", **({} if v is None else {"replicas": v})) for i, v in enumerate(values)
    ]
    ud = united(subsets, replicas=total, key=key, status={"observedGeneration": 1})
    first = run(ud)
    assert as_json(first) == as_json(run(copy.deepcopy(ud)))
    if first.error is not None:
        assert first.subsets == {}
        assert first.status == {"observedGeneration": 1}
        assert first.requeue_at is None
    else:
        assert list(first.subsets) == [s["name"] for s in subsets]
        if total is not None:
            assert sum(d.replicas for d in first.subsets.values()) == total


_unparsable = st.sampled_from(["abc", "%", "-5%", "101%", "7", "", "1.5%", "50"])


@settings(max_examples=40, deadline=None)
@given(total=st.integers(1, 12), bad=_unparsable, others=st.lists(st.integers(0, 3), max_size=3))
def test_an_unparsable_subset_replicas_counts_as_unspecified(
    total: int, bad: str, others: list[int]
) -> None:
    fixed = [zone(f"f{i}", replicas=v) for i, v in enumerate(others)]
    with_bad = run(united([zone("x", replicas=bad), *fixed], replicas=total))
    without = run(united([zone("x"), *fixed], replicas=total))
    assert with_bad.error == without.error
    assert summary(with_bad) == summary(without)


def rebalanced_ud(annotations: dict[str, str] | None) -> JSON:
    return united(
        [zone("a", maxReplicas=3), zone("b")],
        replicas=5,
        key="cloneSetTemplate",
        strategy={"type": "Adaptive"},
        annotations=annotations,
    )


def observed_split(ud: JSON, a: int, b: int) -> tuple[JSON, list[JSON], list[JSON]]:
    """The UD's CloneSets at a/b replicas, every pod ready, as a settled earlier round left them."""
    first = run(ud)
    workloads = []
    for name, count in (("a", a), ("b", b)):
        workload = copy.deepcopy(first.subsets[name].workload)
        workload["spec"]["replicas"] = count
        workloads.append(materialize(workload))
    ud = copy.deepcopy(ud)
    ud["status"] = first.status
    return ud, workloads, first.revision_creates


def test_a_rebalance_request_steps_toward_the_fresh_placement_and_is_then_handled() -> None:
    request = {"rebalance.spreadbus.io/request": "wr-uid"}
    placements = []
    a, b = 1, 4
    for _ in range(6):
        ud, workloads, revisions = observed_split(rebalanced_ud(request), a, b)
        result = run(ud, workloads, [], revisions)
        a, b = result.subsets["a"].replicas, result.subsets["b"].replicas
        placements.append((a, b, result.rebalance_handled))
        if result.rebalance_handled:
            break
    # One replica in motion at a time (a quarter of 5, at least one), never fewer than 5 running.
    assert placements == [(2, 4, None), (3, 3, None), (3, 2, "wr-uid")]


def test_without_a_pending_request_adaptive_keeps_the_ready_pods_where_they_are() -> None:
    for marks in (
        None,
        {"rebalance.spreadbus.io/request": "wr", "rebalance.spreadbus.io/handled": "wr"},
    ):
        ud, workloads, revisions = observed_split(rebalanced_ud(marks), 1, 4)
        result = run(ud, workloads, [], revisions)
        assert (result.subsets["a"].replicas, result.subsets["b"].replicas) == (1, 4)
        assert result.rebalance_handled is None


def test_a_deployment_subset_counts_the_pods_of_its_replicasets() -> None:
    ud = united([zone("a")], replicas=2, key="deploymentTemplate")
    first = run(ud)
    deploy = materialize(first.subsets["a"].workload)
    revision = first.status["updateStatus"]["updatedRevision"]
    rs = copy.deepcopy(deploy)
    rs["kind"] = "ReplicaSet"
    rs["metadata"].update(name=deploy["metadata"]["name"] + "-abc", uid="rs-uid")
    rs["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": deploy["metadata"]["name"],
            "uid": deploy["metadata"]["uid"],
            "controller": True,
        }
    ]
    pods = [owned_pod(rs, 0, revision=revision), owned_pod(rs, 1, revision="old", ready=False)]
    ud["status"] = first.status
    result = run(ud, [deploy, rs], pods, first.revision_creates)
    assert (result.status["updatedReplicas"], result.status["updatedReadyReplicas"]) == (1, 1)
    assert result.subsets["a"].partition == 0
    assert "updateStrategy" not in result.subsets["a"].workload["spec"]


def test_updating_an_unschedulable_reserved_subset_never_writes_a_negative_max_unavailable() -> (
    None
):
    ud = united(
        [zone("a", maxReplicas=2), zone("b")],
        replicas=3,
        key="cloneSetTemplate",
        strategy={"type": "Adaptive", "adaptive": {"reserveUnschedulablePods": True}},
    )
    first = run(ud)
    a = materialize(first.subsets["a"].workload)
    b = materialize(first.subsets["b"].workload)
    # A scale-down race: more ready pods than a's spec.replicas, and one stuck pod reserved.
    a["status"]["readyReplicas"] = 3
    revision = first.status["updateStatus"]["updatedRevision"]
    pods = [owned_pod(a, 0, revision=revision), stuck_pod(a, 1, 60)]
    # A third pod is still being removed: fewer pods on the revision than status.replicas, so
    # a's rollout is unfinished (counted from the pods, as Kruise counts it).
    a["status"]["replicas"] = 3
    ud["status"] = first.status
    result = run(ud, [a, b], pods, first.revision_creates)
    decision = result.subsets["a"]
    assert decision.action == "update"
    assert decision.workload["spec"]["updateStrategy"]["maxUnavailable"] == 1
    assert "maxUnavailable" not in result.subsets["b"].workload["spec"]["updateStrategy"]


def test_a_ud_without_a_template_is_an_error_that_plans_nothing() -> None:
    ud = sample(status={"replicas": 1})
    ud["spec"]["template"] = {}
    result = run(ud)
    assert result.error is not None
    assert result.error.startswith("spec.template: should provide one of")
    assert result.subsets == {}
    assert result.status == {"replicas": 1}


def budget(kind: str, allowed: int, **spec: Any) -> JSON:
    group, field = (
        ("policy/v1", "disruptionsAllowed")
        if kind == "PodDisruptionBudget"
        else ("apps.kruise.io/v1alpha1", "unavailableAllowed")
    )
    return {
        "apiVersion": group,
        "kind": kind,
        "metadata": {"namespace": "default", "name": "budget"},
        "spec": spec,
        "status": {field: allowed},
    }


def test_a_disruption_budget_holds_back_the_ready_pods_a_rebalance_takes_away() -> None:
    request = {"rebalance.spreadbus.io/request": "wr-uid"}
    ud, workloads, revisions = observed_split(rebalanced_ud(request), 2, 4)
    pods = [owned_pod(w, i) for w in workloads for i in range(w["spec"]["replicas"])]
    free = run(ud, workloads, pods, revisions)
    assert (free.subsets["a"].replicas, free.subsets["b"].replicas) == (3, 3)
    assert free.rebalance_handled is None
    for held in (
        budget("PodDisruptionBudget", 0, selector={"matchLabels": {"app": "sample"}}),
        budget(
            "PodUnavailableBudget", 0, targetRef={"kind": "UnitedDeployment", "name": "sample-ud"}
        ),
    ):
        result = run(ud, [*workloads, held], pods, revisions)
        # No ready pod may go, so nothing can move: a does not grow and the request is closed.
        assert result.subsets["a"].replicas == 2
        assert result.rebalance_handled == "wr-uid"
    elsewhere = budget("PodDisruptionBudget", 0, selector={"matchLabels": {"app": "other"}})
    other = run(ud, [*workloads, elsewhere], pods, revisions)
    assert (other.subsets["a"].replicas, other.rebalance_handled) == (3, None)
