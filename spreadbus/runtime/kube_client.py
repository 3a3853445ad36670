"""Kubernetes access for the services: configuration, raw-JSON requests, and one error family.

The official ``kubernetes`` client does the HTTP, authentication and TLS; we use its
``ApiClient.param_serialize`` / ``call_api`` layer directly so any resource (built-in or custom)
is addressed by group/version/resource and bodies stay raw JSON bytes, decoded with msgspec. No
model objects are built, which keeps the watcher's hot path cheap.

Errors are :class:`KubeAPIError` subclasses per HTTP status, raised ``from`` the client's
exception and carrying ``status``, ``reason`` and the API's ``message``; ``retryable`` tells
callers which are worth another try (429, 5xx, connection failures).

Calls are synchronous (urllib3 underneath); async services wrap them in ``asyncio.to_thread``
(see :meth:`KubeClient.arequest`).

Every API path is built by :func:`resource_path`, which refuses a segment that is not a valid
path segment (``.``, ``..``, or with ``/`` or ``%``: urllib3 collapses dot segments before
sending, and the API server decodes the path before splitting it) and percent-encodes the rest,
so a name can only ever address the object of that name.

Signatures::

    kube_api_client(kubeconfig: str = "", context: str = "", *,
                    connections: int | None = None) -> kubernetes.client.ApiClient
    resource_path(group: str, version: str, resource: str, namespace: str = "",
                  name: str = "", subresource: str = "") -> str      # raises BadPath
    KubeClient(api: ApiClient, *, executor: concurrent.futures.Executor | None = None)
        .request(method: str, path: str, *, query: Mapping[str, str] | None = None,
                 body: Any = None, content_type: str | None = None,
                 timeout: float | None = 30.0) -> bytes     # keywords: RequestOptions
        async .arequest(...same...) -> bytes
        .stream(path: str, *, query: Mapping[str, str], timeout: float) -> Iterator[bytes]
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Executor
from typing import Any, ClassVar, TypedDict, Unpack
from urllib.parse import quote

import msgspec
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError as Urllib3Error

from kubesemantics.qualified_names import is_valid_path_segment_name

log = logging.getLogger(__name__)


class KubeAPIError(Exception):
    """The Kubernetes API refused or could not be reached."""

    status: ClassVar[int] = 0

    def __init__(self, status: int, reason: str = "", message: str = "") -> None:
        super().__init__(f"{status} {reason}: {message}".strip())
        self.http_status = status
        self.reason = reason
        self.message = message

    @property
    def retryable(self) -> bool:
        return self.http_status in (0, 429) or self.http_status >= 500


def _status_error(name: str, status: int) -> type[KubeAPIError]:
    """One subclass per status, so callers can ``except NotFound`` without reading codes."""
    return type(name, (KubeAPIError,), {"status": status, "__module__": __name__})


Unreachable = _status_error("Unreachable", 0)
BadRequest = _status_error("BadRequest", 400)
Unauthorized = _status_error("Unauthorized", 401)
Forbidden = _status_error("Forbidden", 403)
NotFound = _status_error("NotFound", 404)
Conflict = _status_error("Conflict", 409)
Gone = _status_error("Gone", 410)
UnsupportedMediaType = _status_error("UnsupportedMediaType", 415)
Unprocessable = _status_error("Unprocessable", 422)
TooManyRequests = _status_error("TooManyRequests", 429)

_BY_STATUS: dict[int, type[KubeAPIError]] = {
    cls.status: cls
    for cls in (
        BadRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        Conflict,
        Gone,
        UnsupportedMediaType,
        Unprocessable,
        TooManyRequests,
    )
}


@contextlib.contextmanager
def _reachable() -> Iterator[None]:
    """Transport failures (refused, reset, timed out) as :class:`Unreachable`."""
    try:
        yield
    except (Urllib3Error, OSError) as exc:
        raise Unreachable(0, "Unreachable", repr(exc)) from exc


class _Status(msgspec.Struct):
    reason: str = ""
    message: str = ""


_STATUS = msgspec.json.Decoder(_Status)


def api_error(status: int, body: bytes | str | None, reason: str = "") -> KubeAPIError:
    """Build the error subclass for an HTTP status, reading the API's Status body if any."""
    message = ""
    if body:
        try:
            decoded = _STATUS.decode(body.encode() if isinstance(body, str) else body)
            reason, message = decoded.reason or reason, decoded.message
        except msgspec.DecodeError:
            message = body if isinstance(body, str) else body.decode(errors="replace")
    cls = _BY_STATUS.get(status, KubeAPIError)
    return cls(status, reason, message[:2000])


def kube_api_client(kubeconfig: str = "", context: str = "", *,
                    connections: int | None = None) -> k8s.ApiClient:
    """A kubeconfig when given, else in-cluster when running in a pod, else ~/.kube/config.

    ``connections``: the pooled connections kept open (the client's default is five per CPU);
    a caller with more concurrent requests than that would open and close one per request.
    """
    configuration = k8s.Configuration()
    if connections is not None:
        configuration.connection_pool_maxsize = connections
    if not kubeconfig and os.environ.get("KUBERNETES_SERVICE_HOST"):
        k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
            client_configuration=configuration
        )
    else:
        k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig or None,
            context=context or None,
            client_configuration=configuration,
            persist_config=False,
        )
    return k8s.ApiClient(configuration)


