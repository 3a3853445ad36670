"""Pods kept counted per owner (what a planner round reads instead of every pod).

- folding any sequence of pod changes into the followed pods gives the groups built from scratch
  from the pods as they end up;
- the counts equal counting the pods one by one;
- judging only the listed pods answers exactly what judging every pod answers, in reservation
  mode and under Adaptive.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesemantics.pod_status import active_deleting_any_value, has_ready_condition
from spreadbus.features.uniteddeployment.core.adaptive import default_adaptive_round
from spreadbus.features.uniteddeployment.core.model import ScheduleStrategy
from spreadbus.features.uniteddeployment.core.pod_groups import (
    OwnerKey,
    OwnerPods,
    judged_pods,
    off_revision,
    pending_pods,
    updated_counts,
)
from spreadbus.features.uniteddeployment.core.reservation import reservation_round
from spreadbus.features.uniteddeployment.planning.family import Node
from spreadbus.features.uniteddeployment.planning.followed_pods import (
    FollowedPods,
    facts_from_json,
    owner_node,
)

NOW = datetime(2027, 3, 1, 12, 0, tzinfo=UTC)
REVISION = "apps.kruise.io/controller-revision-hash"
RESERVED = "apps.kruise.io/united-deployment-reserved-pod"
OWNERS = [
    {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "ud-a", "uid": "u1"},
    {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "ud-a", "uid": "u2"},
    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "ud-b-1", "uid": "u3"},
]
NODES: list[Node] = [
    ("apps.kruise.io", "CloneSet", "default", "ud-a"),
    ("apps", "ReplicaSet", "default", "ud-b-1"),
]
STRATEGY = ScheduleStrategy(
    type="Adaptive",
    has_adaptive=True,
    reschedule_critical_seconds=30,
    unschedulable_seconds=300,
    reserve_unschedulable_pods=True,
)


def stamp(seconds_ago: int) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


times = st.sampled_from([0, 10, 29, 30, 31, 200, 299, 300, 301, 1000]).map(stamp)


@st.composite
def pods(draw: st.DrawFn, name: str) -> dict[str, Any]:
    labels: dict[str, str] = {"app": "s"}
    revision = draw(st.sampled_from(["r1", "r2", None]))
    if revision is not None:
        labels[REVISION] = revision
    reserved = draw(st.sampled_from(["true", "false", "other", None]))
    if reserved is not None:
        labels[RESERVED] = reserved
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": labels,
                            "creationTimestamp": draw(times)}
    owner = draw(st.sampled_from([*OWNERS, None]))
    if owner is not None:
        meta["ownerReferences"] = [{**owner, "controller": True}]
    if draw(st.booleans()) and draw(st.booleans()):
        meta["deletionTimestamp"] = draw(times)
    unschedulable = draw(st.booleans())
    conditions = [
        {"type": "PodScheduled", "status": "False" if unschedulable else "True",
         "reason": "Unschedulable" if unschedulable else None,
         "lastTransitionTime": draw(times)},
        {"type": "Ready", "status": draw(st.sampled_from(["True", "False"])),
         "lastTransitionTime": draw(times)},
    ]
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "nginx"}]}
    if draw(st.booleans()):
        spec["nodeName"] = "node-1"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
            "status": {"phase": draw(st.sampled_from(["Pending", "Running", "Succeeded",
                                                      "Failed"])),
                       "conditions": conditions}}


NAMES = [f"p{i}" for i in range(6)]
changes = st.lists(
    st.sampled_from(NAMES).flatmap(
        lambda name: st.tuples(st.just(name), st.one_of(st.none(), pods(name)))),
    max_size=40,
)


def from_scratch(final: dict[str, dict[str, Any]]) -> dict[OwnerKey, OwnerPods]:
    groups: dict[OwnerKey, OwnerPods] = {}
    for pod_id, pod in final.items():
        facts = facts_from_json(msgspec.json.encode(pod))
        if facts.owner is not None:
            groups.setdefault(facts.owner, OwnerPods()).put(pod_id, facts)
    return groups


@settings(max_examples=300, deadline=None)
@given(changes)
def test_folding_any_changes_equals_grouping_from_scratch(steps: list[tuple[str, Any]]) -> None:
    followed = FollowedPods()
    final: dict[str, dict[str, Any]] = {}
    for pod_id, pod in steps:
        followed.put(pod_id, None if pod is None else facts_from_json(msgspec.json.encode(pod)))
        if pod is None:
            final.pop(pod_id, None)
        else:
            final[pod_id] = pod
    scratch = from_scratch(final)
    for node in NODES:
        expected = {k: g for k, g in scratch.items() if owner_node(k) == node}
        assert followed.owned_by(node) == expected
    assert len(followed) == len(final)


@settings(max_examples=200, deadline=None)
@given(st.lists(pods("x"), max_size=12), st.sampled_from(["r1", "r2", ""]))
def test_counts_equal_counting_pod_by_pod(drawn: list[dict[str, Any]], revision: str) -> None:
    groups = list(from_scratch({str(i): p for i, p in enumerate(drawn)}).values())
    owned = [p for p in drawn if "ownerReferences" in p["metadata"]]
    on = [p for p in owned if p["metadata"]["labels"].get(REVISION, "") == revision]
    active = [p for p in on if active_deleting_any_value(p)]
    assert updated_counts(groups, revision) == (len(active), sum(map(has_ready_condition, active)))
    assert off_revision(groups, revision) == len(owned) - len(on)


def subset_pods(drawn: list[dict[str, Any]]) -> tuple[list[OwnerPods], list[dict[str, Any]]]:
    """One owner's pods, named apart, as groups and as the list the reconcile used to judge."""
    for i, pod in enumerate(drawn):
        pod["metadata"]["name"] = f"pod-{len(drawn) - i:02d}"
        pod["metadata"]["ownerReferences"] = [{**OWNERS[0], "controller": True}]
    groups = list(from_scratch({str(i): p for i, p in enumerate(drawn)}).values())
    every = [facts_from_json(msgspec.json.encode(p)).pod() for p in drawn]
    return groups, sorted(every, key=lambda p: p["metadata"]["name"])


