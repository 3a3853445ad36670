"""The StatefulSet controller: pods named by ordinal, created and removed in order.

``OrderedReady`` creates ordinal n only once 0..n-1 are Running and Ready, and removes from
the highest ordinal down, one at a time, waiting for each to be gone; ``Parallel`` does both at
once. Each template is recorded as a ControllerRevision ``<set>-<hash>`` and every pod carries
``controller-revision-hash``. RollingUpdate replaces pods whose revision is stale from the
highest ordinal down to ``partition``, one at a time and only while all pods are healthy;
ordinals below the partition are recreated at the current revision.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from kubesim.behaviour.informer import Informer, controller_ref, object_key
from kubesim.behaviour.owner_controller import OwnerController
from kubesim.behaviour.pod_ranking import is_ready
from kubesim.behaviour.pod_template import (
    int_field,
    pod_from_template,
    template_hash,
)
from kubesim.behaviour.replicaset import delete_pod
from kubesim.behaviour.shared_informers import Informers
from kubesim.interface import (
    GVR,
    PODS,
    STATEFULSETS,
    ApiError,
    Cluster,
    JsonObject,
)

log = logging.getLogger(__name__)

REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def ordinal(pod_name: str, set_name: str) -> int | None:
    """The ordinal of ``<set>-<n>``, or None for a name that is not one of the set's."""
    match = re.fullmatch(re.escape(set_name) + r"-(0|[1-9][0-9]*)", pod_name)
    return int(match.group(1)) if match else None


def _running_ready(pod: JsonObject) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and is_ready(pod)


