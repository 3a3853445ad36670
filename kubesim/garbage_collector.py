"""The garbage collector and namespace controller of kubesim's control plane.

Like upstream's, it runs asynchronously: the API server enqueues work and returns, and a
background task settles it through the same write path as any client (so watches see every
step). Work items are owner uids and ``ns:<name>`` for terminating namespaces.

- An owner that is gone: its dependents lose the reference, and a dependent left with no live
  owner is deleted (background propagation). This also collects dependents created with
  owner references to objects that never existed, as upstream does.
- An owner with the ``orphan`` finalizer: references to it are removed, then the finalizer.
- An owner with ``foregroundDeletion``: dependents are deleted (in foreground too), and the
  finalizer goes once no dependent with ``blockOwnerDeletion`` is left.
- A terminating namespace: everything in it is deleted (pods gracefully, so bound pods wait for
  their kubelet), and the namespace is removed once empty.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from kubesim.interface import ApiError
from kubesim.registry import ResourceType

if TYPE_CHECKING:
    from kubesim.apiserver import ApiServer

log = logging.getLogger("kubesim.gc")

JsonObject = dict[str, Any]

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
NAMESPACES = ("", "namespaces")


class GarbageCollector:
    def __init__(self, server: ApiServer) -> None:
        self.server = server
        self._queue: asyncio.Queue[str] | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._queue = asyncio.Queue()
        self._task = asyncio.create_task(self._loop(), name="kubesim-gc")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def enqueue_owner(self, uid: str) -> None:
        if self._queue is not None:
            self._queue.put_nowait(uid)

    def enqueue_namespace(self, name: str) -> None:
        if self._queue is not None:
            self._queue.put_nowait("ns:" + name)

    def object_removed(self, obj: JsonObject) -> None:
        """An object left storage: collect its dependents, let waiting owners re-check, and
        let its terminating namespace finish."""
        meta = obj["metadata"]
        self.enqueue_owner(meta["uid"])
        for ref in meta.get("ownerReferences") or ():
            if isinstance(ref, dict) and isinstance(ref.get("uid"), str):
                self.enqueue_owner(ref["uid"])
        if meta.get("namespace"):
            self.enqueue_namespace(meta["namespace"])

    def object_created(self, obj: JsonObject) -> None:
        """A new object whose owners do not exist is a dangling dependent: check it."""
        refs = obj["metadata"].get("ownerReferences")
        if refs and not any(r.get("uid") in self.server.store.by_uid for r in refs):
            for r in refs:
                if isinstance(r.get("uid"), str):
                    self.enqueue_owner(r["uid"])

    async def _loop(self) -> None:
        assert self._queue is not None
        while True:
            item = await self._queue.get()
            try:
                if item.startswith("ns:"):
                    await self._namespace(item[3:])
                else:
                    await self._owner(item)
            except ApiError as e:
                log.debug("garbage collection of %s: %s", item, e.message)
            except Exception:
                log.exception("garbage collection of %s failed", item)

    def _get(self, key: tuple[str, str], ns: str, name: str) -> JsonObject | None:
        return self.server.store.get(key, ns, name)

    async def _owner(self, uid: str) -> None:
        store = self.server.store
        loc = store.by_uid.get(uid)
        owner = None if loc is None else store.get(loc[0], *loc[1])
        deps = list(store.dependents.get(uid, ()))
        if owner is None or loc is None:
            await self._owner_gone(uid, deps)
            return
        ort = self.server.rt_for_key(loc[0])
        if ort is None:
            return
        fins = owner["metadata"].get("finalizers") or []
        if ORPHAN in fins:
            for key, (ns, name) in deps:
                dep, drt = self._get(key, ns, name), self.server.rt_for_key(key)
                if dep is not None and drt is not None:
                    refs = [
                        r
                        for r in dep["metadata"].get("ownerReferences") or []
                        if r.get("uid") != uid
                    ]
                    await self._set_owner_refs(drt, dep, refs)
            await self._drop_finalizer(ort, uid, ORPHAN)
        elif FOREGROUND in fins:
            blocking = 0
            for key, (ns, name) in deps:
                dep, drt = self._get(key, ns, name), self.server.rt_for_key(key)
                if dep is None or drt is None:
                    continue
                refs = dep["metadata"].get("ownerReferences") or []
                ref: JsonObject = next((r for r in refs if r.get("uid") == uid), {})
                if ref.get("blockOwnerDeletion"):
                    blocking += 1
                if not dep["metadata"].get("deletionTimestamp"):
                    await self.server.delete_obj(
                        drt, ns or None, name, propagation_policy="Foreground"
                    )
            if blocking == 0:
                await self._drop_finalizer(ort, uid, FOREGROUND)

    async def _owner_gone(
        self, uid: str, deps: list[tuple[tuple[str, str], tuple[str, str]]]
    ) -> None:
        by_uid = self.server.store.by_uid
        for key, (ns, name) in deps:
            dep, drt = self._get(key, ns, name), self.server.rt_for_key(key)
            if dep is None or drt is None:
                continue
            refs = dep["metadata"].get("ownerReferences") or []
            live = [r for r in refs if r.get("uid") != uid and r.get("uid") in by_uid]
            if live:
                await self._set_owner_refs(drt, dep, live)
            elif not dep["metadata"].get("deletionTimestamp"):
                await self.server.delete_obj(drt, ns or None, name, propagation_policy="Background")

    async def _drop_finalizer(self, rt: ResourceType, uid: str, finalizer: str) -> None:
        loc = self.server.store.by_uid.get(uid)
        obj = None if loc is None else self.server.store.get(loc[0], *loc[1])
        if obj is None:
            return
        fins = [f for f in obj["metadata"].get("finalizers") or [] if f != finalizer]
        new = {**obj, "metadata": {**obj["metadata"], "finalizers": fins}}
        await self.server.write_update(rt, obj, new, "", skip_admission=True)

    async def _set_owner_refs(self, rt: ResourceType, obj: JsonObject, refs: list[Any]) -> None:
        meta = {**obj["metadata"], "ownerReferences": refs}
        if not refs:
            meta.pop("ownerReferences")
        await self.server.write_update(rt, obj, {**obj, "metadata": meta}, "", skip_admission=True)

    async def _namespace(self, ns: str) -> None:
        server = self.server
        nsobj = server.store.get(NAMESPACES, "", ns)
        if nsobj is None or not nsobj["metadata"].get("deletionTimestamp"):
            return
        namespaced = [rt for rt in server.registry.storage_types() if rt.namespaced]
        for rt in namespaced:
            for obj in list(server.store.items(rt.storage_key, ns)):
                if not obj["metadata"].get("deletionTimestamp"):
                    with contextlib.suppress(ApiError):
                        await server.delete_obj(rt, ns, obj["metadata"]["name"])
        if not any(True for rt in namespaced for _ in server.store.items(rt.storage_key, ns)):
            current = server.store.get(NAMESPACES, "", ns)
            ns_rt = server.rt_for_key(NAMESPACES)
            if current is not None and ns_rt is not None:
                server.remove(ns_rt, current)
