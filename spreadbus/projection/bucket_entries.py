"""A feature's key-value bucket entries: their JSON, and the fold of the bucket's stream.

A feature keeps one entry per object in a bucket of its own (:mod:`events.buckets`), written by
compare-and-set (:mod:`spreadbus.runtime.ledger`) and read back by the planner from the bucket's
stream. Both sides read an entry the same way: an empty body (a deleted or purged key) is the
empty entry, the entry type built with its defaults; an unreadable body reads as empty too, since
only a bug can have written one, and is logged and counted rather than raised.

:class:`BucketFold` is the planner's side: every cluster's live entries, by cluster and then by
object key, so that each cluster's rule reads its own (:meth:`BucketFold.of`). The bucket keeps
one revision per key, so its stream replays in one message per object and the fold is rebuilt
from the start on every start, never snapshotted. It keeps no position: the engine tracks it
(:mod:`spreadbus.projection.tracking`).

Signatures::

    JsonEntries(entry_type: type[E], *, what: str)
        .empty() -> E ; .encode(E) -> bytes ; .decode(bytes | None) -> E
    BucketFold(bucket: str, entries: JsonEntries[E], *, live: Callable[[E], bool])
        .apply(seq, subject, data) -> tuple[str, str] | None   # (cluster, object key)
        .of(cluster) -> ClusterEntries[E]
    ClusterEntries(...).get(key) -> E    # key: escaped ``namespace.name``; empty when none live
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final, Generic, TypeVar

import msgspec

from events.buckets import bucket_prefix, entry_of

log = logging.getLogger(__name__)

E = TypeVar("E")

_ENCODER: Final = msgspec.json.Encoder()


class JsonEntries(Generic[E]):
    """Entries as JSON of ``entry_type``, whose every field has a default."""

    def __init__(self, entry_type: type[E], *, what: str) -> None:
        self.empty: Callable[[], E] = entry_type
        self.what = what
        self.unreadable = 0
        self._decoder = msgspec.json.Decoder(entry_type)

    def encode(self, entry: E) -> bytes:
        return _ENCODER.encode(entry)

    def decode(self, data: bytes | None) -> E:
        if not data:
            return self.empty()
        try:
            return self._decoder.decode(data)
        except msgspec.DecodeError:
            self.unreadable += 1
            log.error("unreadable %s entry, read as empty", self.what)
            return self.empty()


class ClusterEntries(Generic[E]):
    """One cluster's live entries, as its rule reads them; filled as the fold goes on."""

    __slots__ = ("_empty", "live")

    def __init__(self, live: dict[str, E], empty: Callable[[], E]) -> None:
        self.live = live
        self._empty = empty

    def get(self, key: str) -> E:
        found = self.live.get(key)
        return self._empty() if found is None else found


class BucketFold(Generic[E]):
    """Every cluster's live entries of a bucket; ``live`` tells an entry worth keeping."""

    def __init__(self, bucket: str, entries: JsonEntries[E], *,
                 live: Callable[[E], bool]) -> None:
        self._prefix = bucket_prefix(bucket)
        self._entries = entries
        self._live = live
        self._clusters: dict[str, dict[str, E]] = {}
        """Cluster -> object key -> live entry."""
        self.skipped = 0

    def apply(self, seq: int, subject: str, data: bytes) -> tuple[str, str] | None:
        """Fold one message; the cluster and object key it changed."""
        if not subject.startswith(self._prefix):
            return None
        found = entry_of(len(self._prefix), subject)
        if found is None:
            self.skipped += 1
            return None
        cluster, key = found
        entry = self._entries.decode(data)
        live = self._clusters.setdefault(cluster, {})
        if self._live(entry):
            live[key] = entry
        else:
            live.pop(key, None)
        return found

    def of(self, cluster: str) -> ClusterEntries[E]:
        """``cluster``'s entries, now and as later messages change them."""
        return ClusterEntries(self._clusters.setdefault(cluster, {}), self._entries.empty)
