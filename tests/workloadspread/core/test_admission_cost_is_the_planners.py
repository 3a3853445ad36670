"""The deletion cost the webhook writes at admission is the one the planner computes right after.

Scenario: a WorkloadSpread over a Deployment (or its ReplicaSet, a CloneSet, a StatefulSet), pods
created one after another through the admission (some from an older ReplicaSet of the
Deployment), each admitted pod then present in the cluster; after each admission the planner
plans over every pod. Whenever the admission wrote a cost, the planner wants exactly that value on
the pod and has nothing to patch; whenever the rule says the value is known, the admission wrote it.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.admission import admit_create, cost_version
from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.deletion_cost import admission_cost
from spreadbus.features.workloadspread.core.model import DELETION_COST_ANNOTATION, from_object
from spreadbus.features.workloadspread.core.occupancy import (
    loads_from_pods,
    subset_limit,
    subset_minimum,
)
from spreadbus.features.workloadspread.core.reconcile import (
    latest_version,
    plan_workloadspread,
    workload_pods,
)
from spreadbus.features.workloadspread.core.target import lookup_in, workload_replicas
from tests.workloadspread.core.builders import deployment, replicaset, subset, workloadspread

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
JSON = dict[str, Any]


def _old_replicaset(deploy: JSON) -> JSON:
    """A ReplicaSet of the Deployment's previous template (another image)."""
    old = replicaset(deploy, "old")
    old["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:previous"
    return old


def _statefulset() -> JSON:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": "default", "uid": "uid-sts-web"},
        "spec": {"replicas": 10, "template": deployment()["spec"]["template"]},
    }


def _cloneset(replicas: int) -> JSON:
    return {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "CloneSet",
        "metadata": {"name": "web", "namespace": "default", "uid": "uid-cs-web"},
        "spec": {"replicas": replicas, "template": deployment()["spec"]["template"]},
    }


def _new_pod(owner: JSON, name: str) -> JSON:
    """A pod as its controller sends it: the owner's template, an owner reference."""
    template = (owner.get("spec") or {}).get("template") or {}
    meta = copy.deepcopy(template.get("metadata") or {})
    labels = {**(meta.get("labels") or {}), **(owner["metadata"].get("labels") or {})}
    meta.update(
        {
            "name": name,
            "namespace": "default",
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": owner["apiVersion"],
                    "kind": owner["kind"],
                    "name": owner["metadata"]["name"],
                    "uid": owner["metadata"]["uid"],
                    "controller": True,
                }
            ],
        }
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": copy.deepcopy(template.get("spec") or {}),
    }


def _subset(pod: JSON) -> str | None:
    matched = pod_state.matched(pod)
    return matched.subset if matched is not None else None


_limits = st.one_of(st.none(), st.integers(0, 5), st.sampled_from(["20%", "50%"]))


@settings(max_examples=150, deadline=None)
@given(
    limits=st.lists(_limits, min_size=1, max_size=4),
    minimums=st.lists(st.integers(0, 3), min_size=4, max_size=4),
    replicas=st.integers(1, 12),
    target=st.sampled_from(["Deployment", "ReplicaSet", "CloneSet", "StatefulSet"]),
    creates=st.lists(st.booleans(), min_size=1, max_size=14),
    template_cost=st.booleans(),
)
def test_an_admission_cost_is_what_the_planner_wants_right_after(
    limits: list[int | str | None],
    minimums: list[int],
    replicas: int,
    target: str,
    creates: list[bool],
    template_cost: bool,
) -> None:
    deploy = deployment(replicas=replicas)
    if template_cost:  # a value the template carries is replaced, as the planner replaces it
        deploy["spec"]["template"]["metadata"]["annotations"] = {DELETION_COST_ANNOTATION: "7"}
    new_rs, old_rs = replicaset(deploy, "new"), _old_replicaset(deploy)
    new_rs["spec"]["replicas"] = replicas
    workload = {
        "Deployment": deploy,
        "ReplicaSet": new_rs,
        "CloneSet": _cloneset(replicas),
        "StatefulSet": _statefulset(),
    }[target]
    subsets = []
    for i, limit in enumerate(limits):
        allowed = limit is None or (isinstance(limit, int) and minimums[i] <= limit)
        extra = {"minReplicas": minimums[i]} if allowed else {}
        subsets.append(subset(f"s{i}", limit, **extra))
    name = workload["metadata"]["name"]
    api_version = workload["apiVersion"]
    ws = from_object(workloadspread(*subsets, kind=target, target=name, api_version=api_version))
    objects = [deploy, new_rs, old_rs, workload]
    lookup = lookup_in(objects)
    whitelist = Whitelist()
    replicasets = [new_rs, old_rs]
    latest = latest_version(ws, workload, replicasets=replicasets)
    count = workload_replicas(ws, workload, whitelist=whitelist)
    pods: list[JSON] = []
    for i, older in enumerate(creates):
        owner = workload
        if target in ("Deployment", "ReplicaSet"):
            owner = old_rs if older and target == "Deployment" else new_rs
        sent = _new_pod(owner, f"web-{i}")
        decision = admit_create(
            sent,
            [ws],
            lookup=lookup,
            whitelist=whitelist,
            replicas_of=lambda _ws: count,
            loads_of=lambda w, v: loads_from_pods(w, pods, ()).get(v, {}),
            now=NOW,
            generated_uid=f"uid-{i}",
        )
        assert decision.allowed
        pods.append(decision.pod)
        plan = plan_workloadspread(
            ws,
            workload=workload,
            pods=workload_pods(ws, workload, pods, lookup=lookup, whitelist=whitelist),
            nodes={},
            now=NOW,
            whitelist=whitelist,
            latest=latest,
        )
        key = pod_state.key(decision.pod)
        value = (decision.pod["metadata"].get("annotations") or {}).get(DELETION_COST_ANNOTATION)
        sent_value = (sent["metadata"].get("annotations") or {}).get(DELETION_COST_ANNOTATION)
        chosen = ws.subset(decision.subset) if decision.subset is not None else None
        if chosen is None or target == "StatefulSet":
            assert value == sent_value  # no cost written: the pod is left as it was sent
            continue
        slot = (decision.subset, pod_state.version(decision.pod))
        same_slot = [p for p in pods if (_subset(p), pod_state.version(p)) == slot]
        limit = subset_limit(chosen, count)
        assert limit is None or len(same_slot) <= limit  # the webhook steers within the limit
        knowable = not (target == "Deployment" and older) and not subset_minimum(chosen, count)
        if knowable:
            assert value is not None
            assert value != sent_value
        if value != sent_value:
            assert plan.wanted_costs[key] == value
            assert key not in plan.deletion_costs  # nothing left for the actuator to patch


