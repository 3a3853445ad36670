"""List-and-watch caches with indexes, shared by the simulated components.

An :class:`Informer` lists a resource once, then follows its watch, keeping every object in
memory with secondary indexes (pods by node, by owner, by namespace...), and calls handlers with
``(old, new)`` for each change. Handlers only enqueue keys; controllers then read the cache, so
the work per event is proportional to what changed, never a relist.

Components write through: the object an API call returns is put into the cache at once (if its
resourceVersion is newer), so a controller that has just created ten pods does not create them
again before the watch catches up (the role upstream's "expectations" play). Deleted keys leave
a tombstone at the deletion's resourceVersion, so late watch events for them are ignored.
A 410 Gone or a closed stream is answered by a relist and a fresh watch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import Final

from kubesim.interface import GVR, ApiError, Cluster, JsonObject
from retrydelay import Backoff

log = logging.getLogger(__name__)
WATCH_RETRY: Final = Backoff(first=0.05, cap=2.0)
"""Between a failed watch and the next; forgotten once an event arrives."""

Handler = Callable[[JsonObject | None, JsonObject | None], None]
IndexFunc = Callable[[JsonObject], Iterable[str]]


def object_key(obj: JsonObject) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


def _rv(obj: JsonObject | None) -> int:
    try:
        return int((obj or {}).get("metadata", {}).get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


class Informer:
    """One resource's cache, indexes and change handlers."""

    def __init__(self, cluster: Cluster, gvr: GVR) -> None:
        self.cluster = cluster
        self.gvr = gvr
        self.store: dict[str, JsonObject] = {}
        self.synced = asyncio.Event()
        self._handlers: list[Handler] = []
        self._index_funcs: dict[str, IndexFunc] = {}
        self._indexes: dict[str, dict[str, dict[str, JsonObject]]] = {}
        self._tombstones: dict[str, int] = {}
        self._task: asyncio.Task[None] | None = None
        self._resource_version: str | None = None

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    def add_index(self, name: str, func: IndexFunc) -> None:
        self._index_funcs[name] = func
        index: dict[str, dict[str, JsonObject]] = {}
        for key, obj in self.store.items():
            for value in func(obj):
                index.setdefault(value, {})[key] = obj
        self._indexes[name] = index

    def by_index(self, name: str, value: str) -> list[JsonObject]:
        return list(self._indexes[name].get(value, {}).values())

    def index_keys(self, name: str, value: str) -> list[str]:
        return list(self._indexes[name].get(value, {}))

    def get(self, key: str) -> JsonObject | None:
        return self.store.get(key)

    def values(self) -> list[JsonObject]:
        return list(self.store.values())

    # -- cache maintenance -------------------------------------------------------------------

    def _set(self, key: str, obj: JsonObject | None) -> None:
        old = self.store.get(key)
        if old is not None:
            for name, func in self._index_funcs.items():
                for value in func(old):
                    bucket = self._indexes[name].get(value)
                    if bucket is not None:
                        bucket.pop(key, None)
                        if not bucket:
                            del self._indexes[name][value]
        if obj is None:
            self.store.pop(key, None)
        else:
            self.store[key] = obj
            for name, func in self._index_funcs.items():
                for value in func(obj):
                    self._indexes[name].setdefault(value, {})[key] = obj
        for handler in self._handlers:
            try:
                handler(old, obj)
            except Exception:
                log.exception("handler for %s %s failed", self.gvr.resource, key)

    def upsert(self, obj: JsonObject) -> None:
        """Record an object seen in an API response or watch event, unless it is stale."""
        key = object_key(obj)
        rv = _rv(obj)
        if self._tombstones.get(key, -1) >= rv:
            return
        self._tombstones.pop(key, None)
        current = self.store.get(key)
        if current is not None and _rv(current) >= rv:
            return
        self._set(key, obj)

    def remove(self, obj: JsonObject) -> None:
        """Record a deletion at the object's resourceVersion."""
        key = object_key(obj)
        rv = _rv(obj)
        current = self.store.get(key)
        if current is not None and _rv(current) > rv:
            return
        self._tombstones[key] = rv
        if current is not None:
            self._set(key, None)

    def write_result(self, obj: JsonObject) -> None:
        """Cache what a create, update, patch or delete call returned."""
        if obj.get("kind") == "Status":
            return
        self.upsert(obj)

    # -- list and watch ------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"informer-{self.gvr.resource}"
        )

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _relist(self) -> None:
        items, rv = await self.cluster.list(self.gvr)
        seen = set()
        for obj in items:
            key = object_key(obj)
            seen.add(key)
            self.upsert(obj)
        for key in [k for k in self.store if k not in seen]:
            self._set(key, None)
        self._tombstones.clear()
        self._resource_version = rv
        self.synced.set()

    async def _run(self) -> None:
        failures = 0
        while True:
            try:
                if self._resource_version is None:
                    await self._relist()
                async for event in self.cluster.watch(
                    self.gvr, resource_version=self._resource_version
                ):
                    failures = 0
                    if event.type == "ERROR":
                        code = (event.object or {}).get("code")
                        if code == 410:
                            self._resource_version = None
                            break
                        log.warning("watch %s error: %s", self.gvr.resource, event.object)
                        continue
                    rv = (event.object.get("metadata") or {}).get("resourceVersion")
                    if rv:
                        self._resource_version = rv
                    if event.type == "BOOKMARK":
                        continue
                    if event.type == "DELETED":
                        self.remove(event.object)
                    else:
                        self.upsert(event.object)
            except asyncio.CancelledError:
                raise
            except ApiError as exc:
                if exc.code == 410:
                    self._resource_version = None
                else:
                    log.warning("watch %s failed: %s", self.gvr.resource, exc.message)
                    failures += 1
                    await asyncio.sleep(WATCH_RETRY.delay(failures))
            except Exception:
                log.exception("watch %s failed", self.gvr.resource)
                failures += 1
                await asyncio.sleep(WATCH_RETRY.delay(failures))


def controller_ref(obj: JsonObject) -> JsonObject | None:
    """The owner reference with ``controller: true``, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def by_controller_uid(obj: JsonObject) -> list[str]:
    ref = controller_ref(obj)
    return [str(ref.get("uid"))] if ref else []


def by_namespace(obj: JsonObject) -> list[str]:
    return [str((obj.get("metadata") or {}).get("namespace") or "")]


def by_node_name(obj: JsonObject) -> list[str]:
    node = (obj.get("spec") or {}).get("nodeName")
    return [str(node)] if node else []
