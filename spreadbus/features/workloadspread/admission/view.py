"""The webhook's own projection of the cluster, folded from the observation stream.

Admission must answer in milliseconds without asking the API server, so the webhook keeps, per
namespace, exactly what an admission decision reads:

- WorkloadSpreads, decoded once per change into the placement core's model, and the workloads a
  pod's owner chain walks through: every kind of
  :mod:`spreadbus.features.workloadspread.core.workload_kinds` (the table the watcher watches),
  whitelisted custom kinds included;
- pods, each kept as the fields a decision reads
  (:class:`~spreadbus.features.workloadspread.admission.kept_pod.KeptPod`, about a hundred
  bytes where a realistic pod decoded takes 18 kB) and read once per change by the counting rule
  (:func:`spreadbus.features.workloadspread.core.occupancy.occupant`), with two indexes of those
  readings kept current on every pod event so that a decision costs O(subsets), never O(pods):
  the active pods each spread's annotations claim per ``(version, subset)``, and the reservation
  key of every pod present, which tells that a reservation has been observed. :meth:`occupied`
  hands them to the rule (:func:`~spreadbus.features.workloadspread.core.occupancy.count_loads`)
  as a full scan of the pods would. An event that changes nothing the view keeps (most are
  status updates) keeps the pod's reading and entries as they are: the kept pods are this
  feature's part of the replica's one pod view (:class:`~spreadbus.projection.pod_view.PodView`,
  which tells when), or of a view of its own when none is given (a view used alone).

Owners the view cannot see. A workload kind is *followed* once its resource has completed a
list (a sync marker) in this view. :meth:`owner_lookup` answers an owner of a kind that is not
followed (not in the table, its CRD not installed, or a watcher that does not stream it) with an
object that has no controller: the owner chain ends there and the pod is not governed, rather
than refused. An owner of a followed kind that the view does not hold is ``None``: the core then
raises ``OwnerNotFound`` and, as upstream, the pod's creation fails once the view had a chance
to catch up.

``seq`` is the last stream sequence folded in; the reservation ledger records the ``seq`` its
writer's view had reached, and a reader behind it waits until it catches up.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from events import codec
from events.messages import Observation, SyncMarker
from spreadbus.features.workloadspread.admission.kept_pod import KeptPod, KeptPods
from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.model import WorkloadSpread, from_object
from spreadbus.features.workloadspread.core.occupancy import Occupant, Occupied, Slot, occupant
from spreadbus.features.workloadspread.core.workload_kinds import WorkloadKinds, workload_kinds
from spreadbus.projection.pod_view import PodPart, PodView, is_pod_subject
from spreadbus.projection.tracking import Fold, Tracked

log = logging.getLogger(__name__)

SPREAD_KEY: Final = ("apps.kruise.io", "workloadspreads")
POD_KEY: Final = ("", "pods")
_CHAIN_END: Final[Mapping[str, Any]] = {"metadata": {}}
"""What :meth:`View.owner_lookup` answers for an owner it cannot follow: no controller."""

Objects = dict[tuple[str, str], dict[str, Any]]
"""(namespace, name) -> object, for one resource."""
_NAMESPACES_REMEMBERED: Final = 4096
"""Bound on :meth:`View.spreads_in` answers kept (namespaces without spreads are asked too)."""


class _Occupied:
    """The rule's :class:`Occupied` for one spread of one namespace, read from the indexes."""

    __slots__ = ("_keys", "_slots")

    def __init__(self, keys: Mapping[str, str], slots: Mapping[Slot, set[str]]) -> None:
        self._keys = keys
        self._slots = slots

    def keys(self) -> Mapping[str, str]:
        return self._keys

    def slots(self) -> Mapping[Slot, set[str]]:
        return self._slots


_NONE: Final[Mapping[str, Any]] = {}


