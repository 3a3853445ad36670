"""The webhook's own projection of the cluster, folded from the observation stream.

Admission must answer in milliseconds without asking the API server, so the webhook keeps, per
namespace, exactly what an admission decision reads:

- WorkloadSpreads, decoded once per change into the placement core's model, and the workloads a
  pod's owner chain walks through: every kind of
  :mod:`spreadbus.features.workloadspread.core.workload_kinds` (the table the watcher watches),
  whitelisted custom kinds included;
- pods, with two indexes kept current on every pod event so that a decision costs O(subsets),
  never O(pods): the active pods each spread counts per ``(version, subset)``, and the
  reservation key of every pod present (``creating_key``: the annotation's uid for pods
  admitted without a name, else the name), which tells that a reservation has been observed.
  An event that changes nothing the indexes are computed from (most are status updates) keeps
  the pod's entries as they are.

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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from events import codec
from events.messages import Observation, SyncMarker
from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.model import (
    MATCHED_ANNOTATION,
    WorkloadSpread,
    from_object,
)
from spreadbus.features.workloadspread.core.workload_kinds import WorkloadKinds, workload_kinds

log = logging.getLogger(__name__)

SPREAD_KEY: Final = ("apps.kruise.io", "workloadspreads")
POD_KEY: Final = ("", "pods")
_CHAIN_END: Final[Mapping[str, Any]] = {"metadata": {}}
"""What :meth:`View.owner_lookup` answers for an owner it cannot follow: no controller."""

Objects = dict[tuple[str, str], dict[str, Any]]
"""(namespace, name) -> object, for one resource."""
Slot = tuple[str, str]
"""(version, subset)."""
_NAMESPACES_REMEMBERED: Final = 4096
"""Bound on :meth:`View.spreads_in` answers kept (namespaces without spreads are asked too)."""


def _indexed_alike(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether two versions of a pod agree on everything its index entries are computed from.

    Most pod changes are status updates that move nothing in the indexes, so a new version that
    agrees with the previous one on what :meth:`View._index_pod` reads (through
    :mod:`~spreadbus.features.workloadspread.core.pod_state`: the kind, the matched annotation,
    labels, controller, whether the phase has ended, and deletion) keeps the entries it has instead
    of recomputing them.
    """
    if old.get("kind") != new.get("kind") or _ended(old) != _ended(new):
        return False
    before, after = pod_state.metadata(old), pod_state.metadata(new)
    return (
        _matched_text(before) == _matched_text(after)
        and before.get("deletionTimestamp") == after.get("deletionTimestamp")
        and before.get("labels") == after.get("labels")
        and before.get("ownerReferences") == after.get("ownerReferences")
    )


def _ended(pod: Mapping[str, Any]) -> bool:
    """All :func:`pod_state.is_active` reads of the phase: a pod starting keeps its entries."""
    return pod_state.phase(pod) in pod_state.ENDED_PHASES


def _matched_text(metadata: Mapping[str, Any]) -> object:
    annotations = metadata.get("annotations")
    return annotations.get(MATCHED_ANNOTATION) if isinstance(annotations, dict) else None


@dataclass(frozen=True)
class _Indexed:
    key: str
    spread: str = ""
    slot: Slot | None = None


