"""Object storage, the global resourceVersion counter, the event history and watch fan-out.

The store plays etcd plus the API server's watch cache. Design points:

- Stored objects are never mutated: every write stores a new dict. Readers can therefore share
  them without copying, and each event encodes its object once (lazily) however many watchers
  receive it. Callers outside the HTTP path copy before handing objects out.
- One counter stamps every write of every resource, so resourceVersions are globally ordered
  and a list's resourceVersion is a valid watch starting point for any resource.
- History is a bounded deque shared by all resources. A watch that starts from a version older
  than the oldest retained event gets 410 Gone, which is how tests force a relist.
- Fan-out is synchronous inside the writer's call; each watcher has a bounded queue and a
  watcher that falls ``max_queue`` events behind is closed (its client re-watches from its
  last version), so a slow reader never holds up writers or memory.
- Writes are counted per resource, so a cache of what a resource's objects imply (admission's
  compiled webhook configurations) knows it is current without reading the objects again.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

JsonObject = dict[str, Any]
StorageKey = tuple[str, str]
ObjectKey = tuple[str, str]  # (namespace or "", name)

_encode = msgspec.json.Encoder().encode


@dataclass(slots=True)
class Event:
    rv: int
    key: StorageKey
    type: str
    obj: JsonObject
    old: JsonObject | None = None
    _encoded: bytes | None = None

    def encoded(self) -> bytes:
        if self._encoded is None:
            self._encoded = _encode(self.obj)
        return self._encoded


Filter = Callable[[JsonObject], bool]


class Watcher:
    """One watch's queue; ``filter`` decides visibility (namespace, labels, fields)."""

    __slots__ = (
        "_waiter",
        "closed",
        "filter",
        "gone",
        "key",
        "max_queue",
        "namespace",
        "overflowed",
        "queue",
    )

    def __init__(
        self,
        key: StorageKey,
        namespace: str | None,
        filter: Filter | None,
        max_queue: int,
    ) -> None:
        self.key = key
        self.namespace = namespace
        self.filter = filter
        self.max_queue = max_queue
        self.queue: deque[tuple[str, Event, JsonObject]] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self.closed = False
        self.overflowed = False
        self.gone = False

    def visible(self, obj: JsonObject | None) -> bool:
        if obj is None:
            return False
        if self.namespace is not None and obj["metadata"].get("namespace") != self.namespace:
            return False
        return self.filter is None or self.filter(obj)

    def offer(self, ev: Event) -> None:
        if self.closed:
            return
        now = self.visible(ev.obj)
        if ev.type == "MODIFIED" and self.filter is not None:
            before = self.visible(ev.old)
            if now and not before:
                self._push("ADDED", ev, ev.obj)
            elif before and not now:
                assert ev.old is not None
                old = dict(ev.old)
                old["metadata"] = {**ev.old["metadata"], "resourceVersion": str(ev.rv)}
                self._push("DELETED", ev, old)
            elif now:
                self._push("MODIFIED", ev, ev.obj)
        elif now:
            self._push(ev.type, ev, ev.obj)

    def _push(self, kind: str, ev: Event, obj: JsonObject) -> None:
        if len(self.queue) >= self.max_queue:
            self.overflowed = True
            self.close()
            return
        self.queue.append((kind, ev, obj))
        if self._waiter is not None:
            _release(self._waiter)

    def close(self) -> None:
        self.closed = True
        if self._waiter is not None:
            _release(self._waiter)

    async def wait(self, timeout: float | None) -> None:
        """Until an event is queued, the watcher closes, or ``timeout`` passes.

        One future and one timer per wait (``asyncio.wait_for`` would add a task): a watch
        waits once per batch of events it sends.
        """
        if self.queue or self.closed:
            return
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        timer = None if timeout is None else loop.call_later(timeout, _release, waiter)
        try:
            await waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()

    def drain(self) -> list[tuple[str, Event, JsonObject]]:
        items = list(self.queue)
        self.queue.clear()
        return items