@dataclass
class View:
    """Objects by resource, the pod indexes, and how far the stream has been folded."""

    cluster: str
    kinds: WorkloadKinds = field(default_factory=workload_kinds)
    """Workload kinds an owner chain may pass through (built-in and whitelisted)."""
    stores: dict[tuple[str, str], Objects] = field(default_factory=dict)
    """Every resource kept but pods, as observed."""
    spreads: dict[tuple[str, str], WorkloadSpread] = field(default_factory=dict)
    synced: set[tuple[str, str]] = field(default_factory=set)
    followed: set[tuple[str, str]] = field(default_factory=set)
    """(group, resource) that completed a list at least once: a relist does not unfollow."""
    skipped: int = 0
    watched: frozenset[tuple[str, str]] = field(init=False)
    """(group, resource) pairs the view keeps; other observations are skipped cheaply."""
    _slots: dict[tuple[str, str], dict[Slot, set[str]]] = field(default_factory=dict)
    _keys: dict[str, dict[str, str]] = field(default_factory=dict)
    """namespace -> reservation key -> the name of the pod present with it."""
    _pods: dict[tuple[str, str], Occupant] = field(default_factory=dict)
    """Each pod's reading by the counting rule, which the indexes are made of."""
    pods: PodPart[KeptPod] | None = field(default=None, repr=False, compare=False)
    """Each pod as kept (what a decision reads of it): the feature's part of the replica's pod
    view, which folds the pods; ``None``: the view keeps and folds them in one of its own."""
    _own_pods: PodView | None = field(init=False, repr=False, compare=False)
    _kept: PodPart[KeptPod] = field(init=False, repr=False, compare=False)
    _spreads_by_namespace: dict[str, list[WorkloadSpread]] = field(default_factory=dict)
    """:meth:`spreads_in` answers, sorted once per WorkloadSpread change, not per admission."""

    tracking: Tracked[None] = field(init=False, repr=False, compare=False)
    apply_message: Fold[None] = field(init=False, repr=False, compare=False)
    """Follower sink: decode and fold; a message it cannot read is counted, never raised."""

    def __post_init__(self) -> None:
        kinds = {(k.group, k.resource) for k in self.kinds}
        self.watched = frozenset({POD_KEY, SPREAD_KEY} | kinds)
        if self.pods is None:
            self._own_pods = PodView(self.cluster, (KeptPod.of,))
            self._kept = self._own_pods.part(0)
        else:
            self._own_pods = None
            self._kept = self.pods
        self._kept.listen(self._pod_observed)
        self.tracking = Tracked(self._fold_message)
        self.apply_message = self.tracking.apply

    @property
    def seq(self) -> int:
        """The last stream sequence folded in."""
        return self.tracking.last_seq

    @seq.setter
    def seq(self, seq: int) -> None:
        self.tracking.record.last_seq = seq

    @property
    def objects(self) -> Mapping[tuple[str, str], Mapping[tuple[str, str], Mapping[str, Any]]]:
        """Objects by resource; pods as kept (:meth:`KeptPod.to_object`)."""
        if not self._kept:
            return self.stores
        return {**self.stores, POD_KEY: KeptPods(self._kept)}

    # -- folding ------------------------------------------------------------------------------

    def _fold_message(self, seq: int, subject: str, data: bytes) -> None:
        if self._own_pods is None and is_pod_subject(subject):
            return  # the replica's pod view folds it
        event = codec.decode(data)
        if isinstance(event, Observation):
            self.apply(event)
        elif isinstance(event, SyncMarker):
            key = (event.group, event.resource)
            if event.cluster == self.cluster and key in self.watched:
                if event.complete:
                    self.synced.add(key)
                    self.followed.add(key)
                else:
                    self.synced.discard(key)
        else:
            self.skipped += 1

    def apply(self, event: Observation) -> None:
        key = (event.group, event.resource)
        if event.cluster != self.cluster or key not in self.watched:
            return
        metadata = event.object.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        namespace = (metadata.get("namespace") or "") if isinstance(metadata, dict) else None
        if not isinstance(name, str) or not isinstance(namespace, str):
            self.skipped += 1
            return
        gone = event.event == "DELETED"
        if key == POD_KEY:
            if self._own_pods is not None:
                self._own_pods.observe((namespace, name), None if gone else event.object)
            return
        store = self.stores.setdefault(key, {})
        if gone:
            store.pop((namespace, name), None)
        else:
            store[(namespace, name)] = event.object
        if key == SPREAD_KEY:
            log.debug(
                "workloadspread observed",
                extra={"workloadspread": f"{namespace}/{name}", "event": event.event,
                       "view_seq": self.seq},
            )
            if gone:
                self.spreads.pop((namespace, name), None)
            else:
                self.spreads[(namespace, name)] = from_object(event.object)
            self._spreads_by_namespace.pop(namespace, None)

    def _pod_observed(
        self, at: tuple[str, str], pod: Mapping[str, Any] | None, changed: bool
    ) -> None:
        """Re-read the pod (or forget it) unless what is kept of it stayed the same."""
        if changed:
            self._index_pod(at, pod)
        elif pod is not None and log.isEnabledFor(logging.DEBUG):
            reading = self._pods.get(at)
            self._trace(at[0], at[1], reading, reading, pod)

    def _index_pod(self, at: tuple[str, str], pod: Mapping[str, Any] | None) -> None:
        """Replace the pod's reading and index entries; ``at`` is shared by every store."""
        namespace, name = at
        previous = self._pods.pop(at, None)
        found = occupant(pod) if pod is not None else None
        if found is not None:
            found = found._replace(version=sys.intern(found.version))
        if log.isEnabledFor(logging.DEBUG):
            self._trace(namespace, name, previous, found, pod)
        if previous is not None:
            keys = self._keys.get(namespace)
            if keys is not None and keys.get(previous.key) == name:
                del keys[previous.key]
                if not keys:
                    del self._keys[namespace]
            claim = previous.claim
            if claim is not None:
                spread, slot = claim
                self._slots.get((namespace, spread), {}).get(slot, set()).discard(name)
        if found is None:
            return
        self._pods[at] = found
        self._keys.setdefault(namespace, {})[found.key] = name
        claim = found.claim
        if claim is not None:
            spread, slot = claim
            self._slots.setdefault((namespace, spread), {}).setdefault(slot, set()).add(name)

    def _trace(
        self,
        namespace: str,
        name: str,
        previous: Occupant | None,
        found: Occupant | None,
        pod: Mapping[str, Any] | None,
    ) -> None:
        before = previous.claim if previous is not None else None
        log.debug(
            "pod observed",
            extra={
                "pod": f"{namespace}/{name}",
                "view_seq": self.seq,
                "rv": pod_state.metadata(pod).get("resourceVersion") if pod is not None else None,
                "before": list(before[1]) if before is not None else None,
                "subset": found.subset or None if found is not None else None,
                "active": found is not None and found.active,
                "gone": found is None,
            },
        )

    # -- reading ------------------------------------------------------------------------------

    def get(
        self, group: str, resource: str, namespace: str, name: str
    ) -> Mapping[str, Any] | None:
        """An object this view holds (a pod as kept: :meth:`KeptPod.to_object`), or ``None``."""
        if (group, resource) == POD_KEY:
            kept = self._kept.get((namespace, name))
            return None if kept is None else kept.to_object()
        return self.stores.get((group, resource), {}).get((namespace, name))

    def lookup(self, namespace: str, group: str, kind: str, name: str) -> Mapping[str, Any] | None:
        """A workload this view holds, or ``None``."""
        found = self.kinds.find(group, kind)
        return None if found is None else self.get(group, found.resource, namespace, name)

    def owner_lookup(
        self, unfollowed: Callable[[str, str, str, str], None] | None = None
    ) -> Callable[[str, str, str, str], Mapping[str, Any] | None]:
        """The placement core's owner lookup; an owner of a kind not followed ends the chain.

        ``unfollowed(namespace, group, kind, name)`` is told about every such owner.
        """

        def lookup(namespace: str, group: str, kind: str, name: str) -> Mapping[str, Any] | None:
            followed, found = self.followed_lookup(namespace, group, kind, name)
            if followed:
                return found
            if unfollowed is not None:
                unfollowed(namespace, group, kind, name)
            return _CHAIN_END

        return lookup

    def followed_lookup(
        self, namespace: str, group: str, kind: str, name: str
    ) -> tuple[bool, Mapping[str, Any] | None]:
        """Whether owners of this kind are observed (its resource completed a list), and the one
        named if the view holds it: an admission asks both of every owner."""
        found = self.kinds.find(group, kind)
        if found is None or (group, found.resource) not in self.followed:
            return False, None
        return True, self.get(group, found.resource, namespace, name)

    def spread_objects_in(self, namespace: str) -> list[dict[str, Any]]:
        """WorkloadSpread objects of one namespace, in name order (the API's list order)."""
        store = self.stores.get(SPREAD_KEY, {})
        return [store[k] for k in sorted(k for k in store if k[0] == namespace)]

    def spreads_in(self, namespace: str) -> list[WorkloadSpread]:
        """WorkloadSpreads of one namespace, in name order (a new list the caller may keep)."""
        found = self._spreads_by_namespace.get(namespace)
        if found is None:
            if len(self._spreads_by_namespace) >= _NAMESPACES_REMEMBERED:
                self._spreads_by_namespace.clear()
            keys = sorted(k for k in self.spreads if k[0] == namespace)
            found = self._spreads_by_namespace[namespace] = [self.spreads[k] for k in keys]
        return list(found)

    def slots_of(self, namespace: str, spread: str) -> Mapping[Slot, set[str]]:
        return self._slots.get((namespace, spread), {})

    def seen(self, namespace: str, key: str) -> bool:
        """A pod with this reservation key is present (in any state)."""
        return key in self._keys.get(namespace, _NONE)

    def active(self, namespace: str, name: str) -> bool:
        found = self._pods.get((namespace, name))
        return found is not None and found.active

    def occupied(self, namespace: str, spread: str) -> Occupied:
        """One spread's pods as the counting rule reads them, from the indexes."""
        return _Occupied(self._keys.get(namespace, {}), self._slots.get((namespace, spread), {}))
