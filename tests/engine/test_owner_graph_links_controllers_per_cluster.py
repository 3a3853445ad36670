"""The projection's owner graph: controller references both ways, per cluster, kept from the
changed keys the planner takes, and rebuilt exactly from the objects after a restore."""

from __future__ import annotations

from typing import Any

from events import codec, subjects
from events.messages import Observation
from spreadbus.projection import snapshot
from spreadbus.projection.decision_log import DecisionState
from spreadbus.projection.kube_state import KubeProjection, object_key, resource_key

NS = "shop"


def _pods(cluster: str) -> tuple[str, bool]:
    return (resource_key(cluster, "", "pods"), True)


def _replicasets(cluster: str) -> tuple[str, bool]:
    return (resource_key(cluster, "apps", "replicasets"), False)


class Feed:
    def __init__(self) -> None:
        self.view = KubeProjection()
        self.seq = 0

    def put(self, cluster: str, kind: str, name: str, owner: tuple[str, str] | None = None,
            *, event: str = "MODIFIED", controller: bool = True) -> None:
        self.seq += 1
        group, resource = {"Pod": ("", "pods"), "ReplicaSet": ("apps", "replicasets")}[kind]
        meta: dict[str, Any] = {"name": name, "namespace": NS, "resourceVersion": str(self.seq)}
        if owner is not None:
            meta["ownerReferences"] = [
                {"apiVersion": "v1", "kind": "Service", "name": "not-a-controller"},
                {"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "uid": "u",
                 "controller": controller},
            ]
        message = Observation(cluster=cluster, group=group, version="v1", resource=resource,
                              event=event,  # type: ignore[arg-type]
                              object={"kind": kind, "metadata": meta})
        self.view.apply(self.seq, subjects.observation(cluster, group, resource, NS, name),
                        codec.encode(message))


def key(resource: tuple[str, bool], name: str) -> tuple[str, str]:
    return (resource[0], object_key(NS, name))


def test_each_cluster_links_its_own_objects_both_ways() -> None:
    feed = Feed()
    for cluster in ("east", "west"):
        feed.put(cluster, "ReplicaSet", "web", ("Deployment", "web"))
        feed.put(cluster, "Pod", "web-0", ("ReplicaSet", "web"))
    feed.put("west", "Pod", "stray", ("ReplicaSet", "only-in-east"))
    graph = feed.view.owners
    graph.follow(feed.view, [_pods(c) for c in ("east", "west")]
                 + [_replicasets(c) for c in ("east", "west")])
    feed.view.take_changed()
    east_rs = ("east", "apps", "ReplicaSet", NS, "web")
    west_rs = ("west", "apps", "ReplicaSet", NS, "web")
    assert graph.owner(key(_pods("east"), "web-0")) == east_rs
    assert graph.pods(east_rs) == {key(_pods("east"), "web-0")}
    assert graph.pods(west_rs) == {key(_pods("west"), "web-0")}
    assert graph.children(("east", "apps", "Deployment", NS, "web")) == {
        key(_replicasets("east"), "web")}
    assert graph.pods(("east", "apps", "ReplicaSet", NS, "only-in-east")) == set(), (
        "a west pod naming a ReplicaSet of that name is not east's")
    assert graph.owner(key(_pods("west"), "stray")) == (
        "west", "apps", "ReplicaSet", NS, "only-in-east")


def test_a_moved_or_deleted_object_is_relinked_and_its_old_owner_kept_for_one_update() -> None:
    feed = Feed()
    feed.put("c1", "Pod", "p", ("ReplicaSet", "a"))
    graph = feed.view.owners
    graph.follow(feed.view, [_pods("c1")])
    pod = key(_pods("c1"), "p")
    a = ("c1", "apps", "ReplicaSet", NS, "a")
    b = ("c1", "apps", "ReplicaSet", NS, "b")
    feed.view.take_changed()
    assert graph.moved == {}, "following read the pod; taking it again changes nothing"
    feed.put("c1", "Pod", "p", ("ReplicaSet", "b"))
    feed.view.take_changed()
    assert (graph.owner(pod), graph.moved) == (b, {pod: a})
    assert (graph.pods(a), graph.pods(b)) == (set(), {pod})
    feed.put("c1", "Pod", "p", ("ReplicaSet", "b"), controller=False)
    feed.view.take_changed()
    assert (graph.owner(pod), graph.moved, graph.pods(b)) == (None, {pod: b}, set())
    feed.put("c1", "Pod", "p", ("ReplicaSet", "a"))
    feed.put("c1", "Pod", "p", ("ReplicaSet", "a"), event="DELETED")
    feed.view.take_changed()
    assert (graph.owner(pod), graph.pods(a)) == (None, set())


def test_a_restored_projection_rebuilds_the_same_graph_from_its_objects() -> None:
    feed = Feed()
    for i in range(5):
        feed.put("c1", "Pod", f"p{i}", ("ReplicaSet", f"rs{i % 2}"))
    feed.view.owners.follow(feed.view, [_pods("c1")])
    feed.view.take_changed()
    loaded = snapshot.load(snapshot.dump(feed.view.state, DecisionState(), taken_at=0.0))
    assert loaded is not None
    restored = KubeProjection(loaded.kube)
    restored.mark_all_changed()
    restored.owners.follow(restored, [_pods("c1")])
    restored.take_changed()
    for i in range(2):
        owner = ("c1", "apps", "ReplicaSet", NS, f"rs{i}")
        assert restored.owners.pods(owner) == feed.view.owners.pods(owner)
        assert len(restored.owners.pods(owner)) == (3 if i == 0 else 2)
