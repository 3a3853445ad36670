"""The skeleton the workload controllers share: a work queue of object keys fed by informers.

Upstream's Deployment, ReplicaSet and StatefulSet controllers are all built the same way: an
informer handler enqueues the key of the object that changed, another enqueues the controlling
owner of a dependent that changed (a pod's ReplicaSet, a ReplicaSet's Deployment), and workers
reconcile one key at a time from the informer caches. Only the reconcile (``_sync``) differs,
so that is all a subclass writes; the queue guarantees one worker per key at a time.

Signature::

    OwnerController(cluster: Cluster, informers: Informers, *, name: str, workers: int,
                    events: bool)
        .start() -> None; async .stop() -> None
        .enqueue(old, new) -> None                 # handler for the controller's own kind
        .enqueue_owner(kind: str, when: (old, new) -> bool | None = None) -> Handler
                                                   # dependents owned by ``kind``; ``when``
                                                   # picks the changes that count
        async .write(resource: GVR, informer: Informer, body: JsonObject, *,
                     subresource: str = "") -> JsonObject   # update, then cache the answer
        async ._sync(key: str) -> None              # the reconcile, per subclass
"""

from __future__ import annotations

from collections.abc import Callable

from kubesim.behaviour.events import EventRecorder
from kubesim.behaviour.informer import Handler, Informer, controller_ref, object_key
from kubesim.behaviour.pod_template import owner_reference
from kubesim.behaviour.shared_informers import Informers
from kubesim.behaviour.workqueue import WorkQueue
from kubesim.interface import CONTROLLERREVISIONS, GVR, ApiError, Cluster, JsonObject


class OwnerController:
    def __init__(
        self, cluster: Cluster, informers: Informers, *, name: str, workers: int, events: bool
    ) -> None:
        self.cluster = cluster
        self.informers = informers
        self.events = EventRecorder(cluster, f"{name}-controller", enabled=events)
        self.queue = WorkQueue(name, self._sync, workers=workers)

    def start(self) -> None:
        self.queue.start()

    async def stop(self) -> None:
        await self.queue.stop()
        await self.events.stop()

    def enqueue(self, old: JsonObject | None, new: JsonObject | None) -> None:
        """A change to one of the controller's own objects: reconcile it (deletions need not)."""
        if new is not None:
            self.queue.add(object_key(new))

    def enqueue_owner(
        self,
        kind: str,
        when: Callable[[JsonObject | None, JsonObject | None], bool] | None = None,
    ) -> Handler:
        """A change to a dependent: reconcile the ``kind`` that controls it, before and after;
        only the changes ``when`` accepts, if given."""

        def handler(old: JsonObject | None, new: JsonObject | None) -> None:
            if when is not None and not when(old, new):
                return
            for obj in (old, new):
                ref = controller_ref(obj) if obj is not None else None
                if obj is not None and ref is not None and ref.get("kind") == kind:
                    self.queue.add(f"{obj['metadata'].get('namespace')}/{ref.get('name')}")

        return handler

    async def write(
        self, resource: GVR, informer: Informer, body: JsonObject, *, subresource: str = ""
    ) -> JsonObject:
        """An update through the API, cached at once so the next reconcile reads what it wrote."""
        updated = await self.cluster.update(
            resource,
            body,
            namespace=body["metadata"].get("namespace"),
            subresource=subresource or None,
        )
        informer.write_result(updated)
        return updated

    async def create_revision(
        self,
        owner: JsonObject,
        *,
        name: str,
        labels: JsonObject,
        data: JsonObject,
        number: int,
    ) -> JsonObject:
        """A ControllerRevision owned by ``owner`` (which carries its apiVersion and kind),
        cached at once; one created meanwhile under the same name (a hash names it) is read
        instead."""
        namespace = owner["metadata"].get("namespace")
        body = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": labels,
                "ownerReferences": [owner_reference(owner)],
            },
            "data": data,
            "revision": number,
        }
        try:
            created = await self.cluster.create(CONTROLLERREVISIONS, body, namespace=namespace)
        except ApiError as exc:
            if exc.code != 409:
                raise
            created = await self.cluster.get(CONTROLLERREVISIONS, name, namespace=namespace)
        self.informers.revisions.write_result(created)
        return created

    async def _sync(self, key: str) -> None:
        raise NotImplementedError
