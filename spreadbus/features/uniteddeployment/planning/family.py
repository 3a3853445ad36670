"""Which objects belong to which UnitedDeployment, kept from the changed keys alone.

A UnitedDeployment's family is what its reconcile reads: the subset workloads it controls (of
the four kinds), the ReplicaSets of its Deployment subsets, the pods of all of those, and its
ControllerRevisions. Every object is linked to its controller owner (``ownerReferences`` with
``controller: true``), so a changed pod walks up (pod -> ReplicaSet -> Deployment -> UD, at most
:data:`MAX_CHAIN` steps) to the one UD it concerns, and a UD walks down to its family without
looking at the rest of its namespace, let alone the cluster.

An object's link is read by a partial decode of its owner references only; a deleted object is
unlinked, and the UD it hung under is still reported as affected. The index is derived data: fed
every key of the projection (after a restore, on becoming leader) it is rebuilt exactly.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

import msgspec

from events.messages import ResourceRef
from events.subjects import unescape
from kubesemantics.group_version import api_group
from spreadbus.projection.kube_state import KubeProjection, object_key, resource_key

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
POD_KIND: Final = ("", "Pod")
MAX_CHAIN: Final = 4


class _OwnerRef(msgspec.Struct):
    apiVersion: str = ""
    kind: str = ""
    name: str = ""
    controller: bool | None = None


class _Metadata(msgspec.Struct):
    ownerReferences: list[_OwnerRef] | None = None


class _Head(msgspec.Struct):
    metadata: _Metadata | None = None


_HEAD: Final = msgspec.json.Decoder(_Head)


def _controller(raw: bytes, namespace: str) -> Node | None:
    try:
        head = _HEAD.decode(raw)
    except msgspec.DecodeError:
        return None
    refs = head.metadata.ownerReferences if head.metadata is not None else None
    for ref in refs or ():
        if ref.controller is True:
            return (api_group(ref.apiVersion), ref.kind, namespace, ref.name)
    return None


class FamilyIndex:
    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self.rkeys: dict[str, tuple[str, str]] = {
            resource_key(cluster, ref.group, ref.resource): gk for gk, ref in KINDS.items()
        }
        self.rkey_of: dict[tuple[str, str], str] = {gk: rk for rk, gk in self.rkeys.items()}
        self.rk_uds = self.rkey_of[UD_KIND]
        self.rk_pods = self.rkey_of[("", "Pod")]
        self.relinked = False
        """Whether the last :meth:`index` changed the object's owner link."""
        self.parent: dict[Node, Node] = {}
        self.children: dict[Node, set[Node]] = {}
        """Owner -> the objects it controls, pods apart (:attr:`pods`): a walk that skips the
        pods does not step over thousands of them."""
        self.pods: dict[Node, set[Node]] = {}

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
        """Relink one changed object: the object keys of the UDs it hung under before, and of
        those it hangs under now."""
        node = self.node(rkey, okey)
        self.relinked = False
        if node is None:
            return set(), set()
        before = self.uds_above(node)
        stored = view.stored(rkey, okey)
        owner = None if stored is None else _controller(stored.raw, node[2])
        old = self.parent.get(node)
        self.relinked = old != owner
        if old != owner:
            below = self.pods if (node[0], node[1]) == POD_KIND else self.children
            if old is not None:
                siblings = below.get(old)
                if siblings is not None:
                    siblings.discard(node)
                    if not siblings:
                        del below[old]
            if owner is None:
                del self.parent[node]
            else:
                self.parent[node] = owner
                below.setdefault(owner, set()).add(node)
        return before, self.uds_above(node)

    def uds_above(self, node: Node) -> set[str]:
        current: Node | None = node
        for _ in range(MAX_CHAIN):
            current = self.parent.get(current) if current is not None else None
            if current is None:
                return set()
            if (current[0], current[1]) == UD_KIND:
                return {self.ud_key(current)}
        return set()

    def family(self, ud: Node, *, pods: bool = True) -> Iterator[Node]:
        """Every object below ``ud``: workloads, their ReplicaSets, revisions and (unless
        ``pods`` is false) pods."""
        stack = [ud]
        depth = {ud: 0}
        while stack:
            current = stack.pop()
            if depth[current] >= MAX_CHAIN - 1:
                continue
            if pods:
                yield from self.pods.get(current, ())
            for child in self.children.get(current, ()):
                if child in depth:
                    continue
                depth[child] = depth[current] + 1
                yield child
                stack.append(child)

    def decode(self, view: KubeProjection, node: Node) -> dict[str, Any] | None:
        """The object as last observed (shared with the planner's diff: never to be changed)."""
        return view.decoded(self.rkey_of[(node[0], node[1])], object_key(node[2], node[3]))
