"""Controller references of the projection's objects, both ways, per cluster.

Every controller finds its objects through ``ownerReferences`` (``controller: true``): a pod's
ReplicaSet, a ReplicaSet's Deployment, a subset workload's UnitedDeployment. The projection keeps
that graph once for every rule instead of each rule keeping its own: each followed object's
controller (:meth:`OwnerGraph.owner`), and each owner's objects, pods apart (:meth:`children`,
:meth:`pods`), so a walk down to a UnitedDeployment's workloads never steps over their pods.

An owner is named by its cluster (escaped, as the projection's keys begin), API group, kind,
namespace and name: the graph of one cluster never reaches an object of another, even when both
hold objects of the same names. Owner names are kept once however many objects share them.

Only the resources a rule follows are read (:meth:`follow`, with their projection resource keys);
following a resource reads every object of it held so far. The graph is brought up to date with
the keys the projection hands to the planner (:meth:`KubeProjection.take_changed`), each read by a
partial decode of its owner references only; the owners those keys had before, for the ones whose
owner changed in that update, are in :attr:`moved` until the next update.

It is not in snapshots: it is derived data, rebuilt from the objects themselves when a restore
offers every object again (cheaper to rebuild than to store, and never out of step with them).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

import msgspec

from events.subjects import unescape
from kubesemantics.group_version import api_group

if TYPE_CHECKING:
    from spreadbus.projection.kube_state import KubeProjection

Key = tuple[str, str]
"""(resource key, object key), as the projection keys its objects."""
Owner = tuple[str, str, str, str, str]
"""(escaped cluster, API group, kind, namespace, name) of a controller."""


class _Metadata(msgspec.Struct, gc=False):
    ownerReferences: list[Any] | None = None


class _Head(msgspec.Struct, gc=False):
    metadata: _Metadata | None = None


_HEAD: Final = msgspec.json.Decoder(_Head)


def controller_of(raw: bytes) -> tuple[str, str, str] | None:
    """(API group, kind, name) of the object's controller, read from its JSON alone: the first
    reference whose ``controller`` is true, as :func:`kubesemantics.owner_refs.controller_ref`
    reads it (leniently: a field of the wrong type reads as absent)."""
    try:
        head = _HEAD.decode(raw)
    except msgspec.DecodeError:
        return None
    refs = head.metadata.ownerReferences if head.metadata is not None else None
    for ref in refs or ():
        if type(ref) is dict and ref.get("controller") is True:
            return (api_group(str(ref.get("apiVersion") or "")), str(ref.get("kind") or ""),
                    str(ref.get("name") or ""))
    return None


class OwnerGraph:
    def __init__(self) -> None:
        self._followed: dict[str, bool] = {}
        """Resource key -> whether its objects are pods (kept apart from other children)."""
        self._owner: dict[Key, Owner] = {}
        self._children: dict[Owner, set[Key]] = {}
        self._pods: dict[Owner, set[Key]] = {}
        self._names: dict[Owner, Owner] = {}
        """Each owner's name once, shared by every object it controls."""
        self.moved: dict[Key, Owner | None] = {}
        """Key -> its owner before the last update, for the keys whose owner it changed."""

    def follow(self, view: KubeProjection, rkeys: Iterable[tuple[str, bool]]) -> None:
        """Keep the owners of these resources (resource key, whether it holds pods) from now on;
        one not followed yet is read whole at once."""
        for rkey, pods in rkeys:
            if rkey in self._followed:
                continue
            self._followed[rkey] = pods
            for okey in list(view.state.objects.get(rkey, {})):
                self._relink(view, (rkey, okey))

    def update(self, view: KubeProjection, keys: Iterable[Key]) -> None:
        """Relink the objects of ``keys`` (changed, added or gone) that are followed."""
        self.moved = {}
        followed = self._followed
        if not followed:
            return
        for key in keys:
            if key[0] in followed:
                self._relink(view, key)

    def owner(self, key: Key) -> Owner | None:
        return self._owner.get(key)

    def children(self, owner: Owner) -> set[Key]:
        """The objects ``owner`` controls, its pods apart (:meth:`pods`)."""
        return self._children.get(owner, set())

    def pods(self, owner: Owner) -> set[Key]:
        return self._pods.get(owner, set())

    def _relink(self, view: KubeProjection, key: Key) -> None:
        rkey, okey = key
        stored = view.stored(rkey, okey)
        ref = None if stored is None else controller_of(stored.raw)
        owner: Owner | None = None
        if ref is not None:
            namespace = unescape(okey.split(".", 1)[0])
            name = (rkey.split(".", 1)[0], ref[0], ref[1], namespace, ref[2])
            owner = self._names.setdefault(name, name)
        old = self._owner.get(key)
        if old == owner:
            return
        self.moved.setdefault(key, old)
        below = self._pods if self._followed[rkey] else self._children
        if old is not None:
            siblings = below.get(old)
            if siblings is not None:
                siblings.discard(key)
                if not siblings:
                    del below[old]
                    if old not in self._children and old not in self._pods:
                        self._names.pop(old, None)
        if owner is None:
            del self._owner[key]
        else:
            self._owner[key] = owner
            below.setdefault(owner, set()).add(key)
