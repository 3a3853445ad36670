"""Which objects belong to which UnitedDeployment, kept from the changed keys alone.

A UnitedDeployment's family is what its reconcile reads: the subset workloads it controls (of
the four kinds), the ReplicaSets of its Deployment subsets, the pods of all of those, and its
ControllerRevisions. Every object is linked to its controller owner (``ownerReferences`` with
``controller: true``), so a changed pod walks up (pod -> ReplicaSet -> Deployment -> UD, at most
:data:`MAX_CHAIN` steps) to the one UD it concerns, and a UD walks down to its family without
looking at the rest of its namespace, let alone the cluster.

The links are the projection's owner graph (:mod:`spreadbus.projection.owner_graph`), which the
index follows for the family's resources; it holds nothing per object itself. A deleted or moved
object still reports the UD it hung under before the graph's last update as affected.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

from events.messages import ResourceRef
from events.subjects import escape, unescape
from spreadbus.projection.kube_state import KubeProjection, object_key, resource_key
from spreadbus.projection.owner_graph import Key, Owner, OwnerGraph

Node = tuple[str, str, str, str]
"""(API group, kind, namespace, name) of one object."""

UNITED_DEPLOYMENTS: Final = ResourceRef(group="apps.kruise.io", version="v1alpha1",
                                        resource="uniteddeployments")
PODS: Final = ResourceRef(group="", version="v1", resource="pods")
REPLICA_SETS: Final = ResourceRef(group="apps", version="v1", resource="replicasets")
CONTROLLER_REVISIONS: Final = ResourceRef(group="apps", version="v1",
                                          resource="controllerrevisions")
WORKLOADS: Final[Mapping[tuple[str, str], ResourceRef]] = {
    ("apps", "StatefulSet"): ResourceRef(group="apps", version="v1", resource="statefulsets"),
    ("apps.kruise.io", "StatefulSet"): ResourceRef(group="apps.kruise.io", version="v1beta1",
                                                   resource="statefulsets"),
    ("apps.kruise.io", "CloneSet"): ResourceRef(group="apps.kruise.io", version="v1alpha1",
                                                resource="clonesets"),
    ("apps", "Deployment"): ResourceRef(group="apps", version="v1", resource="deployments"),
}
"""(group, kind) -> resource of the four subset workload kinds."""
KINDS: Final[Mapping[tuple[str, str], ResourceRef]] = {
    ("apps.kruise.io", "UnitedDeployment"): UNITED_DEPLOYMENTS,
    ("", "Pod"): PODS,
    ("apps", "ReplicaSet"): REPLICA_SETS,
    ("apps", "ControllerRevision"): CONTROLLER_REVISIONS,
    **WORKLOADS,
}
UD_KIND: Final = ("apps.kruise.io", "UnitedDeployment")
MAX_CHAIN: Final = 4


class FamilyIndex:
    """The UnitedDeployment family of one cluster, read from the projection's owner graph."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self.rkeys: dict[str, tuple[str, str]] = {
            resource_key(cluster, ref.group, ref.resource): gk for gk, ref in KINDS.items()
        }
        self.rkey_of: dict[tuple[str, str], str] = {gk: rk for rk, gk in self.rkeys.items()}
        self.rk_uds = self.rkey_of[UD_KIND]
        self.rk_pods = self.rkey_of[("", "Pod")]
        self._followed = tuple((rk, rk == self.rk_pods) for rk in self.rkeys)
        self._cluster = escape(cluster)
        self._graph = OwnerGraph()
        self.relinked = False
        """Whether the last :meth:`index` found the object's owner link changed."""

    def follow(self, view: KubeProjection) -> None:
        """Read the family's resources from ``view``'s owner graph (followed from now on)."""
        view.owners.follow(view, self._followed)
        self._graph = view.owners

    def node(self, rkey: str, okey: str) -> Node | None:
        """The object of a projection key, or None for a resource the family never holds."""
        gk = self.rkeys.get(rkey)
        if gk is None:
            return None
        namespace, name = okey.split(".", 1)
        return (gk[0], gk[1], unescape(namespace), unescape(name))

    def ud_key(self, node: Node) -> str:
        return object_key(node[2], node[3])

    def index(self, view: KubeProjection, rkey: str, okey: str) -> tuple[set[str], set[str]]:
        """One changed object: the object keys of the UDs it hung under before the graph's last
        update, and of those it hangs under now."""
        self.relinked = False
        if rkey not in self.rkeys:
            return set(), set()
        key = (rkey, okey)
        graph = self._graph
        after = self._uds_from(graph.owner(key), MAX_CHAIN)
        if key not in graph.moved:
            return after, after
        self.relinked = True
        return self._uds_from(graph.moved[key], MAX_CHAIN), after

    def _uds_from(self, owner: Owner | None, steps: int) -> set[str]:
        """The UD ``owner`` is, or the first one above it within ``steps`` links."""
        for _ in range(steps):
            if owner is None:
                return set()
            if (owner[1], owner[2]) == UD_KIND:
                return {object_key(owner[3], owner[4])}
            rkey = self.rkey_of.get((owner[1], owner[2]))
            if rkey is None:
                return set()
            owner = self._graph.owner((rkey, object_key(owner[3], owner[4])))
        return set()

    def top_workload(self, owner: Owner | None) -> Node | None:
        """The topmost subset workload kind at or above ``owner`` within :data:`MAX_CHAIN`
        links (a pod's Deployment through its ReplicaSet), or None."""
        top: Node | None = None
        for _ in range(MAX_CHAIN):
            if owner is None:
                break
            gk = (owner[1], owner[2])
            rkey = self.rkey_of.get(gk)
            if rkey is None or gk == UD_KIND:
                break
            if gk in WORKLOADS:
                top = (owner[1], owner[2], owner[3], owner[4])
            owner = self._graph.owner((rkey, object_key(owner[3], owner[4])))
        return top

    def workload_of(self, key: Key) -> tuple[Node | None, Node | None]:
        """The topmost workload above the object of ``key`` before the graph's last update
        and now (the object itself when it is a workload)."""
        node = self.node(*key)
        if node is not None and (node[0], node[1]) in WORKLOADS:
            return node, node
        graph = self._graph
        after = self.top_workload(graph.owner(key))
        before = self.top_workload(graph.moved[key]) if key in graph.moved else after
        return before, after

    def family(self, ud: Node) -> Iterator[Node]:
        """Every object below ``ud`` but its pods: workloads, their ReplicaSets, revisions."""
        for _, node in self._walk(ud):
            yield node

    def pods_below(self, node: Node) -> Iterator[Key]:
        """The projection keys of the pods below ``node``, at any depth the family reaches."""
        graph = self._graph
        yield from graph.pods((self._cluster, *node))
        for depth, child in self._walk(node):
            if depth < MAX_CHAIN - 1:
                yield from graph.pods((self._cluster, *child))

    def pod_under_ud(self, key: Key) -> bool:
        """Whether the pod of this projection key hangs under some UD."""
        return bool(self._uds_from(self._graph.owner(key), MAX_CHAIN))

    def _walk(self, top: Node) -> Iterator[tuple[int, Node]]:
        """The objects below ``top`` but pods, each with its depth (``top`` is 0), down to
        :data:`MAX_CHAIN` links."""
        graph = self._graph
        stack = [top]
        depth = {top: 0}
        while stack:
            current = stack.pop()
            if depth[current] >= MAX_CHAIN - 1:
                continue
            for child in self._nodes(graph.children((self._cluster, *current))):
                if child in depth:
                    continue
                depth[child] = depth[current] + 1
                yield depth[child], child
                stack.append(child)

    def _nodes(self, keys: Iterable[Key]) -> Iterator[Node]:
        for rkey, okey in keys:
            node = self.node(rkey, okey)
            if node is not None:
                yield node

    def decode(self, view: KubeProjection, node: Node) -> dict[str, Any] | None:
        """The object as last observed (shared with the planner's diff: never to be changed)."""
        return view.decoded(self.rkey_of[(node[0], node[1])], object_key(node[2], node[3]))