def _release(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


@dataclass
class Store:
    history_size: int = 10_000
    rv: int = 1
    compacted: int = 0
    objects: dict[StorageKey, dict[ObjectKey, JsonObject]] = field(default_factory=dict)
    history: deque[Event] = field(default_factory=deque)
    watchers: dict[StorageKey, set[Watcher]] = field(default_factory=dict)
    by_uid: dict[str, tuple[StorageKey, ObjectKey]] = field(default_factory=dict)
    dependents: dict[str, set[tuple[StorageKey, ObjectKey]]] = field(default_factory=dict)
    listeners: list[Callable[[Event], None]] = field(default_factory=list)
    writes: dict[StorageKey, int] = field(default_factory=dict)
    """Writes per resource so far: a cache of what a resource's objects imply (the compiled
    webhook configurations) is current while its count has not moved."""

    def bucket(self, key: StorageKey) -> dict[ObjectKey, JsonObject]:
        b = self.objects.get(key)
        if b is None:
            b = self.objects[key] = {}
        return b

    def get(self, key: StorageKey, ns: str, name: str) -> JsonObject | None:
        b = self.objects.get(key)
        return None if b is None else b.get((ns, name))

    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def items(self, key: StorageKey, namespace: str | None) -> Iterator[JsonObject]:
        b = self.objects.get(key)
        if not b:
            return iter(())
        if namespace is None:
            return iter(list(b.values()))
        return iter([o for (ns, _), o in b.items() if ns == namespace])

    def write(self, key: StorageKey, obj: JsonObject, kind: str, old: JsonObject | None) -> Event:
        """Store ``obj`` (already stamped with ``resourceVersion``) and publish the event."""
        meta = obj["metadata"]
        okey = (meta.get("namespace", ""), meta["name"])
        self.writes[key] = self.writes.get(key, 0) + 1
        if kind == "DELETED":
            self.bucket(key).pop(okey, None)
            self.by_uid.pop(meta.get("uid", ""), None)
        else:
            self.bucket(key)[okey] = obj
            self.by_uid[meta["uid"]] = (key, okey)
        self._index_owners(
            key, okey, old if kind != "ADDED" else None, None if kind == "DELETED" else obj
        )
        ev = Event(int(meta["resourceVersion"]), key, kind, obj, old)
        self._record(ev)
        return ev

    def _index_owners(
        self, key: StorageKey, okey: ObjectKey, old: JsonObject | None, new: JsonObject | None
    ) -> None:
        before = {
            r.get("uid") for r in (old or {}).get("metadata", {}).get("ownerReferences") or ()
        }
        after = {r.get("uid") for r in (new or {}).get("metadata", {}).get("ownerReferences") or ()}
        if before == after:
            return
        ref = (key, okey)
        for uid in before - after:
            deps = self.dependents.get(uid)
            if deps is not None:
                deps.discard(ref)
                if not deps:
                    del self.dependents[uid]
        for uid in after - before:
            if isinstance(uid, str):
                self.dependents.setdefault(uid, set()).add(ref)

    def _record(self, ev: Event) -> None:
        history = self.history
        history.append(ev)
        while len(history) > self.history_size:
            self.compacted = history.popleft().rv
        for w in tuple(self.watchers.get(ev.key, ())):
            w.offer(ev)
        for listener in self.listeners:
            listener(ev)

    def snapshot(self, key: StorageKey, at: int) -> dict[ObjectKey, JsonObject]:
        """The bucket as it was at resourceVersion ``at``, undoing newer history (like an
        etcd read at a revision); callers check ``at`` against ``compacted`` first."""
        current = self.objects.get(key) or {}
        if at >= self.rv:
            return current
        past = dict(current)
        for ev in reversed(self.history):
            if ev.rv <= at:
                break
            if ev.key != key:
                continue
            meta = ev.obj["metadata"]
            okey = (meta.get("namespace", ""), meta["name"])
            if ev.type == "ADDED":
                past.pop(okey, None)
            elif ev.old is not None:
                past[okey] = ev.old
        return past

    def add_watcher(self, w: Watcher) -> None:
        self.watchers.setdefault(w.key, set()).add(w)

    def remove_watcher(self, w: Watcher) -> None:
        ws = self.watchers.get(w.key)
        if ws is not None:
            ws.discard(w)

    def replay(self, w: Watcher, after: int) -> bool:
        """Queue history after ``after`` for ``w``; False if that history is compacted."""
        if after < self.compacted:
            return False
        for ev in self.history:
            if ev.rv > after and ev.key == w.key:
                w.offer(ev)
        return True

    def close_all_watchers(self) -> None:
        for ws in self.watchers.values():
            for w in ws:
                w.close()
        self.watchers.clear()
