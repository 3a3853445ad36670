"""The planner filters a round's changed pods in one pass of ``workload_pods``, which walks each
controller owner's chain once for all its pods; the answer must be the one pod-by-pod filtering
gives, whatever the owners (found, missing, foreign, oddly typed) and labels."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.workloadspread.core import reconcile
from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.model import from_object
from spreadbus.features.workloadspread.core.target import lookup_in

DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "web", "namespace": "default", "uid": "d"},
              "spec": {"replicas": 3}}


def replicaset(name: str, owner: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "default", "uid": f"rs-{name}",
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                              "name": owner, "controller": True}]}}


LOOKUP = lookup_in([DEPLOYMENT, replicaset("web-1", "web"), replicaset("web-2", "web"),
                    replicaset("other-1", "other")])

REFS: list[tuple[Any, Any, Any]] = [
    ("apps/v1", "ReplicaSet", "web-1"), ("apps/v1", "ReplicaSet", "web-2"),
    ("apps/v1", "ReplicaSet", "other-1"), ("apps/v1", "ReplicaSet", "gone-1"),
    ("apps/v1", "Deployment", "web"), ("v1", "ReplicaSet", "web-1"),
    ("batch/v1", "Job", "web-1"), ("apps/v1", None, "web-1"), ("apps/v1", "ReplicaSet", 7),
    (3, "ReplicaSet", "web-1"),
]
owners = st.one_of(st.none(), st.builds(
    lambda ref, controller: {"apiVersion": ref[0], "kind": ref[1], "name": ref[2],
                             "controller": controller},
    st.sampled_from(REFS), st.sampled_from([True, True, False]),
))
pods = st.lists(st.builds(
    lambda i, owner, ns, app: {
        "metadata": {"name": f"p{i}", "namespace": ns, "labels": {"app": app},
                     **({"ownerReferences": [owner]} if owner is not None else {})}},
    st.integers(0, 50), owners, st.sampled_from(["default", "default", "other"]),
    st.sampled_from(["web", "db"]),
), max_size=12)


@settings(max_examples=200, deadline=None)
@given(pods=pods, selector=st.sampled_from([None, {"matchLabels": {"app": "web"}}]))
def test_a_batch_keeps_exactly_the_pods_kept_one_by_one(
    pods: list[dict[str, Any]], selector: dict[str, Any] | None
) -> None:
    spec: dict[str, Any] = {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                          "name": "web"},
                            "subsets": [{"name": "a"}]}
    if selector is not None:
        spec["targetFilter"] = {"selector": selector}
    ws = from_object({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
                      "metadata": {"name": "ws", "namespace": "default"}, "spec": spec})
    whitelist = Whitelist()
    batch = reconcile.workload_pods(ws, DEPLOYMENT, pods, lookup=LOOKUP, whitelist=whitelist)
    one_by_one = [p for p in pods if reconcile.workload_pods(ws, DEPLOYMENT, [p], lookup=LOOKUP,
                                                             whitelist=whitelist)]
    assert [id(p) for p in batch] == [id(p) for p in one_by_one]


def test_pods_of_the_target_s_replicasets_are_kept_and_others_not() -> None:
    ws = from_object({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
                      "metadata": {"name": "ws", "namespace": "default"},
                      "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                             "name": "web"}, "subsets": [{"name": "a"}]}})

    def pod(name: str, owner: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": "default", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "controller": True}]}}

    kept = reconcile.workload_pods(
        ws, DEPLOYMENT, [pod("a", "web-1"), pod("b", "other-1"), pod("c", "web-1"),
                         pod("d", "gone-1"), pod("e", "web-2")],
        lookup=LOOKUP, whitelist=Whitelist())
    assert [p["metadata"]["name"] for p in kept] == ["a", "c", "e"]
