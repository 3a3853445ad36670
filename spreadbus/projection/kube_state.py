"""The projection of the ``KUBE`` stream: every object as last observed, and each resource's sync.

It is a fold that knows its position: :meth:`KubeProjection.fold` changes the state by one
message, and :attr:`KubeProjection.apply`, which takes ``(seq, subject, data)`` exactly as the
follower delivers it, is that fold behind its tracking record
(:mod:`spreadbus.projection.tracking`), ``KubeState.last_seq``, kept in the state so that a
snapshot holds both at once. A message at or below ``last_seq`` (a redelivery) changes nothing,
so applying a log twice, or a snapshot plus the tail after it, ends in the same state.

Speed is the design constraint (a million observations should replay in seconds), so:

- the object is kept as the raw JSON bytes the watcher published (``msgspec.Raw`` on decode, no
  dict built); rules decode only the objects they look at, through :meth:`KubeProjection.get`;
- the object's key is read from the subject (``<cluster>.<group>.<resource>`` and
  ``<namespace>.<name>``, still escaped, which is reversible) rather than from the JSON;
- one reused ``msgspec.json.Decoder`` reads only ``type``, ``v``, ``event``, ``object``, ``ts``;
- after :meth:`KubeProjection.mark_all_changed` (a restore, a new leader) every object counts as
  changed, so the fold stops recording keys one by one until :meth:`take_changed` lists them all
  once: a replay of a million objects does not build a million-entry set message by message,
  and a standby, which never decides, never builds it at all. Deletions are still recorded, so
  the keys handed out are exactly those an eager set would hold.

The state is mutated in place rather than copied per event, the one concession to speed; the
only mutating entry point is :attr:`apply` (or :meth:`fold`, for an owner that tracks the same
record itself), and :mod:`spreadbus.projection.snapshot` encodes it deterministically (sorted
keys), so two replays of one log give byte-identical snapshots.

Messages this fold does not understand (an unknown type, a malformed body) are counted in
``skipped`` and otherwise ignored; a newer version's extra fields are ignored by the decoder, and
an older version goes through the upcasters of :mod:`events.codec`.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator
from typing import Any, Final

import msgspec

from events import codec
from events.messages import SCHEMA_VERSION, Observation, SyncMarker
from events.subjects import escape
from spreadbus.projection.owner_graph import OwnerGraph
from spreadbus.projection.tracking import Tracked


class StoredObject(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """One object as last observed: stream position, the watcher's timestamp, and its JSON."""

    seq: int
    ts: float
    raw: bytes


class ResourceSync(msgspec.Struct, frozen=True, array_like=True, gc=False):
    complete: bool
    resource_version: str
    seq: int


class KubeState(msgspec.Struct, kw_only=True):
    """Everything the projection knows; what snapshots contain."""

    last_seq: int = 0
    objects: dict[str, dict[str, StoredObject]] = {}
    """``<cluster>.<group>.<resource>`` (escaped tokens) -> ``<namespace>.<name>`` -> object."""
    sync: dict[str, ResourceSync] = {}
    skipped: int = 0


class _ObservationHead(msgspec.Struct, tag="observation", tag_field="type", gc=False):
    event: str
    object: msgspec.Raw
    v: int = SCHEMA_VERSION
    ts: float = 0.0


class _SyncHead(msgspec.Struct, tag="sync", tag_field="type", gc=False):
    complete: bool
    v: int = SCHEMA_VERSION
    resource_version: str = ""


_HEAD: Final = msgspec.json.Decoder(_ObservationHead | _SyncHead)
_ENCODE: Final = msgspec.json.Encoder()


@functools.lru_cache(maxsize=1024)
def resource_key(cluster: str, group: str, resource: str) -> str:
    """Memoised: the planner's readiness gates ask for the same few keys on every round."""
    return f"{escape(cluster)}.{escape(group)}.{escape(resource)}"


@functools.lru_cache(maxsize=4096)
def side_resource_key(cluster: str, resource: str) -> str:
    """The resource key rules see for a change of a feature's side stream (``resource`` a
    pseudo resource such as ``$reservations``) about ``cluster``: it names the cluster first,
    as every projection key does."""
    return f"{escape(cluster)}.{resource}"


def object_key(namespace: str, name: str) -> str:
    """Memoised: owner chains ask for the same workloads' keys for each of their pods."""
    return f"{escape(namespace)}.{escape(name)}"