class BadPath(ValueError):
    """A name that cannot be one segment of an API path; nothing was sent."""


def resource_path(
    group: str,
    version: str,
    resource: str,
    namespace: str = "",
    name: str = "",
    subresource: str = "",
) -> str:
    """The API path of a collection (no ``name``) or of one object, every segment escaped.

    The only place that builds API paths. A segment the server could read as more than one
    (``.``, ``..``, ``/``, ``%``: clients collapse dot segments, the server decodes before it
    splits) raises :class:`BadPath`, naming the part; the rest is percent-encoded as a whole.
    """
    parts = [("version", version), ("resource", resource)]
    if group:
        parts.insert(0, ("group", group))
    if namespace:
        parts.insert(-1, ("namespace", namespace))
    parts += [("name", name)] if name else []
    parts += [("subresource", subresource)] if subresource else []
    for part, segment in parts:
        problems = is_valid_path_segment_name(segment) or (["may not be empty"]
                                                           if not segment else [])
        if problems:
            raise BadPath(f"{part} {segment[:64]!r}: {', '.join(problems)}")
    base = "/apis" if group else "/api"
    for part, segment in parts:
        if part == "namespace":
            base += "/namespaces"
        base += "/" + quote(segment, safe="")
    return base


class RequestOptions(TypedDict, total=False):
    query: Mapping[str, str] | None
    body: Any
    content_type: str | None
    timeout: float | None
    """Seconds for the whole request (default 30)."""


class KubeClient:
    """Raw JSON requests through the official client's transport and authentication."""

    def __init__(self, api: k8s.ApiClient, *, executor: Executor | None = None) -> None:
        self.api = api
        self.executor = executor
        """Threads for :meth:`arequest` (the event loop's default executor when None)."""

    def _send(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None,
        body: Any,
        content_type: str | None,
        timeout: float | tuple[float, float] | None,
    ) -> Any:
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        serialized = self.api.param_serialize(
            method=method,
            resource_path=path,
            query_params=list((query or {}).items()),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        try:
            with _reachable():
                return self.api.call_api(*serialized, _request_timeout=timeout)
        except ApiException as exc:
            raise api_error(exc.status or 0, exc.body, exc.reason or "") from exc

    def request(self, method: str, path: str, **options: Unpack[RequestOptions]) -> bytes:
        """One request; the body of a 2xx answer, else a :class:`KubeAPIError`."""
        response = self._send(
            method,
            path,
            query=options.get("query"),
            body=options.get("body"),
            content_type=options.get("content_type"),
            timeout=options.get("timeout", 30.0),
        )
        with _reachable():
            data: bytes = response.read()
        if not 200 <= response.status < 300:
            raise api_error(response.status, data, response.reason or "")
        return data

    async def arequest(self, method: str, path: str, **options: Unpack[RequestOptions]) -> bytes:
        """:meth:`request` in a worker thread (of ``executor`` when given)."""
        if self.executor is None:
            return await asyncio.to_thread(self.request, method, path, **options)
        call = functools.partial(self.request, method, path, **options)
        return await asyncio.get_running_loop().run_in_executor(self.executor, call)

    def stream(
        self,
        path: str,
        *,
        query: Mapping[str, str],
        timeout: float,
        opened: Callable[[Callable[[], None]], None] | None = None,
    ) -> Iterator[bytes]:
        """Lines of a streaming GET (a watch), as bytes; ends when the server closes it.

        ``opened`` receives an abort function as soon as the response is open: another thread
        calls it to unblock a reader waiting for the next line (an abandoned watch), which then
        ends with an error instead of holding its pooled connection until the server's timeout.
        """
        response = self._send(
            "GET", path, query=query, body=None, content_type=None, timeout=(5.0, timeout)
        )
        raw = response.response
        if opened is not None:
            opened(lambda: _abort(raw))
        try:
            with _reachable():
                if not 200 <= response.status < 300:
                    raise api_error(response.status, raw.read(), response.reason or "")
                buffer = b""
                for chunk in raw.stream(64 * 1024, decode_content=True):
                    # One split per chunk: a chunk holding many events is not copied per line.
                    *lines, buffer = (buffer + chunk).split(b"\n")
                    for line in lines:
                        if line.strip():
                            yield line
                if buffer.strip():
                    yield buffer
        finally:
            raw.release_conn()


def _abort(raw: Any) -> None:
    """Shut the socket of a streaming response down, from any thread."""
    try:
        raw.shutdown()
    except Exception:  # already closed, or an older urllib3 without shutdown()
        try:
            raw.close()
        except Exception:
            log.debug("closing an abandoned watch failed", exc_info=True)
