"""The HTTP face of kubesim: routing, content negotiation, bodies, watch streams.

One catch-all aiohttp handler parses the Kubernetes URL grammar itself
(``/api/v1/namespaces/{ns}/pods/{name}/status``, ``/apis/{group}/{version}/...``, the legacy
``/watch/`` prefix) because the namespaced and cluster-scoped forms overlap
(``/api/v1/namespaces/{name}/status`` is the namespace's own subresource). Every failure is
answered with a ``Status`` object; nothing escapes as a bare 500 or a hang.

Watch streams are newline-delimited JSON over a chunked response; each event's object is
encoded once by the store and shared by all watchers that see it. A watch sends what its queue
holds when it wakes as one chunk, so a burst of writes reaches each watcher in a few large
writes (and TLS records) rather than one per event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import yaml
from aiohttp import web

from kubesim import discovery, errors, openapi, protobuf, tables
from kubesim.apiserver import ApiServer, ListOptions
from kubesim.interface import ApiError
from kubesim.nesting import MAX_DEPTH, deeper_than, may_be_deeper_than
from kubesim.registry import ResourceType
from kubesim.store import Event

log = logging.getLogger("kubesim.http")

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode

MAX_BODY = 3 * 1024 * 1024

_EVENT_PREFIX = {
    kind: b'{"type":"' + kind.encode() + b'","object":' for kind in ("ADDED", "MODIFIED", "DELETED")
}

PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": "apply-cbor",
}


@dataclass(slots=True)
class Target:
    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str
    watch_path: bool


def _verb(method: str, t: Target, watch: bool) -> str | None:
    """The RBAC-style verb of a request on a resource (None for unknown methods)."""
    if method == "GET":
        if t.watch_path or watch:
            return "watch"
        return "get" if t.name is not None else "list"
    if method == "DELETE":
        return "delete" if t.name is not None else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method)


def _quote(text: str) -> str:
    """RFC 7234 warn-text: a quoted string with backslash escapes."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def json_response(
    body: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    return web.Response(
        body=_encode(body), status=status, content_type="application/json", headers=headers
    )


def status_response(err: ApiError) -> web.Response:
    return json_response(err.status(), err.code)


