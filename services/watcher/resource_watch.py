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

A resource the API will not let us list or watch (403, a missing RBAC rule) is retried with the
same backoff, logged once, and kept in ``forbidden`` (the API's message) until a list succeeds:
the service reports it (metric, log) without letting it hold back the readiness of the others.

``known`` only forgets what the bus has confirmed. A deletion stays in it as a tombstone until
its publish is acknowledged (:meth:`ResourceWatch.acked`), and a publish that was lost marks its
entry dirty (:meth:`ResourceWatch.lost`) instead of dropping it; the relist that follows then
sends the ``DELETED`` again (the object is still gone) or the current version (the entry is
dirty), even when the object was deleted in between. Re-sent messages carry the same
``Nats-Msg-Id``, so one that did reach the stream is stored once. A change that could not even
be handed to the bus (the publish raised) marks its entry dirty the same way.

A MODIFIED observation may wait up to ``hold_seconds`` for a newer one of its object to replace
it (:mod:`services.watcher.modified_hold`): ``known`` has it already, so what is still held when
a watch ends goes out then, or, when the watch ends in an error, is marked dirty for the relist
that follows.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Final

import msgspec

from events.messages import ResourceRef
from retrydelay import Backoff
from services.watcher.modified_hold import ModifiedHold
from spreadbus.runtime.kube_client import Gone, KubeAPIError, KubeClient, resource_path
from spreadbus.runtime.shutdown import sleep_unless_stopping

log = logging.getLogger(__name__)
WATCH_RETRY: Final = Backoff(first=0.2, cap=10.0)
"""Between a failed list or watch and the next list; forgotten once a watch ends well."""


class ObjectMeta(msgspec.Struct):
    """The identity fields of an object's metadata, decoded without the rest of the object."""

    name: str = ""
    namespace: str = ""
    uid: str = ""
    resourceVersion: str = ""
    managedFields: msgspec.Raw = msgspec.Raw(b"")
    """Not read, only seen: an object without it needs no cleaning, found without a search."""


class _Obj(msgspec.Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


class _Event(msgspec.Struct):
    type: str
    object: msgspec.Raw


class _ListMeta(msgspec.Struct):
    resourceVersion: str = ""
    # ``continue`` is a Python keyword, hence the rename.
    cont: str = msgspec.field(default="", name="continue")


class _List(msgspec.Struct):
    kind: str = ""
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


def object_meta(raw: bytes) -> ObjectMeta:
    """Name, namespace, uid and resourceVersion of one object's JSON."""
    return _OBJ.decode(raw).metadata


class Known(msgspec.Struct, frozen=True):
    """What was last published for one object (a struct: one is made per change, and a frozen
    dataclass takes ten times as long to make)."""

    uid: str
    resource_version: str
    raw: bytes
    deleted: bool = False
    """A tombstone: the DELETED is sent but not yet acknowledged."""
    dirty: bool = False
    """A publish for this key was lost: the next relist sends the key's current state."""


class Change(msgspec.Struct, frozen=True):
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
        hold_seconds: float = 0.0,
        kind: str = "",
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
        self.forbidden = ""
        """The API's refusal while it will not let us list or watch the resource (RBAC)."""
        self.relists = 0
        self.hold = ModifiedHold[Change](hold_seconds)
        self._path = resource_path(ref.group, ref.version, ref.resource)
        self._api_version = f"{ref.group}/{ref.version}" if ref.group else ref.version
        self._kind = kind or _kind_of(ref.resource)
        """Added to listed items, which lack it: from the list's own kind once listed; until
        then ``kind`` (a feature's custom resource) or Kubernetes' own ("" for others)."""

    async def run(self, stopping: asyncio.Event) -> None:
        failures = 0
        need_list = True
        while not stopping.is_set():
            try:
                if need_list:
                    await self.relist()
                    need_list = False
                await self.watch(stopping)
                failures = 0
            except Gone:
                need_list = True
            except Exception as exc:
                # Top of this resource's loop: any failure (API, bus) ends in a fresh list.
                if isinstance(exc, KubeAPIError) and exc.http_status == 404:
                    self.absent = True  # the API (a CRD) is not installed (yet)
                if isinstance(exc, KubeAPIError) and exc.http_status == 403:
                    if not self.forbidden:
                        log.warning("resource forbidden, not watched", extra={
                            "resource": self.ref.resource, "group": self.ref.group,
                            "error": exc.message or str(exc)})
                    self.forbidden = exc.message or str(exc)
                else:
                    log.warning("watch failed", extra={"resource": self.ref.resource,
                                                       "error": repr(exc)})
                need_list = True
                failures += 1
                await sleep_unless_stopping(stopping, WATCH_RETRY.delay(failures))

    def lost(self, key: tuple[str, str]) -> None:
        """A publish for ``key`` was lost: mark the key dirty and list again."""
        before = self.known.get(key)
        if before is not None:
            self.known[key] = msgspec.structs.replace(before, dirty=True)
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
        items: dict[tuple[str, str], tuple[ObjectMeta, bytes]] = {}
        cont = ""
        while True:
            query = {"limit": str(self.page_size)}
            if cont:
                query["continue"] = cont
            body = await self.kube.arequest("GET", self._path, query=query)
            page = _LIST.decode(body)
            if page.kind.endswith("List") and len(page.kind) > 4:
                # The list names its items' kind (``TFJobList``): whitelisted kinds included.
                self._kind = page.kind[:-4]
            for item in page.items:
                raw = bytes(item)
                meta = object_meta(raw)
                items[(meta.namespace, meta.name)] = (meta, raw)
            cont = page.metadata.cont
            if not cont:
                list_rv = page.metadata.resourceVersion
                break
        self.absent = False
        if self.forbidden:
            log.info("resource permitted again", extra={"resource": self.ref.resource,
                                                        "group": self.ref.group})
            self.forbidden = ""
        kind = self._kind
        for key in [k for k in self.known if k not in items]:
            gone = self.known[key]
            self.known[key] = Known(gone.uid, gone.resource_version, gone.raw, deleted=True)
            await self._publish(Change("DELETED", key[0], key[1], gone.uid,
                                       gone.resource_version, gone.raw, True))
        for key, (meta, raw) in items.items():
            before = self.known.get(key)
            if (before is not None and before.resource_version == meta.resourceVersion
                    and not before.dirty and not before.deleted):
                continue
            cleaned = clean_object(raw, self._api_version, kind)
            if before is not None and before.deleted:
                before = None  # its DELETED is out already; this is a new object
            elif before is not None and before.uid != meta.uid:
                await self._publish(Change("DELETED", key[0], key[1], before.uid,
                                           before.resource_version, before.raw, True))
                before = None
            self.known[key] = Known(meta.uid, meta.resourceVersion, cleaned)
            await self._publish(Change("ADDED" if before is None else "MODIFIED", key[0], key[1],
                                       meta.uid, meta.resourceVersion, cleaned, True))
        self.resource_version = list_rv
        self.relists += 1
        self.synced = True
        await self.mark(True, list_rv, len(items))

    async def watch(self, stopping: asyncio.Event) -> None:
        """One watch request, until the server ends it; raises Gone when history is lost."""
        loop = asyncio.get_running_loop()
        lines = LineHandoff(loop, limit=LINES_IN_FLIGHT)
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
            try:
                for line in self.kube.stream(self._path, query=query, opened=opened,
                                             timeout=self.watch_timeout + 15):
                    if not lines.put(line, halt):
                        return
                lines.put(None, halt)
            except BaseException as exc:  # handed to the loop, which re-raises it there
                lines.put(exc, halt)

        thread = threading.Thread(target=read, name=f"watch-{self.ref.resource}", daemon=True)
        thread.start()
        try:
            await self._follow(lines, stopping, loop)
        except BaseException:
            for change in self.hold.drain():  # the relist that follows sends their state
                self.lost((change.namespace, change.name))
            raise
        finally:
            with guard:
                halt.set()
                pending = list(aborts)
            for abort in pending:
                abort()  # unblocks the reader, which then exits quietly
            lines.close()
        for change in self.hold.drain():
            await self._publish(change)

    async def _follow(self, lines: LineHandoff, stopping: asyncio.Event,
                      loop: asyncio.AbstractEventLoop) -> None:
        """Handle watch lines until the server ends the watch or ``stopping`` is set."""
        while not stopping.is_set():
            if self.relist_requested:
                raise Gone(410, "RelistRequested", "a publish was lost")
            due = self.hold.next_due()
            wait = 1.0 if due is None else min(1.0, max(0.0, due - loop.time()))
            batch = await lines.take(stopping, wait)
            now = loop.time()
            for item in batch:
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                await self._on_line(item, now)
            for change in self.hold.due(now):
                await self._publish(change)

    async def _publish(self, change: Change) -> None:
        """Emit ``change``; one that could not be handed to the bus is sent by the next relist
        (``known`` already holds it, as if it had gone out)."""
        try:
            await self.emit(change)
        except BaseException:
            self.lost((change.namespace, change.name))
            raise

    async def _on_line(self, line: bytes, now: float) -> None:
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
        meta = object_meta(raw)
        if meta.resourceVersion:
            self.resource_version = meta.resourceVersion
        if event.type == "BOOKMARK":
            return
        if event.type not in ("ADDED", "MODIFIED", "DELETED"):
            return
        key = (meta.namespace, meta.name)
        cleaned = clean_object(raw) if meta.managedFields else raw
        if event.type == "DELETED":
            self.known[key] = Known(meta.uid, meta.resourceVersion, cleaned, deleted=True)
        else:
            self.known[key] = Known(meta.uid, meta.resourceVersion, cleaned)
        change = Change(event.type, meta.namespace, meta.name, meta.uid, meta.resourceVersion,
                        cleaned, False)
        for out in self.hold.offer(key, event.type, change, now):
            await self._publish(out)


LINES_IN_FLIGHT: Final = 256
"""Watch lines read but not yet handled; the reader thread waits beyond that."""

Item = bytes | BaseException | None


class LineHandoff:
    """Watch lines from the reader thread to the event loop, taken in batches.

    Handing lines over one at a time (a coroutine scheduled and awaited per line) costs a loop
    wake-up and a socket write to NATS per event. Here the thread appends to a buffer and wakes
    the loop only when the loop is not already awake for earlier lines; the loop takes everything
    buffered at once, so the publishes of a burst leave in one write. At most ``limit`` lines wait;
    the thread blocks beyond that, so a slow bus still slows the reading. The bound is the
    buffer's length under its lock, and the loop signals the thread only when it empties a full
    buffer: a semaphore would cost an acquire in the thread and a release in the loop per line.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, *, limit: int) -> None:
        self._loop = loop
        self._limit = limit
        self._items: collections.deque[Item] = collections.deque()
        self._room = threading.Condition()
        self._ready = asyncio.Event()
        self._signalled = False
        self._closed = False

    def put(self, item: Item, halt: threading.Event) -> bool:
        """From the reader thread; False once the loop stopped listening."""
        with self._room:
            while len(self._items) >= self._limit and not (self._closed or halt.is_set()):
                self._room.wait(0.5)
            if self._closed or halt.is_set():
                return False
            self._items.append(item)
            wake = not self._signalled
            self._signalled = True
        if wake:
            try:
                self._loop.call_soon_threadsafe(self._ready.set)
            except RuntimeError:
                return False  # the event loop is closed: the service is gone
        return True

    async def take(self, stopping: asyncio.Event, timeout: float) -> list[Item]:
        """Everything buffered, waiting up to ``timeout`` (or a stop) for the first line."""
        batch = self._drain()
        if batch:
            return batch
        if not stopping.is_set():
            ready = asyncio.ensure_future(self._ready.wait())
            stop_wait = asyncio.ensure_future(stopping.wait())
            await asyncio.wait({ready, stop_wait}, timeout=timeout,
                               return_when=asyncio.FIRST_COMPLETED)
            ready.cancel()
            stop_wait.cancel()
        return self._drain()

    def _drain(self) -> list[Item]:
        self._ready.clear()
        with self._room:
            batch = list(self._items)
            self._items.clear()
            if not batch:
                self._signalled = False  # the next line wakes the loop again
            elif len(batch) >= self._limit:
                self._room.notify()  # the reader may be waiting for room
        return batch

    def close(self) -> None:
        with self._room:
            self._closed = True
            self._items.clear()
            self._room.notify_all()  # a reader blocked on a full buffer sees the close at once


_KUBERNETES_KINDS: Final = {
    "pods": "Pod",
    "nodes": "Node",
    "deployments": "Deployment",
    "replicasets": "ReplicaSet",
    "statefulsets": "StatefulSet",
    "controllerrevisions": "ControllerRevision",
    "poddisruptionbudgets": "PodDisruptionBudget",
    "namespaces": "Namespace",
}
"""Kubernetes' own kinds; those of custom resources come from the features that bring them."""


def _kind_of(resource: str) -> str:
    return _KUBERNETES_KINDS.get(resource, "")
