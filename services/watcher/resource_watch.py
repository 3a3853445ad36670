"""List and watch one resource and turn what changed into observations.

Reading happens on a daemon thread (the official client's transport is synchronous); lines
cross into the event loop through a small bounded queue, so a slow bus pauses the reading
instead of buffering without limit. Bodies stay raw JSON: only the object's metadata (name,
namespace, uid, resourceVersion) is decoded, with a reused msgspec decoder, and the object is
re-encoded only when it carries ``managedFields`` to strip. An abandoned watch (a relist, a
stop) aborts its response, so its thread ends at once and gives its pooled connection back
instead of staying blocked until the server ends the request.

The resume point is the last resourceVersion seen (events and bookmarks). On 410 Gone, an ERROR
event, or any watch failure, the resource is listed again (paginated) and compared with what was
last published for it (``known``); only real differences go out: new or changed objects, and a
synthetic ``DELETED`` for every known object the list no longer contains. Each (re)list is
framed by sync markers (``complete=False`` then ``complete=True``).

``known`` only forgets what the bus has confirmed. A deletion stays in it as a tombstone until
its publish is acknowledged (:meth:`ResourceWatch.acked`), and a publish that was lost marks its
entry dirty (:meth:`ResourceWatch.lost`) instead of dropping it; the relist that follows then
sends the ``DELETED`` again (the object is still gone) or the current version (the entry is
dirty), even when the object was deleted in between. Re-sent messages carry the same
``Nats-Msg-Id``, so one that did reach the stream is stored once.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Final

import msgspec

from events.messages import ResourceRef
from spreadbus.runtime.kube_client import Gone, KubeAPIError, KubeClient, resource_path

log = logging.getLogger(__name__)


class _Meta(msgspec.Struct):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resourceVersion: str = ""


class _Obj(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


class _Event(msgspec.Struct):
    type: str
    object: msgspec.Raw


class _ListMeta(msgspec.Struct):
    resourceVersion: str = ""
    # ``continue`` is a Python keyword, hence the rename.
    cont: str = msgspec.field(default="", name="continue")


class _List(msgspec.Struct):
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)
    items: list[msgspec.Raw] = []


class _Status(msgspec.Struct):
    code: int = 0
    reason: str = ""
    message: str = ""


_OBJ: Final = msgspec.json.Decoder(_Obj)
_EVENT: Final = msgspec.json.Decoder(_Event)
_LIST: Final = msgspec.json.Decoder(_List)
_STATUS: Final = msgspec.json.Decoder(_Status)
_ANY: Final = msgspec.json.Decoder(dict[str, Any])
_ENC: Final = msgspec.json.Encoder()


@dataclass(frozen=True)
class Known:
    """What was last published for one object."""

    uid: str
    resource_version: str
    raw: bytes
    deleted: bool = False
    """A tombstone: the DELETED is sent but not yet acknowledged."""
    dirty: bool = False
    """A publish for this key was lost: the next relist sends the key's current state."""


@dataclass(frozen=True)
class Change:
    event: str  # ADDED, MODIFIED, DELETED
    namespace: str
    name: str
    uid: str
    resource_version: str
    raw: bytes
    relist: bool


Emit = Callable[[Change], Awaitable[None]]
Mark = Callable[[bool, str, int], Awaitable[None]]


def parse_resource(spec: str) -> ResourceRef:
    """``v1/pods`` or ``apps/v1/deployments``."""
    parts = spec.strip("/").split("/")
    if len(parts) == 2:
        return ResourceRef(group="", version=parts[0], resource=parts[1])
    if len(parts) == 3:
        return ResourceRef(group=parts[0], version=parts[1], resource=parts[2])
    raise ValueError(f"resource must be [group/]version/resource, got {spec!r}")


def clean_object(raw: bytes, api_version: str = "", kind: str = "") -> bytes:
    """The object minus managedFields (and with apiVersion/kind, which list items lack)."""
    if b'"managedFields"' not in raw and not kind:
        return raw
    obj = _ANY.decode(raw)
    obj.get("metadata", {}).pop("managedFields", None)
    if kind:
        obj.setdefault("apiVersion", api_version)
        obj.setdefault("kind", kind)
    return _ENC.encode(obj)