class StatefulSetController(OwnerController):
    # Kruise's Advanced StatefulSet shares the kind name: the API version tells the sets apart
    api_version = "apps/v1"
    resource: GVR = STATEFULSETS

    def __init__(self, cluster: Cluster, informers: Informers, *, events: bool = True) -> None:
        super().__init__(cluster, informers, name="statefulset", workers=2, events=events)
        self.sets = self._own_informer()
        self.sets.add_handler(self.enqueue)
        informers.pods.add_handler(self.enqueue_owner("StatefulSet", when=self._owned_here))

    def _own_informer(self) -> Informer:
        return self.informers.statefulsets

    def _owned_here(self, old: JsonObject | None, new: JsonObject | None) -> bool:
        """Whether a pod change concerns a set of this controller's API group."""
        group = self.api_version.rpartition("/")[0]
        for pod in (old, new):
            ref = controller_ref(pod) if pod is not None else None
            if ref is not None and str(ref.get("apiVersion", "")).rpartition("/")[0] == group:
                return True
        return False

    async def _revision(self, sts: JsonObject, template: JsonObject) -> tuple[str, JsonObject]:
        """The ControllerRevision for ``template``, created if new."""
        pod_hash = template_hash(template)
        name = f"{sts['metadata']['name']}-{pod_hash}"
        owned = self.informers.revisions.by_index("owner", sts["metadata"]["uid"])
        for revision in owned:
            if revision["metadata"]["name"] == name:
                return name, revision
        number = max((int_field(r.get("revision"), 0) for r in owned), default=0) + 1
        created = await self.create_revision(
            {**sts, "apiVersion": self.api_version, "kind": "StatefulSet"},
            name=name,
            labels={**((template.get("metadata") or {}).get("labels") or {}), REVISION_LABEL: name},
            data={"spec": {"template": template}},
            number=number,
        )
        return name, created

    def _template_of(self, sts: JsonObject, revision: str) -> JsonObject | None:
        namespace = sts["metadata"].get("namespace")
        stored = self.informers.revisions.get(f"{namespace}/{revision}")
        if stored is None:
            return None
        template: JsonObject | None = ((stored.get("data") or {}).get("spec") or {}).get("template")
        return template

    async def _sync(self, key: str) -> None:
        sts = self.sets.get(key)
        if sts is None or sts["metadata"].get("deletionTimestamp"):
            return
        spec = sts.get("spec") or {}
        name = sts["metadata"]["name"]
        template = spec.get("template") or {}
        update_revision, _ = await self._revision(sts, template)
        status = sts.get("status") or {}
        current_revision = status.get("currentRevision") or update_revision
        if self._template_of(sts, current_revision) is None:
            current_revision = update_revision
        replicas = max(int_field(spec.get("replicas"), 1), 0)
        parallel = spec.get("podManagementPolicy") == "Parallel"
        strategy = spec.get("updateStrategy") or {}
        partition = int_field((strategy.get("rollingUpdate") or {}).get("partition"), 0)
        pods: dict[int, JsonObject] = {}
        for pod in self.informers.pods.by_index("owner", sts["metadata"]["uid"]):
            index = ordinal(pod["metadata"]["name"], name)
            if index is not None:
                pods[index] = pod
        # failed pods are deleted so they can be recreated
        for _, failed in sorted(pods.items()):
            if (failed.get("status") or {}).get("phase") == "Failed" and not failed["metadata"].get(
                "deletionTimestamp"
            ):
                await self._delete(sts, failed)
                if not parallel:
                    return await self._write_status(sts, current_revision, update_revision)
        # scale up: create missing ordinals
        for index in range(replicas):
            existing = pods.get(index)
            if existing is None:
                revision = (
                    current_revision
                    if strategy.get("type", "RollingUpdate") == "RollingUpdate"
                    and index < partition
                    else update_revision
                )
                await self._create_pod(sts, index, revision)
                if not parallel:
                    return await self._write_status(sts, current_revision, update_revision)
                continue
            if not parallel and (
                existing["metadata"].get("deletionTimestamp") or not _running_ready(existing)
            ):
                return await self._write_status(sts, current_revision, update_revision)
        # scale down: highest ordinal first
        condemned = sorted((i for i in pods if i >= replicas), reverse=True)
        for index in condemned:
            pod = pods[index]
            if pod["metadata"].get("deletionTimestamp"):
                if not parallel:
                    return await self._write_status(sts, current_revision, update_revision)
                continue
            if not parallel and not all(
                _running_ready(p) for i, p in pods.items() if i < index and i not in condemned
            ):
                return await self._write_status(sts, current_revision, update_revision)
            await self._delete(sts, pod)
            if not parallel:
                return await self._write_status(sts, current_revision, update_revision)
        if strategy.get("type", "RollingUpdate") == "RollingUpdate":
            await self._roll(sts, pods, replicas, partition, update_revision)
        await self._write_status(sts, current_revision, update_revision)
        return None

    async def _roll(
        self,
        sts: JsonObject,
        pods: dict[int, JsonObject],
        replicas: int,
        partition: int,
        update_revision: str,
    ) -> None:
        live = {i: p for i, p in pods.items() if i < replicas}
        if len(live) < replicas or not all(
            _running_ready(p) and not p["metadata"].get("deletionTimestamp") for p in live.values()
        ):
            return
        for index in sorted(live, reverse=True):
            if index < partition:
                break
            pod = live[index]
            if (pod["metadata"].get("labels") or {}).get(REVISION_LABEL) != update_revision:
                await self._delete(sts, pod)
                return

    async def _delete(self, sts: JsonObject, pod: JsonObject) -> None:
        await delete_pod(self.cluster, self.informers, pod)
        self.events.normal(
            sts,
            "StatefulSet",
            "SuccessfulDelete",
            f"delete Pod {pod['metadata']['name']} in StatefulSet {sts['metadata']['name']}"
            " successful",
        )

    async def _create_pod(self, sts: JsonObject, index: int, revision: str) -> None:
        template = self._template_of(sts, revision) or (sts.get("spec") or {}).get("template") or {}
        name = f"{sts['metadata']['name']}-{index}"
        pod = pod_from_template(
            template,
            {**sts, "apiVersion": self.api_version, "kind": "StatefulSet"},
            name=name,
            extra_labels={
                REVISION_LABEL: revision,
                POD_NAME_LABEL: name,
                POD_INDEX_LABEL: str(index),
            },
        )
        pod["spec"].setdefault("hostname", name)
        service = (sts.get("spec") or {}).get("serviceName")
        if service:
            pod["spec"].setdefault("subdomain", service)
        self._stamp(pod)
        try:
            created = await self.cluster.create(
                PODS, pod, namespace=sts["metadata"].get("namespace")
            )
        except ApiError as exc:
            if exc.code == 409:
                return  # the old pod of that name is still being removed
            raise
        self.informers.pods.write_result(created)
        self.events.normal(
            sts,
            "StatefulSet",
            "SuccessfulCreate",
            f"create Pod {name} in StatefulSet {sts['metadata']['name']} successful",
        )

    def _stamp(self, pod: JsonObject) -> None:
        """What a subclass adds to each new pod (nothing for apps/v1)."""

    async def _write_status(self, sts: JsonObject, current: str, update: str) -> None:
        fresh = self.sets.get(object_key(sts)) or sts
        spec = fresh.get("spec") or {}
        replicas = max(int_field(spec.get("replicas"), 1), 0)
        pods = [
            p
            for p in self.informers.pods.by_index("owner", fresh["metadata"]["uid"])
            if ordinal(p["metadata"]["name"], fresh["metadata"]["name"]) is not None
        ]
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]

        def revision(p: JsonObject) -> str | None:
            return (p["metadata"].get("labels") or {}).get(REVISION_LABEL)

        ready = sum(1 for p in live if is_ready(p))
        updated = sum(1 for p in live if revision(p) == update)
        if updated == replicas and ready == replicas and len(live) == replicas:
            current = update
        status: dict[str, Any] = {
            "observedGeneration": fresh["metadata"].get("generation", 1),
            "replicas": len(live),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "currentReplicas": sum(1 for p in live if revision(p) == current),
            "updatedReplicas": updated,
            "currentRevision": current,
            "updateRevision": update,
            "collisionCount": 0,
        }
        old = fresh.get("status") or {}
        if {k: v for k, v in status.items() if v} == {k: v for k, v in old.items() if v}:
            return
        await self.write(
            self.resource,
            self.sets,
            {**fresh, "status": {**old, **status}},
            subresource="status",
        )
