"""The WorkloadSpread rule's indexes over the projection: owner chains, targetRefs, nodes.

Planning one WorkloadSpread must cost its own pods, and a changed pod must find the few
WorkloadSpreads above it, without scanning the cluster. :class:`SpreadIndex` keeps, updated from
the changed keys alone:

- every pod and workload by its controller owner (a pod without one by a whitelisted custom
  workload owning it, as Kruise counts such pods), so a pod walks its chain up (pod ->
  ReplicaSet -> Deployment, at most ``_MAX_CHAIN`` steps) and a target walks its descendants down
  to its pods. A pod's controller is read from the projection's owner graph
  (:mod:`spreadbus.projection.owner_graph`, shared with every rule, and the owner it had before
  the graph's last update from :attr:`~spreadbus.projection.owner_graph.OwnerGraph.moved`); the
  index keeps the workloads' links and those of pods without a controller itself;
- WorkloadSpreads by their ``targetRef`` (and back);
- pods by node, so a node's change reaches the WorkloadSpreads of the pods on it.

A WorkloadSpread's plan reads all of its pods, so their decoded form is kept, once per
observation, by the projection (:meth:`KubeProjection.decoded`), where the diff of what the rule
wants against what is observed reads it too.

A pod changes several times while it starts, and what the indexes read of it (namespace,
controller owner, node, matched annotation) rarely changes with it. So a pod's observation is first
read for those fields alone (:class:`_PodLinks`, a partial decode that skips the rest of the JSON);
when they equal the previous observation's, the indexes are left as they are and only the
WorkloadSpreads above it are looked up, which the pods of one workload share (remembered per
owner until a workload's owner link or a targetRef changes). The whole pod is decoded when a plan
reads it, once per plan however often it changed meanwhile. An observation whose fields do not
have the usual shape (``metadata`` that is not an object...) takes the full decode, which reads
anything.

All of it is derived data: fed every key of the projection (what the planner does after a
restore or on becoming leader) it is rebuilt exactly. It never decides anything.

Signatures::

    SpreadIndex(cluster, kinds=None, whitelist=None)   # default: the built-in kinds
        .follows(group, kind) -> bool
        .index_spread(view, okey) -> bool              # False: the WorkloadSpread is gone
        .index_member(view, rkey, okey) -> set[str]    # a pod or workload; spreads above it
        .spreads_above((rkey, okey)) -> set[str]
        .pods_below(target: OwnerKey) -> [pod key]
        .workload_descendants(target: OwnerKey) -> [(workload key, its owner)]
        .decode(view, (rkey, okey)) -> dict | None
        .lookup(view) -> (namespace, group, kind, name) -> object | None
        .target_of(okey) -> OwnerKey | None ; .pods_on(node) -> set of pod object keys
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

import msgspec

from events.messages import ResourceRef
from events.subjects import escape, unescape
from kubesemantics.owner_refs import controller_ref
from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.model import MATCHED_ANNOTATION, api_group
from spreadbus.features.workloadspread.core.target import Lookup, uncontrolled_owner
from spreadbus.features.workloadspread.core.workload_kinds import WorkloadKinds, workload_kinds
from spreadbus.projection.kube_state import (
    KubeProjection,
    StoredObject,
    decode_object,
    object_key,
    resource_key,
)
from spreadbus.projection.owner_graph import Owner, OwnerGraph

WORKLOADSPREADS: Final = ResourceRef(group="apps.kruise.io", version="v1alpha1",
                                     resource="workloadspreads")
PODS: Final = ResourceRef(group="", version="v1", resource="pods")
NODES: Final = ResourceRef(group="", version="v1", resource="nodes")


def _refs(
    kinds: WorkloadKinds, *, always_served: bool | None = None
) -> dict[tuple[str, str], ResourceRef]:
    """(group, kind) -> resource of ``kinds`` (of those served or not, when ``always_served``)."""
    return {(k.group, k.kind): ResourceRef(group=k.group, version=k.version, resource=k.resource)
            for k in kinds if always_served in (None, k.always_served)}


WORKLOADS: Final = _refs(workload_kinds(), always_served=True)
"""(group, kind) -> resource of the workloads every cluster serves: decisions wait for these to
be listed."""
OPTIONAL_WORKLOADS: Final = _refs(workload_kinds(), always_served=False)
"""The built-in kinds a cluster may not serve (Kruise's CRDs, Jobs): indexed and looked up like
the others once streamed, but decisions do not wait for their listing. Whitelisted custom kinds
are added to these per index (:class:`SpreadIndex` ``kinds``)."""
_MAX_CHAIN: Final = 8

OwnerKey = tuple[str, str, str, str]
"""(namespace, group, kind, name) of a workload."""
Key = tuple[str, str]
"""(resource key, object key) as in :attr:`KubeProjection.changed`."""


_NULL: Final = msgspec.Raw(b"null")


class _LinkAnnotations(msgspec.Struct, gc=False):
    matched: msgspec.Raw = msgspec.field(default=_NULL, name=MATCHED_ANNOTATION)


class _LinkMetadata(msgspec.Struct, gc=False):
    namespace: msgspec.Raw = _NULL
    owner_references: msgspec.Raw = msgspec.field(default=_NULL, name="ownerReferences")
    annotations: _LinkAnnotations = msgspec.field(default_factory=_LinkAnnotations)


class _LinkSpec(msgspec.Struct, gc=False):
    node_name: msgspec.Raw = msgspec.field(default=_NULL, name="nodeName")


class _PodLinks(msgspec.Struct, gc=False):
    """What the indexes read of a pod, each field as its JSON text (an absent one as null, which
    every reader takes alike): equal links index the pod the same way."""

    metadata: _LinkMetadata = msgspec.field(default_factory=_LinkMetadata)
    spec: _LinkSpec = msgspec.field(default_factory=_LinkSpec)

    def as_pod(self) -> dict[str, Any]:
        """The fields as a pod's JSON has them, for the readers of whole pods."""
        metadata = self.metadata
        return {
            "metadata": {
                "namespace": _ANY.decode(metadata.namespace),
                "ownerReferences": _ANY.decode(metadata.owner_references),
                "annotations": {MATCHED_ANNOTATION: _ANY.decode(metadata.annotations.matched)},
            },
            "spec": {"nodeName": _ANY.decode(self.spec.node_name)},
        }


_ANY: Final = msgspec.json.Decoder()
_LINKS: Final = msgspec.json.Decoder(_PodLinks)


def _links(stored: StoredObject) -> _PodLinks | None:
    """The pod's links, or None when its JSON is not shaped as the partial decode expects."""
    try:
        return _LINKS.decode(stored.raw)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None


def _target(spread: Mapping[str, Any]) -> OwnerKey | None:
    """The workload a WorkloadSpread's ``targetRef`` names, if it has one."""
    ref = (spread.get("spec") or {}).get("targetRef")
    if not isinstance(ref, Mapping):
        return None
    namespace = str((spread.get("metadata") or {}).get("namespace") or "")
    return (namespace, api_group(str(ref.get("apiVersion") or "")),
            str(ref.get("kind") or ""), str(ref.get("name") or ""))


def _owner_of(
    obj: Mapping[str, Any], namespace: str, whitelist: Whitelist | None
) -> OwnerKey | None:
    """The controller owner; for a pod (``whitelist`` given) without one, a custom workload
    owning it, under which Kruise counts it too."""
    ref = controller_ref(obj)
    if ref is None and whitelist is not None:
        ref = uncontrolled_owner(obj, whitelist)
    if ref is None:
        return None
    return (namespace, api_group(str(ref.get("apiVersion") or "")), str(ref.get("kind") or ""),
            str(ref.get("name") or ""))


class SpreadIndex:
    """The indexes for one cluster over the workload kinds of ``kinds``.

    ``kinds`` is the table the watcher and the webhook use
    (:func:`spreadbus.features.workloadspread.core.workload_kinds.workload_kinds` of the whitelist),
    so a whitelisted custom workload is followed here exactly when it is streamed; the built-in
    kinds by default.
    """

    def __init__(
        self, cluster: str, kinds: WorkloadKinds | None = None, whitelist: Whitelist | None = None
    ) -> None:
        self._whitelist = whitelist if whitelist is not None else Whitelist()
        self.rk_spreads = resource_key(cluster, WORKLOADSPREADS.group, WORKLOADSPREADS.resource)
        self.rk_pods = resource_key(cluster, PODS.group, PODS.resource)
        self.rk_nodes = resource_key(cluster, NODES.group, NODES.resource)
        refs = _refs(kinds if kinds is not None else workload_kinds())
        self.rk_workloads = {
            resource_key(cluster, ref.group, ref.resource): gk for gk, ref in refs.items()
        }
        self._rk_of_kind = {gk: resource_key(cluster, ref.group, ref.resource)
                            for gk, ref in refs.items()}
        self._cluster = escape(cluster)
        self._graph = OwnerGraph()
        # Pods linked to their controller are in the projection's owner graph; these hold the
        # workloads' links and those of pods without a controller but with a whitelisted owner.
        self._owner: dict[Key, OwnerKey] = {}
        self._children: dict[OwnerKey, set[Key]] = {}
        self._child_workloads: dict[OwnerKey, set[Key]] = {}
        self._spreads_by_target: dict[OwnerKey, set[str]] = {}
        self._target_of: dict[str, OwnerKey] = {}
        self._pod_node: dict[str, str] = {}
        self._node_pods: dict[str, set[str]] = {}
        # Pod object key -> its links as last indexed and the WorkloadSpread its annotation names.
        self._pod_links: dict[str, tuple[_PodLinks, str | None]] = {}
        # Owner -> the WorkloadSpreads at or above it: the pods of a workload share their chain.
        # Emptied whenever a chain may change (a workload's owner link, a targetRef); an owner
        # is forgotten with its last child.
        self._above: dict[OwnerKey, frozenset[str]] = {}

    def follow(self, view: KubeProjection) -> None:
        """Read pods' controllers from ``view``'s owner graph (followed from now on)."""
        view.owners.follow(view, ((self.rk_pods, True),))
        self._graph = view.owners

    def _graph_owner(self, owner: OwnerKey) -> Owner:
        return (self._cluster, owner[1], owner[2], owner[0], owner[3])

    def _owner_of_key(self, key: Key) -> OwnerKey | None:
        """The owner ``key`` is linked under: a pod's controller, else its whitelisted owner."""
        if key[0] == self.rk_pods:
            linked = self._graph.owner(key)
            if linked is not None:
                return (linked[3], linked[1], linked[2], linked[4])
        return self._owner.get(key)

    def _pod_owner_before(self, key: Key) -> OwnerKey | None:
        """The owner a pod was linked under before the owner graph's last update."""
        graph = self._graph
        if key in graph.moved:
            linked = graph.moved[key]
            if linked is not None:
                return (linked[3], linked[1], linked[2], linked[4])
            return self._owner.get(key)
        return self._owner_of_key(key)

    def _has_children(self, owner: OwnerKey) -> bool:
        if owner in self._children:
            return True
        linked = self._graph_owner(owner)
        return bool(self._graph.pods(linked) or self._graph.children(linked))

    def follows(self, group: str, kind: str) -> bool:
        """Whether workloads of this kind are indexed (a kind outside the table is not streamed)."""
        return (group, kind) in self._rk_of_kind

    def target_of(self, okey: str) -> OwnerKey | None:
        return self._target_of.get(okey)

    def pods_on(self, node: str) -> set[str]:
        return self._node_pods.get(node, set())

    def decode(self, view: KubeProjection, key: Key) -> dict[str, Any] | None:
        if key[0] == self.rk_pods:
            return view.decoded(*key)  # pods are read on every plan of their spread: kept
        stored = view.stored(*key)
        return None if stored is None else decode_object(stored)

    def index_spread(self, view: KubeProjection, okey: str) -> bool:
        """Re-index one WorkloadSpread's target; whether the WorkloadSpread still exists.

        Most observations of a WorkloadSpread are its status, written by its own plans: the
        target and so the WorkloadSpreads above each owner stay as they are then.
        """
        obj = self.decode(view, (self.rk_spreads, okey))
        target = None if obj is None else _target(obj)
        old = self._target_of.get(okey)
        if target != old:
            self._above.clear()  # the chains reach another set of WorkloadSpreads now
            if old is not None:
                del self._target_of[okey]
                spreads = self._spreads_by_target[old]
                spreads.discard(okey)
                if not spreads:
                    del self._spreads_by_target[old]
            if target is not None:
                self._target_of[okey] = target
                self._spreads_by_target.setdefault(target, set()).add(okey)
        return obj is not None

    def index_member(self, view: KubeProjection, rkey: str, okey: str) -> set[str]:
        """Re-index one pod or workload; the WorkloadSpreads above it, before and after."""
        key = (rkey, okey)
        if rkey == self.rk_pods:
            stored = view.stored(rkey, okey)
            links = _links(stored) if stored is not None else None
            if links is not None:
                known = self._pod_links.get(okey)
                if known is not None and known[0] == links:
                    # Indexed the same way as before: only the WorkloadSpreads above it. The
                    # newer links are kept, as they read the buffer the projection holds now.
                    self._pod_links[okey] = (links, known[1])
                    affected = self.spreads_above(key)
                    if known[1] is not None and known[1] in self._target_of:
                        affected.add(known[1])
                    return affected
                return self._index(view, key, links.as_pod(), links)
        return self._index(view, key, None, None)

    def _index(
        self,
        view: KubeProjection,
        key: Key,
        read: Mapping[str, Any] | None,
        links: _PodLinks | None,
    ) -> set[str]:
        """Re-index ``key`` from ``read`` (its links as a pod), else from its full decode."""
        rkey, okey = key
        is_pod = rkey == self.rk_pods
        before = self._pod_owner_before(key) if is_pod else self._owner.get(key)
        affected = self._spreads_over(before)
        old = self._owner.pop(key, None)
        if old is not None:
            for children in (self._children, self._child_workloads):
                siblings = children.get(old)
                if siblings is not None:
                    siblings.discard(key)
                    if not siblings:
                        del children[old]
        if before is not None and not self._has_children(before):
            # Nothing below it asks any more; an owner outside the index (a Job...) would
            # otherwise be remembered for good, as no observation of it ever comes.
            self._above.pop(before, None)
        obj = read if read is not None else self.decode(view, key)
        if is_pod:
            node = self._pod_node.pop(okey, None)
            if node is not None:
                on_node = self._node_pods[node]
                on_node.discard(okey)
                if not on_node:
                    del self._node_pods[node]  # nodes come and go with elastic capacity
            self._pod_links.pop(okey, None)
        if obj is None:
            if old is not None and not is_pod:
                self._above.clear()  # the chains through this workload end here now
            return affected
        metadata = obj.get("metadata") or {}
        namespace = str(metadata.get("namespace") or "")
        owner = _owner_of(obj, namespace, self._whitelist if is_pod else None)
        if owner != old and not is_pod:
            self._above.clear()  # the chains through this workload go elsewhere now
        if is_pod and self._graph.owner(key) is not None:
            pass  # linked to its controller in the owner graph
        elif owner is not None:
            self._owner[key] = owner
            self._children.setdefault(owner, set()).add(key)
            if not is_pod:
                self._child_workloads.setdefault(owner, set()).add(key)
        if is_pod:
            node = pod_state.node_name(obj)
            if node:
                self._pod_node[okey] = node
                self._node_pods.setdefault(node, set()).add(okey)
            matched = pod_state.matched(obj)
            named: str | None = None
            if matched is not None and matched.name:
                named = object_key(namespace, matched.name)
                if named in self._target_of:
                    affected.add(named)
            if links is not None:
                self._pod_links[okey] = (links, named)
        else:
            group, kind = self.rk_workloads[rkey]
            affected |= self._spreads_by_target.get(
                (namespace, group, kind, str(metadata.get("name") or "")), set()
            )
        return affected | self.spreads_above(key)

    def spreads_above(self, key: Key) -> set[str]:
        return self._spreads_over(self._owner_of_key(key))

    def _spreads_over(self, owner: OwnerKey | None) -> set[str]:
        """The WorkloadSpreads at or above ``owner`` (remembered per owner)."""
        if owner is None:
            return set()
        found = self._above.get(owner)
        if found is None:
            found = self._above[owner] = frozenset(self._spreads_from(owner))
        return set(found)

    def _spreads_from(self, owner: OwnerKey | None) -> set[str]:
        """The WorkloadSpreads targeting ``owner`` or any workload above it."""
        found: set[str] = set()
        for _ in range(_MAX_CHAIN):
            if owner is None:
                break
            found |= self._spreads_by_target.get(owner, set())
            rkey = self._rk_of_kind.get((owner[1], owner[2]))
            if rkey is None:
                break
            owner = self._owner.get((rkey, object_key(owner[0], owner[3])))
        return found

    def pods_below(self, target: OwnerKey) -> list[Key]:
        """The pods below ``target`` in the owner index, at any depth."""
        found: list[Key] = []
        graph = self._graph
        frontier = [target]
        for _ in range(_MAX_CHAIN):
            nxt: list[OwnerKey] = []
            for owner in frontier:
                found.extend(graph.pods(self._graph_owner(owner)))
                found.extend(k for k in self._children.get(owner, ()) if k[0] == self.rk_pods)
                for child in self._child_workloads.get(owner, ()):
                    group, kind = self.rk_workloads[child[0]]
                    nxt.append((owner[0], group, kind, unescape(child[1].split(".", 1)[1])))
            if not nxt:
                break
            frontier = nxt
        return found

    def workload_descendants(self, target: OwnerKey) -> list[tuple[Key, OwnerKey]]:
        """The workloads below ``target`` (ReplicaSets of a Deployment...), each with its owner.

        Costs those workloads, never the pods below them.
        """
        return list(self._walk(target, self._child_workloads))

    def _walk(
        self, target: OwnerKey, children: Mapping[OwnerKey, set[Key]]
    ) -> Iterator[tuple[Key, OwnerKey]]:
        """Each child in ``children`` below ``target``, level by level, with its owner."""
        frontier = [target]
        for _ in range(_MAX_CHAIN):
            nxt: list[OwnerKey] = []
            for owner in frontier:
                for child in children.get(owner, ()):
                    yield child, owner
                    if child[0] == self.rk_pods:
                        continue
                    group, kind = self.rk_workloads[child[0]]
                    nxt.append((owner[0], group, kind, unescape(child[1].split(".", 1)[1])))
            if not nxt:
                break
            frontier = nxt

    def lookup(self, view: KubeProjection) -> Lookup:
        cache: dict[OwnerKey, Mapping[str, Any] | None] = {}

        def lookup(namespace: str, group: str, kind: str, name: str) -> Mapping[str, Any] | None:
            key = (namespace, group, kind, name)
            if key not in cache:
                rkey = self._rk_of_kind.get((group, kind))
                cache[key] = (
                    None if rkey is None
                    else self.decode(view, (rkey, object_key(namespace, name)))
                )
            return cache[key]

        return lookup