def _world() -> tuple[JSON, JSON, JSON]:
    deploy = deployment(replicas=6)
    return deploy, replicaset(deploy, "new"), _old_replicaset(deploy)


def test_a_pod_of_the_deployments_current_replicaset_is_of_the_latest_version() -> None:
    deploy, new_rs, old_rs = _world()
    ws = from_object(workloadspread(subset("a", 2), subset("b")))
    lookup = lookup_in([deploy, new_rs, old_rs])
    assert cost_version(ws, deploy, _new_pod(new_rs, "p"), lookup=lookup) == "new"
    # the latest version cannot be told from an older ReplicaSet alone: nothing is written
    assert cost_version(ws, deploy, _new_pod(old_rs, "p"), lookup=lookup) is None
    # a ReplicaSet the view has not seen yet
    assert cost_version(ws, deploy, _new_pod(new_rs, "p"), lookup=lookup_in([deploy])) is None


def test_no_cost_version_without_a_workload() -> None:
    deploy, new_rs, _ = _world()
    ws = from_object(workloadspread(subset("a", 2), subset("b")))
    lookup = lookup_in([deploy, new_rs])
    assert cost_version(ws, None, _new_pod(new_rs, "p"), lookup=lookup) is None


def test_a_workload_seen_at_zero_replicas_still_gives_its_version() -> None:
    """The view may not have folded the scale-up that created the pod; the planner, which sees
    the scale-up before the pod, costs it."""
    deploy, new_rs, _ = _world()
    deploy["spec"]["replicas"] = 0
    ws = from_object(workloadspread(subset("a", 2), subset("b")))
    lookup = lookup_in([deploy, new_rs])
    assert cost_version(ws, deploy, _new_pod(new_rs, "p"), lookup=lookup) == "new"


@pytest.mark.parametrize(
    ("position", "latest", "expected"),
    [(0, True, 300), (1, True, 200), (2, True, 100), (0, False, 100), (2, False, 300)],
)
def test_admission_cost_is_the_in_limit_value_of_the_subsets_position(
    position: int, latest: bool, expected: int
) -> None:
    ws = from_object(workloadspread(subset("a", 10), subset("b", 10), subset("c")))
    assert admission_cost(ws, "abc"[position], replicas=30, latest=latest) == expected


def test_admission_cost_is_unknown_for_statefulsets_minimums_and_unknown_versions() -> None:
    sts = from_object(workloadspread(subset("a", 2), subset("b"), kind="StatefulSet"))
    assert admission_cost(sts, "a", replicas=4, latest=True) is None
    ws = from_object(workloadspread(subset("a", 2, minReplicas=1), subset("b")))
    assert admission_cost(ws, "a", replicas=4, latest=True) is None
    assert admission_cost(ws, "b", replicas=4, latest=True) == 100
    assert admission_cost(ws, "b", replicas=4, latest=None) is None
    assert admission_cost(ws, "gone", replicas=4, latest=True) is None
