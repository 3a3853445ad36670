"""The audit points the watcher derives from what it observes: pod lifecycle and status changes.

``KUBE`` keeps only each object's latest observation, so the steps a placement question needs
(when a pod was created, bound to which node, ready, marked for deletion, gone) and the status
transitions of the governing objects are published again, as :class:`PodLifecycle` and
:class:`StatusChange` messages, to ``HISTORY`` (``history.>``), which keeps them for its window.

The rules are pure (:func:`pod_points`, :func:`status_change`): from what was last published for
an object and its new observation, the points to publish (a governing object's deletion is one
too). The memory (:class:`HistoryPoints`) is
one small entry per live pod and per governing object, forgotten on deletion; a restarted watcher
has none, so its relist publishes each pod's ``created`` again. The audit fold keeps the first
of each (``created``, ``bound`` to a node, ``deleted``), and ``Nats-Msg-Id`` lets the stream drop
repeats inside its dedup window.

Publishing is best effort, like the webhook's admissions: a core publish without waiting for an
acknowledgement, so the observation path never waits on the audit log; a publish that fails is
logged and counted, never retried.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from typing import Final, NamedTuple

import msgspec
from nats.aio.client import Client
from prometheus_client import CollectorRegistry, Counter

from events import subjects
from events.codec import encode
from events.messages import Event, PodLifecycle, PodPoint, ResourceRef, StatusChange
from events.streams import DEDUP_HEADER

log = logging.getLogger(__name__)

class _Owner(msgspec.Struct):
    kind: str = ""
    name: str = ""
    controller: bool = False


class _Meta(msgspec.Struct):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resourceVersion: str = ""
    generation: int = 0
    deletionTimestamp: str | None = None
    annotations: dict[str, str] | None = None
    ownerReferences: list[_Owner] | None = None


class _Condition(msgspec.Struct):
    type: str = ""
    status: str = ""


class _PodStatus(msgspec.Struct):
    reason: str = ""
    message: str = ""
    conditions: list[_Condition] | None = None


class _PodSpec(msgspec.Struct):
    nodeName: str = ""


class _Pod(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _PodSpec = msgspec.field(default_factory=_PodSpec)
    status: _PodStatus = msgspec.field(default_factory=_PodStatus)


class _Governing(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    status: msgspec.Raw = msgspec.Raw(b"{}")


_POD: Final = msgspec.json.Decoder(_Pod)
_GOVERNING: Final = msgspec.json.Decoder(_Governing)
_STATUS: Final = msgspec.json.Decoder(dict[str, object])


class PodSeen(NamedTuple):
    """What was last published of one pod."""

    node: str
    ready: bool
    deleting: bool


class Point(NamedTuple):
    """One message to publish: its subject, dedup id and body."""

    subject: str
    msg_id: str
    event: Event


def _owner(pod: _Pod) -> str:
    for ref in pod.metadata.ownerReferences or ():
        if ref.controller:
            return f"{ref.kind}/{ref.name}"
    return ""


def _ready(pod: _Pod) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or ())


def _reason(pod: _Pod) -> str:
    return ": ".join(part for part in (pod.status.reason, pod.status.message) if part)


def pod_points(
    seen: PodSeen | None, event: str, raw: bytes, *, cluster: str, ts: float
) -> tuple[PodSeen | None, list[Point]]:
    """The lifecycle points one pod observation adds to what was published before (``seen``),
    and what is published after it (``None`` once the pod is gone)."""
    pod = _POD.decode(raw)
    meta = pod.metadata
    node, ready, deleting = pod.spec.nodeName, _ready(pod), meta.deletionTimestamp is not None
    points: list[tuple[PodPoint, str]] = []
    if seen is None and event != "DELETED":
        points.append(("created", "created"))
    if node and (seen is None or seen.node != node):
        points.append(("bound", f"bound:{node}"))
    if event != "DELETED" and ready != (seen.ready if seen else False):
        points.append(("ready" if ready else "unready", meta.resourceVersion))
    if (deleting or event == "DELETED") and not (seen and seen.deleting):
        points.append(("deleting", "deleting"))
    if event == "DELETED":
        points.append(("deleted", "deleted"))
    subject = subjects.pod_history(cluster, meta.namespace, meta.name)
    owner, reason = _owner(pod), _reason(pod)
    out = [
        Point(subject, f"pod:{meta.uid}:{point}:{key}", PodLifecycle(
            cluster=cluster, namespace=meta.namespace, name=meta.name, uid=meta.uid,
            point=point, node=node, owner=owner, resource_version=meta.resourceVersion,
            reason=reason if point in ("deleting", "deleted", "unready") else "",
            annotations=dict(meta.annotations or {}) if point == "created" else {}, ts=ts,
        ))
        for point, key in points
    ]
    after = None if event == "DELETED" else PodSeen(node, ready, deleting)
    return after, out


def status_change(
    seen: bytes | None, ref: ResourceRef, event: str, raw: bytes, *, cluster: str, ts: float
) -> tuple[bytes | None, Point | None]:
    """A governing object's status transition, if its status differs from the one published
    (``seen`` is a digest of it), and the digest after this observation; its deletion, marked
    ``deleted``, once it is gone (and ``None`` after it)."""
    obj = _GOVERNING.decode(raw)
    deleted = event == "DELETED"
    digest = hashlib.blake2b(bytes(obj.status), digest_size=16).digest()
    if digest == seen and not deleted:
        return seen, None
    meta = obj.metadata
    status = _STATUS.decode(obj.status) if bytes(obj.status) not in (b"null", b"") else {}
    change = StatusChange(
        cluster=cluster, group=ref.group, version=ref.version, resource=ref.resource,
        namespace=meta.namespace, name=meta.name, uid=meta.uid, generation=meta.generation,
        resource_version=meta.resourceVersion, status=status, ts=ts, deleted=deleted,
    )
    subject = subjects.status_history(cluster, ref.group, ref.resource, meta.namespace, meta.name)
    msg_id = f"status:{meta.uid}:{'deleted' if deleted else meta.resourceVersion}"
    return (None if deleted else digest), Point(subject, msg_id, change)


class HistoryPoints:
    """What was last published per pod and governing object, and the publishing of new points.

    ``status_resources``: (group, resource) of the governing objects whose status transitions
    are recorded, those the features name (``Feature.status_history``)."""

    def __init__(
        self,
        nc: Client,
        *,
        cluster: str,
        status_resources: Iterable[tuple[str, str]] = (),
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.nc = nc
        self.cluster = cluster
        self.status_resources = frozenset(status_resources)
        self._pods: dict[str, PodSeen] = {}
        self._statuses: dict[tuple[str, str, str], bytes] = {}
        self.published = Counter("spreadbus_watcher_history_points",
                                 "Audit points published to HISTORY", ["type"], registry=registry)
        self.failed = Counter("spreadbus_watcher_history_failures",
                              "Audit points not published (best effort)", registry=registry)

    def points(self, ref: ResourceRef, event: str, uid: str, raw: bytes, ts: float) -> list[Point]:
        """The points of one observation; the memory moves on as if they were published."""
        try:
            if ref.group == "" and ref.resource == "pods":
                after, out = pod_points(self._pods.get(uid), event, raw,
                                        cluster=self.cluster, ts=ts)
                if after is None:
                    self._pods.pop(uid, None)
                else:
                    self._pods[uid] = after
                return out
            if (ref.group, ref.resource) in self.status_resources:
                key = (ref.group, ref.resource, uid)
                digest, point = status_change(self._statuses.get(key), ref, event, raw,
                                              cluster=self.cluster, ts=ts)
                if digest is None:
                    self._statuses.pop(key, None)
                else:
                    self._statuses[key] = digest
                return [point] if point else []
        except msgspec.DecodeError as exc:
            log.warning("no audit points for an undecodable object",
                        extra={"resource": ref.resource, "uid": uid, "error": str(exc)})
        return []

    async def publish(self, ref: ResourceRef, event: str, uid: str, raw: bytes, ts: float) -> None:
        for point in self.points(ref, event, uid, raw, ts):
            try:
                await self.nc.publish(point.subject, encode(point.event),
                                      headers={DEDUP_HEADER: point.msg_id})
            except Exception as exc:
                self.failed.inc()
                log.warning("audit point not published", extra={"error": repr(exc)})
                continue
            self.published.labels(type(point.event).__struct_config__.tag).inc()