@settings(max_examples=400, deadline=None)
@given(
    st.lists(pods("x"), max_size=10),
    st.booleans(),
    st.one_of(st.none(), times),
    st.sampled_from(["r1", "r2"]),
)
def test_reservation_judges_the_listed_pods_as_it_judges_all(
    drawn: list[dict[str, Any]], marked: bool, updated_at: str | None, revision: str
) -> None:
    groups, every = subset_pods(drawn)
    conditions = [{"type": "Schedulable", "status": "False" if marked else "True",
                   "lastTransitionTime": stamp(100)}]
    updated = None if updated_at is None else {
        "type": "UnitedDeploymentUpdated", "status": "False", "lastTransitionTime": updated_at}
    listed = judged_pods(groups, updated_revision=revision, ud_updated_condition=updated,
                         timeout=timedelta(seconds=30), now=NOW)

    def judge(pods: list[dict[str, Any]]) -> Any:
        return reservation_round(conditions, pods=pods, updated_revision=revision,
                                 ud_updated_condition=updated, strategy=STRATEGY, now=NOW)

    assert judge(listed) == judge(every)


@settings(max_examples=300, deadline=None)
@given(st.lists(pods("x"), max_size=10), st.one_of(st.none(), times))
def test_adaptive_judges_the_pending_pods_as_it_judges_all(
    drawn: list[dict[str, Any]], marked_at: str | None
) -> None:
    groups, every = subset_pods(drawn)
    conditions = [] if marked_at is None else [
        {"type": "Schedulable", "status": "False", "lastTransitionTime": marked_at}]

    def judge(pods: list[dict[str, Any]]) -> Any:
        return default_adaptive_round(conditions, replicas=len(drawn) + 1, ready_replicas=0,
                                      pods=pods, strategy=STRATEGY, now=NOW)

    assert judge(pending_pods(groups)) == judge(every)
