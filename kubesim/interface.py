"""The in-process seam between kubesim's API machinery and its simulated cluster behaviour.

Simulated controllers, the scheduler and the kubelet call a :class:`Cluster`. Every call goes
through the same path as an HTTP request (defaulting, validation, admission webhooks,
resourceVersion, watch fan-out), so a webhook sees every pod a controller creates, exactly as
on a real cluster. Objects are plain JSON-shaped dicts as the API serves them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal, NamedTuple, Protocol

JsonObject = dict[str, Any]
PatchType = Literal["json", "merge", "strategic"]
WatchEventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]


class GVR(NamedTuple):
    """A resource: group ("" for core), version and plural resource name."""

    group: str
    version: str
    resource: str


PODS = GVR("", "v1", "pods")
NODES = GVR("", "v1", "nodes")
NAMESPACES = GVR("", "v1", "namespaces")
EVENTS = GVR("", "v1", "events")
DEPLOYMENTS = GVR("apps", "v1", "deployments")
REPLICASETS = GVR("apps", "v1", "replicasets")
STATEFULSETS = GVR("apps", "v1", "statefulsets")
ADVANCED_STATEFULSETS = GVR("apps.kruise.io", "v1beta1", "statefulsets")
CONTROLLERREVISIONS = GVR("apps", "v1", "controllerrevisions")
PODDISRUPTIONBUDGETS = GVR("policy", "v1", "poddisruptionbudgets")
PRIORITYCLASSES = GVR("scheduling.k8s.io", "v1", "priorityclasses")
CLONESETS = GVR("apps.kruise.io", "v1alpha1", "clonesets")
HORIZONTALPODAUTOSCALERS = GVR("autoscaling", "v2", "horizontalpodautoscalers")


class WatchEvent(NamedTuple):
    type: WatchEventType
    object: JsonObject


class ApiError(Exception):
    """An API failure carried as the ``Status`` object a real server would send."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = dict(details or {})

    def status(self) -> JsonObject:
        body: JsonObject = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


class Cluster(Protocol):
    """What a simulated component may do; each method behaves like the matching HTTP verb.

    Failures raise :class:`ApiError` with the code and reason the HTTP API would return.
    """

    async def create(
        self,
        gvr: GVR,
        obj: JsonObject,
        *,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> JsonObject:
        """POST; with ``subresource`` (``binding``, ``eviction``) ``name`` is the parent."""
        ...

    async def get(
        self, gvr: GVR, name: str, *, namespace: str | None = None, subresource: str | None = None
    ) -> JsonObject:
        """GET; ``subresource="scale"`` reads the ``autoscaling/v1`` Scale of a scalable kind."""
        ...

    def resources_for(self, group: str, kind: str) -> list[GVR]:
        """The resources serving ``kind`` in ``group``, preferred version first (what a REST
        mapper finds through discovery); empty when nothing serves it."""
        ...

    async def list(
        self,
        gvr: GVR,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[JsonObject], str]:
        """Items and the list's resourceVersion."""
        ...

    async def update(
        self,
        gvr: GVR,
        obj: JsonObject,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> JsonObject:
        """PUT; a stale ``metadata.resourceVersion`` raises 409 Conflict."""
        ...

    async def patch(
        self,
        gvr: GVR,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> JsonObject: ...

    async def delete(
        self,
        gvr: GVR,
        name: str,
        *,
        namespace: str | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
        uid_precondition: str | None = None,
    ) -> JsonObject:
        """DELETE; returns the object (with deletionTimestamp if deletion is graceful)."""
        ...

    def watch(
        self,
        gvr: GVR,
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> AsyncIterator[WatchEvent]:
        """Events after ``resource_version`` (all current objects as ADDED when None)."""
        ...

    def now(self) -> str:
        """The cluster's current time as RFC 3339, as the API stamps timestamps."""
        ...


class Behaviour(Protocol):
    """A simulated cluster component (controller manager, scheduler, kubelet, ...)."""

    async def start(self, cluster: Cluster) -> None: ...

    async def stop(self) -> None: ...