class HttpApi:
    def __init__(
        self,
        server: ApiServer,
        *,
        token: str | None,
        bookmark_interval: float = 60.0,
        server_address: str = "",
    ) -> None:
        self.server = server
        self.token = token
        self.bookmark_interval = bookmark_interval
        self.server_address = server_address
        self._streams: set[web.StreamResponse] = set()
        self.stopping = asyncio.Event()

    def app(self) -> web.Application:
        app = web.Application(
            client_max_size=MAX_BODY + 1024, handler_args={"max_field_size": 65536}
        )
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    # --- entry -----------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            return await self._dispatch(request)
        except ApiError as e:
            return status_response(e)
        except web.HTTPRequestEntityTooLarge:
            return status_response(errors.too_large())
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as e:
            log.exception("unhandled error for %s %s", request.method, request.path)
            return status_response(errors.internal(f"{type(e).__name__}: {e}"))

    def _metrics(self) -> str:
        """The one metric tests read: admission calls let through by ``failurePolicy: Ignore``."""
        name = "apiserver_admission_webhook_fail_open_count"
        lines = [f"# HELP {name} Admission webhook fail open count, identified by name and "
                 "broken out for each admission type (validating or admit).",
                 f"# TYPE {name} counter"]
        for (hook, phase), count in sorted(self.server.admission.fail_open.items()):
            lines.append(f'{name}{{name="{hook}",type="{phase}"}} {count}')
        return "\n".join(lines) + "\n"

    def _authorised(self, request: web.Request) -> bool:
        if self.token is None:
            return True
        return request.headers.get("Authorization", "") == f"Bearer {self.token}"

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        if path in ("/healthz", "/livez", "/readyz"):
            return web.Response(text="ok")
        if path == "/version":
            return json_response(discovery.VERSION_INFO)
        if not self._authorised(request):
            return status_response(ApiError(401, "Unauthorized", "Unauthorized"))
        if path == "/metrics":
            return web.Response(text=self._metrics(), content_type="text/plain")
        reg = self.server.registry
        if path == "/api":
            return json_response(discovery.api_versions(self.server_address))
        if path == "/apis":
            return json_response(discovery.api_group_list(reg))
        if path == "/openapi/v2":
            body, ctype = openapi.v2_document(request.headers.get("Accept", ""))
            return web.Response(body=body, headers={"Content-Type": ctype})
        if path.startswith("/openapi"):
            doc = openapi.document(self.server, path, request.query)
            if doc is None:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            return json_response(doc)
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[0] == "apis" and len(parts) >= 2:
            if len(parts) == 2:
                doc = discovery.api_group(reg, parts[1])
                if doc is None:
                    raise ApiError(
                        404, "NotFound", "the server could not find the requested resource"
                    )
                return json_response(doc)
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            doc = discovery.resource_list(reg, group, version)
            if doc is None:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            return json_response(doc)
        target = self._target(group, version, rest)
        return await self._resource(request, target)

    def _target(self, group: str, version: str, rest: list[str]) -> Target:
        reg = self.server.registry
        watch_path = False
        if rest[0] == "watch":
            watch_path = True
            rest = rest[1:]
        not_found = ApiError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            raise not_found
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            rt_ns = reg.get(group, version, rest[2])
            if rt_ns is not None and rt_ns.namespaced:
                namespace = rest[1]
                rest = rest[2:]
        rt = reg.get(group, version, rest[0])
        if rt is None:
            raise not_found
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        if len(rest) > 3 or (sub and sub not in rt.subresources):
            raise not_found
        if rt.namespaced and namespace is None and name is not None:
            raise not_found
        return Target(rt, namespace, name, sub, watch_path)

    # --- resources -------------------------------------------------------------------------

    async def _body(self, request: web.Request) -> Any:
        if request.content_length is not None and request.content_length > MAX_BODY:
            raise errors.too_large()
        raw = await request.read()
        if len(raw) > MAX_BODY:
            raise errors.too_large()
        ctype = request.content_type
        if not raw.strip():
            if request.method == "DELETE":
                return None
            raise errors.bad_request("the body of the request was empty")
        if "yaml" in ctype:
            try:
                body = yaml.safe_load(raw)
            except yaml.YAMLError as e:
                raise errors.bad_request(f"error decoding YAML: {e}") from e
            except RecursionError:
                raise errors.too_deep(MAX_DEPTH) from None
            if deeper_than(body, MAX_DEPTH):  # block style nests without a bracket
                raise errors.too_deep(MAX_DEPTH)
            return body
        if ctype == protobuf.CONTENT_TYPE:
            return protobuf.decode(raw)
        if "protobuf" in ctype or "cbor" in ctype:
            raise errors.unsupported_media_type(ctype, ["application/json", "application/yaml"])
        try:
            body = _decode(raw)
        except msgspec.DecodeError as e:
            raise errors.bad_request(f"couldn't get version/kind; json parse error: {e}") from e
        except RecursionError:
            raise errors.too_deep(MAX_DEPTH) from None
        if may_be_deeper_than(raw, MAX_DEPTH) and deeper_than(body, MAX_DEPTH):
            raise errors.too_deep(MAX_DEPTH)
        return body

    async def _resource(self, request: web.Request, t: Target) -> web.StreamResponse:
        q = request.query
        method = request.method
        srv = self.server
        rt = t.rt
        dry_run = q.get("dryRun") == "All"
        if "dryRun" in q and q.get("dryRun") not in ("All", ""):
            raise errors.bad_request(
                f'dryRun: Unsupported value: "{q.get("dryRun")}": supported values: "All"'
            )
        field_validation = q.get("fieldValidation")
        warnings: list[str] = []
        headers: dict[str, str] = {}

        def warn_headers() -> dict[str, str]:
            if warnings:
                return {"Warning": ", ".join(f'299 - "{_quote(w)}"' for w in warnings)}
            return headers

        verb = _verb(method, t, q.get("watch") in ("true", "1"))
        if verb is not None and verb not in rt.verbs and not t.subresource:
            raise errors.method_not_allowed(
                "the server does not allow this method on the requested resource"
            )
        if method == "GET":
            if t.watch_path or q.get("watch") in ("true", "1"):
                return await self._watch(request, t)
            if t.name is None:
                return await self._list(request, t)
            if t.subresource == "scale":
                obj = srv.scale_of(rt, srv.get_obj(rt, t.namespace, t.name))
                return json_response(obj)
            (obj,) = await srv.converted(rt, [srv.get_obj(rt, t.namespace, t.name)])
            return self._object_response(request, rt, obj)
        if method == "POST":
            body = await self._body(request)
            if t.subresource in ("binding", "eviction"):
                if t.name is None or t.namespace is None:
                    raise errors.method_not_allowed("a subresource needs a pod name")
                if t.subresource == "binding":
                    result = await srv.bind(t.namespace, t.name, body, dry_run=dry_run)
                else:
                    result = await srv.evict(t.namespace, t.name, body, dry_run=dry_run)
                return json_response(result, 201)
            if t.name is not None:
                raise errors.method_not_allowed(
                    "the server does not allow this method on the requested resource"
                )
            obj = await srv.create_obj(
                rt,
                body,
                t.namespace,
                dry_run=dry_run,
                field_validation=field_validation,
                warnings=warnings,
            )
            (obj,) = await srv.converted(rt, [obj])
            return json_response(obj, 201, warn_headers())
        if method == "PUT":
            if t.name is None:
                raise errors.method_not_allowed(
                    "the server does not allow this method on the requested resource"
                )
            body = await self._body(request)
            obj = await srv.update_obj(
                rt,
                body,
                t.namespace,
                t.name,
                subresource=t.subresource,
                dry_run=dry_run,
                field_validation=field_validation,
                warnings=warnings,
            )
            if t.subresource != "scale":
                (obj,) = await srv.converted(rt, [obj])
            return json_response(obj, 200, warn_headers())
        if method == "PATCH":
            if t.name is None:
                raise errors.method_not_allowed(
                    "the server does not allow this method on the requested resource"
                )
            ctype = request.content_type
            ptype = PATCH_TYPES.get(ctype)
            if ptype is None or ptype == "apply-cbor":
                raise errors.unsupported_media_type(
                    ctype, list(k for k in PATCH_TYPES if "cbor" not in k)
                )
            body = await self._body(request)
            force = q.get("force") in ("true", "1")
            obj = await srv.patch_obj(
                rt,
                t.namespace,
                t.name,
                body,
                ptype,
                subresource=t.subresource,
                dry_run=dry_run,
                field_manager=q.get("fieldManager"),
                force=force,
                field_validation=field_validation,
                warnings=warnings,
            )
            if t.subresource != "scale":
                (obj,) = await srv.converted(rt, [obj])
            return json_response(obj, 200, warn_headers())
        if method == "DELETE":
            body = await self._body(request)
            opts = body if isinstance(body, dict) else {}
            grace = opts.get("gracePeriodSeconds", q.get("gracePeriodSeconds"))
            policy = opts.get("propagationPolicy") or q.get("propagationPolicy")
            orphan = opts.get("orphanDependents", q.get("orphanDependents"))
            if policy is None and orphan in (True, "true"):
                policy = "Orphan"
            if opts.get("dryRun") == ["All"]:
                dry_run = True
            try:
                grace_int = int(grace) if grace is not None else None
            except (TypeError, ValueError) as e:
                raise errors.bad_request(f"invalid gracePeriodSeconds: {grace!r}") from e
            if t.name is None:
                lo = self._list_options(request, rt)
                deleted = await srv.delete_collection(
                    rt,
                    t.namespace,
                    lo,
                    grace_period_seconds=grace_int,
                    propagation_policy=policy,
                    dry_run=dry_run,
                )
                return json_response(
                    {
                        "kind": f"{rt.kind}List",
                        "apiVersion": rt.api_version,
                        "metadata": {"resourceVersion": str(srv.store.rv)},
                        "items": await srv.converted(rt, deleted),
                    }
                )
            obj, removed = await srv.delete_obj(
                rt,
                t.namespace,
                t.name,
                grace_period_seconds=grace_int,
                propagation_policy=policy,
                preconditions=opts.get("preconditions"),
                dry_run=dry_run,
            )
            code = 202 if (not removed and policy == "Foreground") else 200
            if removed and not rt.return_deleted_object:
                details: dict[str, Any] = {
                    "name": t.name,
                    "kind": rt.plural,
                    "uid": obj["metadata"].get("uid"),
                }
                if rt.group:
                    details["group"] = rt.group
                return json_response(
                    {
                        "kind": "Status",
                        "apiVersion": "v1",
                        "metadata": {},
                        "status": "Success",
                        "details": details,
                    },
                    code,
                )
            (obj,) = await srv.converted(rt, [obj])
            return json_response(obj, code)
        raise errors.method_not_allowed(
            f"the server does not allow this method ({method}) on the requested resource"
        )

    # --- reads -----------------------------------------------------------------------------

    @staticmethod
    def _wants_table(request: web.Request) -> bool:
        accept = request.headers.get("Accept", "")
        return "as=Table" in accept

    def _object_response(
        self, request: web.Request, rt: ResourceType, obj: dict[str, Any]
    ) -> web.Response:
        if self._wants_table(request):
            return json_response(
                tables.table(
                    rt,
                    [obj],
                    self.server.clock(),
                    include_object=request.query.get("includeObject", "Metadata"),
                )
            )
        return json_response(obj)

    def _list_options(self, request: web.Request, rt: ResourceType) -> ListOptions:
        q = request.query
        limit_s = q.get("limit")
        try:
            limit = int(limit_s) if limit_s else None
        except ValueError as e:
            raise errors.bad_request(f"invalid limit: {limit_s}") from e
        if limit is not None and limit < 0:
            limit = None
        return self.server.list_options(
            rt,
            q.get("labelSelector"),
            q.get("fieldSelector"),
            limit,
            q.get("continue") or None,
            q.get("resourceVersion"),
            q.get("resourceVersionMatch"),
        )

    async def _list(self, request: web.Request, t: Target) -> web.Response:
        rt = t.rt
        opts = self._list_options(request, rt)
        items, rv, cont, remaining = self.server.list_objs(rt, t.namespace, opts)
        items = await self.server.converted(rt, items)
        meta: dict[str, Any] = {"resourceVersion": rv}
        if cont:
            meta["continue"] = cont
            if remaining is not None:
                meta["remainingItemCount"] = remaining
        if self._wants_table(request):
            return json_response(
                tables.table(
                    rt,
                    items,
                    self.server.clock(),
                    include_object=request.query.get("includeObject", "Metadata"),
                    list_meta=meta,
                )
            )
        return json_response(
            {
                "kind": f"{rt.kind}List",
                "apiVersion": rt.api_version,
                "metadata": meta,
                "items": items,
            }
        )

    # --- watch -----------------------------------------------------------------------------

    async def _watch(self, request: web.Request, t: Target) -> web.StreamResponse:
        rt = t.rt
        q = request.query
        opts = self._list_options(request, rt)
        if t.name is not None:
            # /watch/namespaces/x/pods/name: a field selector on the name.
            name = t.name
            base = opts.field

            def by_name(obj: dict[str, Any]) -> bool:
                return obj["metadata"]["name"] == name and (base is None or base(obj))

            opts.field = by_name
        bookmarks = q.get("allowWatchBookmarks") in ("true", "1")
        send_initial = q.get("sendInitialEvents") in ("true", "1")
        try:
            timeout = float(q["timeoutSeconds"]) if "timeoutSeconds" in q else 1800.0
        except ValueError as e:
            raise errors.bad_request(f"invalid timeoutSeconds: {q['timeoutSeconds']}") from e
        table = self._wants_table(request)
        include_object = q.get("includeObject", "Metadata")
        resp = web.StreamResponse(
            status=200, headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
        )
        try:
            w = self.server.open_watch(rt, t.namespace, opts, send_initial=send_initial)
        except ApiError as e:
            if e.code != 410:
                raise
            await resp.prepare(request)
            await resp.write(_encode({"type": "ERROR", "object": e.status()}) + b"\n")
            await resp.write_eof()
            return resp
        await resp.prepare(request)
        self._streams.add(resp)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        next_bookmark = loop.time() + self.bookmark_interval
        clock = self.server.clock
        try:
            while not self.stopping.is_set():
                now = loop.time()
                if now >= deadline:
                    break
                wait_for = deadline - now
                if bookmarks:
                    wait_for = min(wait_for, max(0.0, next_bookmark - now))
                await w.wait(wait_for)
                batch = w.drain()
                if batch and rt.custom:
                    try:
                        batch = await self._converted_batch(rt, batch)
                    except ApiError as e:
                        # As upstream: a watch whose objects cannot be converted ends in ERROR.
                        await resp.write(_encode({"type": "ERROR", "object": e.status()}) + b"\n")
                        break
                parts: list[bytes] = []
                for kind, ev, obj in batch:
                    if kind == "BOOKMARK-INITIAL":
                        if bookmarks:
                            parts.append(self._bookmark(rt, ev.rv, initial=True))
                    else:
                        parts += self._event_parts(rt, kind, ev, obj, table, include_object, clock)
                ended = w.closed and not w.queue
                if bookmarks and not ended and loop.time() >= next_bookmark and not w.queue:
                    parts.append(self._bookmark(rt, self.server.store.rv))
                    next_bookmark = loop.time() + self.bookmark_interval
                if parts:
                    # the whole batch (and a due bookmark) in one chunk: one write, one TLS record
                    await resp.write(b"".join(parts))
                if ended:
                    break
            with contextlib.suppress(ConnectionResetError, RuntimeError):
                await resp.write_eof()
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.server.close_watch(w)
            self._streams.discard(resp)
        return resp

    async def _converted_batch(self, rt: ResourceType, batch: list[Any]) -> list[Any]:
        """Watch events with their objects in the watched version (one conversion review)."""
        positions = [i for i, (kind, _, _) in enumerate(batch) if kind != "BOOKMARK-INITIAL"]
        objs = await self.server.converted(rt, [batch[i][2] for i in positions])
        out = list(batch)
        for i, obj in zip(positions, objs, strict=True):
            kind, ev, _ = batch[i]
            out[i] = (kind, ev, obj)
        return out

    @staticmethod
    def _bookmark(rt: ResourceType, rv: int, *, initial: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return (
            _encode(
                {
                    "type": "BOOKMARK",
                    "object": {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta},
                }
            )
            + b"\n"
        )

    def _event_parts(
        self,
        rt: ResourceType,
        kind: str,
        ev: Event,
        obj: dict[str, Any],
        table: bool,
        include_object: str,
        clock: Callable[[], Any],
    ) -> tuple[bytes, ...]:
        """One event's line, in pieces the batch joins once."""
        if table:
            tbl = tables.table(
                rt, [self.server.versioned(rt, obj)], clock(), include_object=include_object
            )
            return (_encode({"type": kind, "object": tbl}) + b"\n",)
        if obj is ev.obj and obj.get("apiVersion") == rt.api_version:
            # the stored object's shared encoding, framed without a copy
            return (_EVENT_PREFIX[kind], ev.encoded(), b"}\n")
        return (_encode({"type": kind, "object": self.server.versioned(rt, obj)}) + b"\n",)

    async def close_streams(self) -> None:
        self.stopping.set()
        for w in list(self.server.store.watchers.values()):
            for watcher in list(w):
                watcher.close()


__all__ = ["HttpApi"]