class KubeProjection:
    """The fold; ``changed`` collects the keys touched since the planner last looked."""

    def __init__(self, state: KubeState | None = None) -> None:
        self.state = state or KubeState()
        self.changed: set[tuple[str, str]] = set()
        self._all_changed = False
        self._decoded: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}
        self.owners = OwnerGraph()
        """The followed objects' controller references, brought up to date with every
        :meth:`take_changed` (not in snapshots: a restore offers every object again)."""
        self.tracking = Tracked(self.fold, self.state)
        self.apply = self.tracking.apply
        """The fold behind the state's position: what a follower delivers to."""

    @property
    def last_seq(self) -> int:
        return self.state.last_seq

    def fold(self, seq: int, subject: str, data: bytes) -> None:
        """One message, whatever the position (:attr:`apply` skips redeliveries)."""
        state = self.state
        try:
            head = _HEAD.decode(data)
        except msgspec.DecodeError:
            head = self._slow(data)
            if head is None:
                state.skipped += 1
                return
        tokens = subject.split(".")
        if type(head) is _ObservationHead:
            if len(tokens) != 7:
                state.skipped += 1
                return
            if head.v < SCHEMA_VERSION:
                upgraded = self._slow(data)
                if not isinstance(upgraded, _ObservationHead):
                    state.skipped += 1
                    return
                head = upgraded
            rkey = f"{tokens[2]}.{tokens[3]}.{tokens[4]}"
            okey = f"{tokens[5]}.{tokens[6]}"
            bucket = state.objects.get(rkey)
            if head.event == "DELETED":
                if bucket is not None and bucket.pop(okey, None) is not None:
                    self.changed.add((rkey, okey))
                    self._decoded.pop((rkey, okey), None)
                return
            if bucket is None:
                bucket = state.objects[rkey] = {}
            bucket[okey] = StoredObject(seq, head.ts, bytes(head.object))
            if not self._all_changed:
                self.changed.add((rkey, okey))
        elif type(head) is _SyncHead:
            if len(tokens) != 5:
                state.skipped += 1
                return
            rkey = f"{tokens[2]}.{tokens[3]}.{tokens[4]}"
            state.sync[rkey] = ResourceSync(head.complete, head.resource_version, seq)

    @staticmethod
    def _slow(data: bytes) -> _ObservationHead | _SyncHead | None:
        """Old versions and odd input: the full codec decides, then we re-read its result."""
        event = codec.decode(data)
        if isinstance(event, Observation):
            return _ObservationHead(
                event=event.event, object=msgspec.Raw(_ENCODE.encode(event.object)), ts=event.ts
            )
        if isinstance(event, SyncMarker):
            return _SyncHead(complete=event.complete, resource_version=event.resource_version)
        return None

    # -- reads for rules -----------------------------------------------------------------------

    def clusters(self) -> set[str]:
        """The clusters (escaped, as the keys begin) of every object and sync marker held."""
        return {rkey.partition(".")[0] for rkey in itertools.chain(self.state.objects,
                                                                    self.state.sync)}

    def synced(self, cluster: str, group: str, resource: str) -> bool:
        marker = self.state.sync.get(resource_key(cluster, group, resource))
        return marker is not None and marker.complete

    def objects(self, cluster: str, group: str, resource: str) -> dict[str, StoredObject]:
        return self.state.objects.get(resource_key(cluster, group, resource), {})

    def exists(self, cluster: str, group: str, resource: str, namespace: str, name: str) -> bool:
        return object_key(namespace, name) in self.objects(cluster, group, resource)

    def get(
        self, cluster: str, group: str, resource: str, namespace: str, name: str
    ) -> dict[str, Any] | None:
        stored = self.objects(cluster, group, resource).get(object_key(namespace, name))
        return None if stored is None else decode_object(stored)

    def stored(self, rkey: str, okey: str) -> StoredObject | None:
        """The object's last observation, by the keys :attr:`changed` holds."""
        return self.state.objects.get(rkey, {}).get(okey)

    def decoded(self, rkey: str, okey: str) -> dict[str, Any] | None:
        """The object as last observed, decoded once per observation for every reader that asks
        (a rule, then the diff of what it wants against it): shared, so never to be changed.

        Kept while the object lives (one decoded form per object at most, replaced when a newer
        observation is asked for) and dropped when it goes; :meth:`get` decodes a copy of one's
        own.
        """
        key = (rkey, okey)
        stored = self.stored(rkey, okey)
        if stored is None:
            self._decoded.pop(key, None)
            return None
        cached = self._decoded.get(key)
        if cached is not None and cached[0] == stored.seq:
            return cached[1]
        obj = decode_object(stored)
        self._decoded[key] = (stored.seq, obj)
        return obj

    def iter_decoded(
        self, cluster: str, group: str, resource: str
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        for key, stored in self.objects(cluster, group, resource).items():
            yield key, decode_object(stored)

    def take_changed(self) -> set[tuple[str, str]]:
        changed, self.changed = self.changed, set()
        if self._all_changed:
            self._all_changed = False
            every = self.all_keys()
            every |= changed  # the few recorded meanwhile: deletions
            changed = every
        self.owners.update(self, changed)
        return changed

    def all_keys(self) -> set[tuple[str, str]]:
        """``(resource key, object key)`` of every object held."""
        keys: set[tuple[str, str]] = set()
        for rkey, bucket in self.state.objects.items():
            keys.update(zip(itertools.repeat(rkey), bucket))
        return keys

    def mark_all_changed(self) -> None:
        """After a restore every object is new to the planner (listed by :meth:`take_changed`)."""
        self._all_changed = True


_OBJECT: Final = msgspec.json.Decoder(dict[str, Any])


def decode_object(stored: StoredObject) -> dict[str, Any]:
    return _OBJECT.decode(stored.raw)


