"""The spread index reads a pod's links (namespace, owner, node, matched annotation) from a
partial decode and leaves its indexes alone when they did not change, and remembers the
WorkloadSpreads above each owner; fed any sequence of pod observations (odd shapes included),
workloads changing owners, coming and going, and WorkloadSpreads changing targets, it answers
exactly as re-indexing every observation from the full decode does, and as an index built afresh
from everything observed.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from events import codec, subjects
from events.messages import Observation
from spreadbus.features.workloadspread.core.model import (
    DELETION_COST_ANNOTATION,
    MATCHED_ANNOTATION,
)
from spreadbus.features.workloadspread.planning.spread_index import SpreadIndex
from spreadbus.projection.kube_state import KubeProjection, object_key, resource_key

CLUSTER = "c1"
KINDS = {"Pod": ("", "pods"), "Deployment": ("apps", "deployments"),
         "ReplicaSet": ("apps", "replicasets"),
         "WorkloadSpread": ("apps.kruise.io", "workloadspreads")}
POD_NAMES = ("p0", "p1", "p2")


def owner(kind: str, name: str, controller: Any) -> dict[str, Any]:
    ref: dict[str, Any] = {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": "u"}
    if controller is not None:
        ref["controller"] = controller
    return ref


ABSENT = object()
controllers = st.builds(lambda kind, name: [owner(kind, name, True)],
                        st.sampled_from(["ReplicaSet", "Deployment"]),
                        st.sampled_from(["web-h1", "web", "other"]))
owners = st.one_of(
    controllers, controllers, controllers, st.just(ABSENT), st.none(), st.just("not a list"),
    st.lists(st.one_of(
        st.builds(owner, st.sampled_from(["ReplicaSet", "Deployment"]),
                  st.sampled_from(["web-h1", "web", "other"]),
                  st.sampled_from([True, 1, False, None, "true"])),
        st.just("not a map")), max_size=2),
)
matched = st.one_of(
    st.just(ABSENT), st.none(), st.just("{not json"), st.just(7),
    st.builds(lambda n, s: json.dumps({"name": n, "subset": s}),
              st.sampled_from(["ws-d", "ws-rs", "gone"]), st.sampled_from(["a", "b"])),
    st.builds(lambda n: json.dumps({"Name": n}), st.sampled_from(["ws-d", "ws-rs"])),
)
node_names = st.one_of(st.just(ABSENT), st.none(), st.sampled_from(["n1", "n2", ""]),
                       st.just(3))
namespaces = st.sampled_from([ABSENT, "default", "default", "default", "other"])


workload_changes = st.fixed_dictionaries({
    "op": st.just("workload"),
    "kind": st.sampled_from(["ReplicaSet", "ReplicaSet", "Deployment"]),
    "name": st.sampled_from(["web-h1", "web-h1", "web", "other"]),
    # the ReplicaSet's controller (a Deployment), none, or the workload is deleted
    "owner": st.sampled_from(["web", "other", None, "deleted", "deleted"]),
})
spread_changes = st.fixed_dictionaries({
    "op": st.just("spread"),
    "name": st.sampled_from(["ws-d", "ws-rs"]),
    "target": st.sampled_from([("Deployment", "web"), ("ReplicaSet", "web-h1"),
                               ("ReplicaSet", "other"), ("Deployment", "other"), None]),
})


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any] | None:
    """One observation of a pod: None for a deletion, odd shapes now and then."""
    if draw(st.integers(0, 9)) == 0:
        return None
    name = draw(st.sampled_from(POD_NAMES))
    metadata: dict[str, Any] = {"name": name, "uid": f"uid-{name}"}
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod"}
    for field, value in (("namespace", draw(namespaces)), ("ownerReferences", draw(owners))):
        if value is not ABSENT:
            metadata[field] = value
    shape = draw(st.integers(0, 19))
    annotations: Any = {}
    value = draw(matched)
    if value is not ABSENT:
        annotations[MATCHED_ANNOTATION] = value
    if draw(st.booleans()):
        annotations[DELETION_COST_ANNOTATION] = str(draw(st.integers(-5, 5)))
    if shape == 0:
        annotations = None
    elif shape == 1:
        annotations = ["not", "a", "map"]
    if annotations is not None or draw(st.booleans()):
        metadata["annotations"] = annotations
    body["metadata"] = metadata
    if shape == 2:
        body["metadata"] = None
    spec: Any = {"containers": [{"name": "c"}]}
    node = draw(node_names)
    if node is not ABSENT:
        spec["nodeName"] = node
    body["spec"] = None if shape == 3 else spec
    body["status"] = {"phase": draw(st.sampled_from(["Pending", "Running"]))}
    return body


class Fold:
    """A projection fed as the watcher publishes, with the subject naming the object."""

    def __init__(self) -> None:
        self.view = KubeProjection()
        self.seq = 0

    def put(self, obj: dict[str, Any], name: str, namespace: str = "default",
            event: str = "MODIFIED") -> tuple[str, str]:
        self.seq += 1
        group, resource = KINDS[obj["kind"]]
        message = Observation(cluster=CLUSTER, group=group, version="v1", resource=resource,
                              event=event, object=obj)  # type: ignore[arg-type]
        subject = subjects.observation(CLUSTER, group, resource, namespace, name)
        self.view.apply(self.seq, subject, codec.encode(message))
        self.view.take_changed()  # the owner graph follows, as the planner's rounds take it
        return (resource_key(CLUSTER, group, resource), object_key(namespace, name))


def workload(fold: Fold, kind: str, name: str, owned_by: str | None) -> tuple[str, str]:
    metadata: dict[str, Any] = {"name": name, "namespace": "default"}
    if owned_by == "deleted":
        return fold.put({"apiVersion": "apps/v1", "kind": kind, "metadata": metadata}, name,
                        event="DELETED")
    if owned_by is not None and kind == "ReplicaSet":
        metadata["ownerReferences"] = [owner("Deployment", owned_by, True)]
    return fold.put({"apiVersion": "apps/v1", "kind": kind, "metadata": metadata}, name)


def spread(fold: Fold, name: str, target: tuple[str, str] | None) -> tuple[str, str]:
    body: dict[str, Any] = {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
                            "metadata": {"name": name, "namespace": "default"}, "spec": {}}
    if target is not None:
        body["spec"]["targetRef"] = {"apiVersion": "apps/v1", "kind": target[0],
                                     "name": target[1]}
    return fold.put(body, name)


def workloads(fold: Fold, indexes: list[SpreadIndex]) -> None:
    for kind, name, owned_by in (("Deployment", "web", None), ("ReplicaSet", "web-h1", "web")):
        key = workload(fold, kind, name, owned_by)
        for index in indexes:
            index.index_member(fold.view, *key)
    for name, target in (("ws-d", ("Deployment", "web")), ("ws-rs", ("ReplicaSet", "web-h1"))):
        key = spread(fold, name, target)
        for index in indexes:
            index.index_spread(fold.view, key[1])


def afresh(fold: Fold) -> SpreadIndex:
    """An index fed every object observed, as after a restore."""
    index = SpreadIndex(CLUSTER)
    index.follow(fold.view)
    keys = sorted(fold.view.all_keys())
    for rkey, okey in keys:
        if rkey == index.rk_spreads:
            index.index_spread(fold.view, okey)
    for rkey, okey in keys:
        if rkey != index.rk_spreads:
            index.index_member(fold.view, rkey, okey)
    return index


TARGETS = [("default", "apps", "Deployment", "web"), ("default", "apps", "ReplicaSet", "web-h1"),
           ("default", "apps", "ReplicaSet", "other")]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(pods(), pods(), pods(), workload_changes, spread_changes),
                min_size=1, max_size=25),
       st.lists(st.sampled_from(POD_NAMES), min_size=25, max_size=25))
def test_pod_observations_index_as_the_full_decode_of_each_does(
    observations: list[dict[str, Any] | None], deleted: list[str]
) -> None:
    fold = Fold()
    index = SpreadIndex(CLUSTER)
    reference = SpreadIndex(CLUSTER)
    index.follow(fold.view)
    reference.follow(fold.view)
    workloads(fold, [index, reference])
    for step, body in enumerate(observations):
        if body is not None and body.get("op") == "workload":
            key = workload(fold, body["kind"], body["name"], body["owner"])
            for each in (index, reference):
                each.index_member(fold.view, *key)
        elif body is not None and body.get("op") == "spread":
            key = spread(fold, body["name"], body["target"])
            for each in (index, reference):
                each.index_spread(fold.view, key[1])
        else:
            observe(fold, index, reference, body, deleted[step])
        fresh = afresh(fold)
        for name in POD_NAMES:
            pod_key = (index.rk_pods, object_key("default", name))
            assert index.spreads_above(pod_key) == fresh.spreads_above(pod_key)
        for node in ("n1", "n2", "", "3"):
            assert index.pods_on(node) == fresh.pods_on(node)
        for target in TARGETS:
            assert sorted(index.pods_below(target)) == sorted(fresh.pods_below(target))
        # What it remembers goes with the pods and workloads it was remembered for.
        assert all(index._has_children(owner) for owner in index._above)
        assert set(index._node_pods) == set(fresh._node_pods)


def observe(fold: Fold, index: SpreadIndex, reference: SpreadIndex,
            body: dict[str, Any] | None, deleted: str) -> None:
    """One pod observation into ``index``, and fully decoded into ``reference``."""
    if body is None:
        key = fold.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": deleted}},
                       deleted, event="DELETED")
    else:
        key = fold.put(body, str(body["metadata"]["name"]) if body["metadata"] else
                       POD_NAMES[0])
    got = index.index_member(fold.view, *key)
    want = reference._index(fold.view, key, None, None)  # every observation fully decoded
    assert got == want