@dataclass
class View:
    """Objects by resource, the pod indexes, and how far the stream has been folded."""

    cluster: str
    kinds: WorkloadKinds = field(default_factory=workload_kinds)
    """Workload kinds an owner chain may pass through (built-in and whitelisted)."""
    objects: dict[tuple[str, str], Objects] = field(default_factory=dict)
    spreads: dict[tuple[str, str], WorkloadSpread] = field(default_factory=dict)
    seq: int = 0
    synced: set[tuple[str, str]] = field(default_factory=set)
    followed: set[tuple[str, str]] = field(default_factory=set)
    """(group, resource) that completed a list at least once: a relist does not unfollow."""
    skipped: int = 0
    watched: frozenset[tuple[str, str]] = field(init=False)
    """(group, resource) pairs the view keeps; other observations are skipped cheaply."""
    _slots: dict[tuple[str, str], dict[Slot, set[str]]] = field(default_factory=dict)
    _keys: dict[tuple[str, str], str] = field(default_factory=dict)
    _pods: dict[tuple[str, str], _Indexed] = field(default_factory=dict)
    _spreads_by_namespace: dict[str, list[WorkloadSpread]] = field(default_factory=dict)
    """:meth:`spreads_in` answers, sorted once per WorkloadSpread change, not per admission."""

    def __post_init__(self) -> None:
        kinds = {(k.group, k.resource) for k in self.kinds}
        self.watched = frozenset({POD_KEY, SPREAD_KEY} | kinds)

    # -- folding ------------------------------------------------------------------------------

    def apply_message(self, seq: int, subject: str, data: bytes) -> None:
        """Follower sink: decode and fold; a message it cannot read is counted, never raised."""
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
        self.seq = seq

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
        store = self.objects.setdefault(key, {})
        gone = event.event == "DELETED"
        if gone:
            previous = store.pop((namespace, name), None)
        else:
            previous = store.get((namespace, name))
            store[(namespace, name)] = event.object
        if key == POD_KEY:
            if gone or previous is None or not _indexed_alike(previous, event.object):
                self._index_pod(namespace, name, None if gone else event.object)
            elif log.isEnabledFor(logging.DEBUG):
                self._trace(namespace, name, self._pods.get((namespace, name)), event.object)
        elif key == SPREAD_KEY:
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

    def _index_pod(self, namespace: str, name: str, pod: dict[str, Any] | None) -> None:
        previous = self._pods.pop((namespace, name), None)
        if log.isEnabledFor(logging.DEBUG):
            self._trace(namespace, name, previous, pod)
        if previous is not None:
            if self._keys.get((namespace, previous.key)) == name:
                del self._keys[(namespace, previous.key)]
            if previous.slot is not None:
                self._slots.get((namespace, previous.spread), {}).get(previous.slot, set()).discard(
                    name
                )
        if pod is None:
            return
        matched = pod_state.matched(pod)
        key = pod_state.creating_key_with(matched, pod) or name
        self._keys[(namespace, key)] = name
        if matched is None or not matched.name or not pod_state.is_active(pod):
            self._pods[(namespace, name)] = _Indexed(key)
            return
        slot = (pod_state.version(pod), matched.subset)
        self._slots.setdefault((namespace, matched.name), {}).setdefault(slot, set()).add(name)
        self._pods[(namespace, name)] = _Indexed(key, matched.name, slot)

    def _trace(
        self, namespace: str, name: str, previous: _Indexed | None, pod: dict[str, Any] | None
    ) -> None:
        matched = pod_state.matched(pod) if pod is not None else None
        log.debug(
            "pod observed",
            extra={
                "pod": f"{namespace}/{name}",
                "view_seq": self.seq,
                "rv": ((pod or {}).get("metadata") or {}).get("resourceVersion"),
                "before": list(previous.slot) if previous and previous.slot else None,
                "subset": matched.subset if matched else None,
                "active": pod is not None and pod_state.is_active(pod),
                "gone": pod is None,
            },
        )

    # -- reading ------------------------------------------------------------------------------

    def get(self, group: str, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get((group, resource), {}).get((namespace, name))

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
        store = self.objects.get(SPREAD_KEY, {})
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

    def active_in(self, namespace: str, spread: str, slot: Slot) -> set[str]:
        """Names of the active pods a spread counts in one (version, subset)."""
        return self._slots.get((namespace, spread), {}).get(slot, set())

    def slots_of(self, namespace: str, spread: str) -> Mapping[Slot, set[str]]:
        return self._slots.get((namespace, spread), {})

    def seen(self, namespace: str, key: str) -> bool:
        """A pod with this reservation key is present (in any state)."""
        return (namespace, key) in self._keys

    def active(self, namespace: str, name: str) -> bool:
        pod = self.get("", "pods", namespace, name)
        return pod is not None and pod_state.is_active(pod)