class ResourceWatch:
    def __init__(
        self,
        kube: KubeClient,
        ref: ResourceRef,
        *,
        emit: Emit,
        mark: Mark,
        known: dict[tuple[str, str], Known] | None = None,
        watch_timeout: int = 300,
        page_size: int = 500,
    ) -> None:
        self.kube = kube
        self.ref = ref
        self.emit = emit
        self.mark = mark
        self.known = known if known is not None else {}
        self.watch_timeout = watch_timeout
        self.page_size = page_size
        self.resource_version = ""
        self.relist_requested = False
        self.synced = False
        self.absent = False
        self.relists = 0
        self._path = resource_path(ref.group, ref.version, ref.resource)
        self._api_version = f"{ref.group}/{ref.version}" if ref.group else ref.version
        self._kind = ""

    async def run(self, stopping: asyncio.Event) -> None:
        backoff = 0.2
        need_list = True
        while not stopping.is_set():
            try:
                if need_list:
                    await self.relist()
                    need_list = False
                await self.watch(stopping)
                backoff = 0.2
            except Gone:
                need_list = True
            except Exception as exc:
                # Top of this resource's loop: any failure (API, bus) ends in a fresh list.
                if isinstance(exc, KubeAPIError) and exc.http_status == 404:
                    self.absent = True  # the API (a CRD) is not installed (yet)
                log.warning("watch failed", extra={"resource": self.ref.resource,
                                                   "error": repr(exc)})
                need_list = True
                try:
                    await asyncio.wait_for(stopping.wait(), backoff)
                except TimeoutError:
                    pass
                backoff = min(backoff * 2, 10.0)

    def lost(self, key: tuple[str, str]) -> None:
        """A publish for ``key`` was lost: mark the key dirty and list again."""
        before = self.known.get(key)
        if before is not None:
            self.known[key] = replace(before, dirty=True)
        self.relist_requested = True

    def acked(self, change: Change) -> None:
        """The bus stored ``change``; a deletion's tombstone can go."""
        key = (change.namespace, change.name)
        before = self.known.get(key)
        if (change.event == "DELETED" and before is not None and before.deleted
                and before.uid == change.uid
                and before.resource_version == change.resource_version):
            del self.known[key]

    async def relist(self) -> None:
        self.relist_requested = False
        await self.mark(False, self.resource_version, 0)
        items: dict[tuple[str, str], tuple[_Meta, bytes]] = {}
        cont = ""
        while True:
            query = {"limit": str(self.page_size)}
            if cont:
                query["continue"] = cont
            body = await self.kube.arequest("GET", self._path, query=query)
            page = _LIST.decode(body)
            for item in page.items:
                raw = bytes(item)
                meta = _OBJ.decode(raw).metadata
                items[(meta.namespace, meta.name)] = (meta, raw)
            cont = page.metadata.cont
            if not cont:
                list_rv = page.metadata.resourceVersion
                break
        self.absent = False
        kind = self._kind or _kind_of(self.ref.resource)
        for key in [k for k in self.known if k not in items]:
            gone = self.known[key]
            self.known[key] = Known(gone.uid, gone.resource_version, gone.raw, deleted=True)
            await self.emit(Change("DELETED", key[0], key[1], gone.uid, gone.resource_version,
                                   gone.raw, True))
        for key, (meta, raw) in items.items():
            before = self.known.get(key)
            if (before is not None and before.resource_version == meta.resourceVersion
                    and not before.dirty and not before.deleted):
                continue
            cleaned = clean_object(raw, self._api_version, kind)
            if before is not None and before.deleted:
                before = None  # its DELETED is out already; this is a new object
            elif before is not None and before.uid != meta.uid:
                await self.emit(Change("DELETED", key[0], key[1], before.uid,
                                       before.resource_version, before.raw, True))
                before = None
            self.known[key] = Known(meta.uid, meta.resourceVersion, cleaned)
            await self.emit(Change("ADDED" if before is None else "MODIFIED", key[0], key[1],
                                   meta.uid, meta.resourceVersion, cleaned, True))
        self.resource_version = list_rv
        self.relists += 1
        self.synced = True
        await self.mark(True, list_rv, len(items))

    async def watch(self, stopping: asyncio.Event) -> None:
        """One watch request, until the server ends it; raises Gone when history is lost."""
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue[bytes | BaseException | None] = asyncio.Queue(maxsize=256)
        query = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": self.resource_version,
            "timeoutSeconds": str(self.watch_timeout),
        }
        halt = threading.Event()
        guard = threading.Lock()
        aborts: list[Callable[[], None]] = []

        def opened(abort: Callable[[], None]) -> None:
            with guard:
                aborts.append(abort)
                halted = halt.is_set()
            if halted:
                abort()

        def read() -> None:
            def put(item: bytes | BaseException | None) -> None:
                if halt.is_set():
                    return  # the loop stopped listening (and may be closed)
                try:
                    future = asyncio.run_coroutine_threadsafe(lines.put(item), loop)
                except RuntimeError:
                    return  # the event loop is closed: the service is gone
                while not halt.is_set():
                    try:
                        future.result(0.5)
                        return
                    except TimeoutError:
                        continue

            try:
                for line in self.kube.stream(self._path, query=query, opened=opened,
                                             timeout=self.watch_timeout + 15):
                    if halt.is_set():
                        return
                    put(line)
                put(None)
            except BaseException as exc:  # handed to the loop, which re-raises it there
                put(exc)

        thread = threading.Thread(target=read, name=f"watch-{self.ref.resource}", daemon=True)
        thread.start()
        try:
            while not stopping.is_set():
                if self.relist_requested:
                    raise Gone(410, "RelistRequested", "a publish was lost")
                getter = asyncio.ensure_future(lines.get())
                stop_wait = asyncio.ensure_future(stopping.wait())
                await asyncio.wait({getter, stop_wait}, timeout=1.0,
                                   return_when=asyncio.FIRST_COMPLETED)
                stop_wait.cancel()
                if not getter.done():
                    getter.cancel()
                    continue
                item = getter.result()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                await self._on_line(item)
        finally:
            with guard:
                halt.set()
                pending = list(aborts)
            for abort in pending:
                abort()  # unblocks the reader, which then exits quietly

    async def _on_line(self, line: bytes) -> None:
        try:
            event = _EVENT.decode(line)
        except msgspec.DecodeError:
            log.warning("undecodable watch line", extra={"resource": self.ref.resource})
            return
        raw = bytes(event.object)
        if event.type == "ERROR":
            status = _STATUS.decode(raw)
            if status.code == 410:
                raise Gone(410, status.reason or "Expired", status.message)
            raise KubeAPIError(status.code, status.reason, status.message)
        meta = _OBJ.decode(raw).metadata
        if meta.resourceVersion:
            self.resource_version = meta.resourceVersion
        if event.type == "BOOKMARK":
            return
        if event.type not in ("ADDED", "MODIFIED", "DELETED"):
            return
        key = (meta.namespace, meta.name)
        cleaned = clean_object(raw)
        if event.type == "DELETED":
            self.known[key] = Known(meta.uid, meta.resourceVersion, cleaned, deleted=True)
        else:
            self.known[key] = Known(meta.uid, meta.resourceVersion, cleaned)
        await self.emit(Change(event.type, meta.namespace, meta.name, meta.uid,
                               meta.resourceVersion, cleaned, False))


_KINDS: Final = {
    "pods": "Pod",
    "nodes": "Node",
    "deployments": "Deployment",
    "replicasets": "ReplicaSet",
    "statefulsets": "StatefulSet",
    "controllerrevisions": "ControllerRevision",
    "poddisruptionbudgets": "PodDisruptionBudget",
    "workloadspreads": "WorkloadSpread",
    "uniteddeployments": "UnitedDeployment",
    "workloadrebalancers": "WorkloadRebalancer",
    "namespaces": "Namespace",
}


def _kind_of(resource: str) -> str:
    return _KINDS.get(resource, "")
