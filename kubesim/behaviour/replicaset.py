"""The ReplicaSet controller: create and delete pods until the count matches ``replicas``.

Pods are created through the API with ``generateName`` and a controller owner reference, so
admission webhooks see each one; creation runs in slow-start batches (1, 2, 4, ...) as upstream
does, so a failing webhook costs one call, not hundreds. Scale-down victims come from
:mod:`kubesim.behaviour.pod_ranking`. Status counts replicas, fully labelled, ready and
available (ready for ``minReadySeconds``) pods; a failed create sets ``ReplicaFailure``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime

from kubesim.behaviour.informer import controller_ref
from kubesim.behaviour.label_match import selector_matches
from kubesim.behaviour.owner_controller import OwnerController
from kubesim.behaviour.pod_ranking import is_ready, pods_to_delete
from kubesim.behaviour.pod_template import availability, int_field, is_active, pod_from_template
from kubesim.behaviour.shared_informers import Informers
from kubesim.behaviour.timestamps import parse_time
from kubesim.interface import PODS, REPLICASETS, ApiError, Cluster, JsonObject

log = logging.getLogger(__name__)
BURST_REPLICAS = 500


def cluster_now(cluster: Cluster) -> datetime:
    moment = parse_time(cluster.now())
    if moment is None:
        raise ValueError(f"the cluster clock reads {cluster.now()!r}, not an RFC 3339 time")
    return moment


async def create_in_batches(
    cluster: Cluster,
    informers: Informers,
    pods: list[JsonObject],
    on_created: Callable[[JsonObject], None] | None = None,
) -> ApiError | None:
    """Create pods 1, 2, 4, ... at a time; stop at the first batch with a failure."""
    batch = 1
    done = 0
    while done < len(pods):
        chunk = pods[done : done + batch]
        results = await asyncio.gather(
            *(cluster.create(PODS, p, namespace=p["metadata"].get("namespace")) for p in chunk),
            return_exceptions=True,
        )
        error: ApiError | None = None
        for result in results:
            if isinstance(result, ApiError):
                error = error or result
            elif isinstance(result, BaseException):
                raise result
            else:
                informers.pods.write_result(result)
                if on_created is not None:
                    on_created(result)
        if error is not None:
            return error
        done += len(chunk)
        batch *= 2
    return None


async def delete_pod(cluster: Cluster, informers: Informers, pod: JsonObject) -> None:
    meta = pod["metadata"]
    try:
        result = await cluster.delete(PODS, meta["name"], namespace=meta.get("namespace"))
    except ApiError as exc:
        if exc.code == 404:
            return
        raise
    record_deletion(informers, result)


def record_deletion(informers: Informers, result: JsonObject) -> None:
    """Cache a delete's outcome: still there (terminating) or gone."""
    if result.get("kind") == "Status":
        return
    meta = result.get("metadata") or {}
    if meta.get("deletionTimestamp") and (
        meta.get("finalizers") or int_field(meta.get("deletionGracePeriodSeconds"), 0) > 0
    ):
        informers.pods.write_result(result)
    else:
        informers.pods.remove(result)


def set_condition(
    conditions: list[JsonObject], condition: JsonObject, *, touch: bool = False
) -> list[JsonObject]:
    """Replace the condition of the same type, keeping its transition time if status holds.

    ``lastUpdateTime`` is kept too while the reason holds, unless ``touch`` says it moved on.
    """
    out = []
    replaced = False
    for existing in conditions:
        if existing.get("type") == condition["type"]:
            if existing.get("status") == condition["status"]:
                condition = {**condition, "lastTransitionTime": existing.get("lastTransitionTime")}
                if (
                    not touch
                    and "lastUpdateTime" in existing
                    and existing.get("reason") == condition.get("reason")
                ):
                    condition["lastUpdateTime"] = existing["lastUpdateTime"]
            out.append(condition)
            replaced = True
        else:
            out.append(existing)
    if not replaced:
        out.append(condition)
    return out


# Pod metadata a ReplicaSet's reconcile never reads while its counts hold: scale-down reads
# the deletion cost from the cache when it picks victims, not when the cost changes.
_UNREAD_METADATA = frozenset({"annotations", "resourceVersion", "managedFields"})


def counts_for_replicaset(old: JsonObject | None, new: JsonObject | None) -> bool:
    """Whether a pod change can change what its ReplicaSet does or reports.

    A reconcile walks every pod of the set, so reconciling on every annotation write (a spread
    controller writes a deletion cost on each pod) costs O(pods) per write, O(pods^2) for the
    set; such writes are skipped. Any change to spec, status, labels, owners, deletion or
    finalizers still reconciles.
    """
    if old is None or new is None:
        return True
    if old.get("spec") != new.get("spec") or old.get("status") != new.get("status"):
        return True
    before, after = old.get("metadata") or {}, new.get("metadata") or {}
    return any(
        before.get(k) != after.get(k) for k in (before.keys() | after.keys()) - _UNREAD_METADATA
    )


class ReplicaSetController(OwnerController):
    def __init__(self, cluster: Cluster, informers: Informers, *, events: bool = True) -> None:
        super().__init__(cluster, informers, name="replicaset", workers=4, events=events)
        informers.replicasets.add_handler(self.enqueue)
        informers.pods.add_handler(self.enqueue_owner("ReplicaSet", when=counts_for_replicaset))

    def _related_pods(self, rs: JsonObject, own: list[JsonObject]) -> list[JsonObject]:
        owner = controller_ref(rs)
        if owner is None:
            return own
        related: list[JsonObject] = []
        for sibling in self.informers.replicasets.by_index("owner", str(owner.get("uid"))):
            related.extend(
                p
                for p in self.informers.pods.by_index("owner", sibling["metadata"]["uid"])
                if is_active(p)
            )
        return related

    async def _sync(self, key: str) -> None:
        rs = self.informers.replicasets.get(key)
        if rs is None or rs["metadata"].get("deletionTimestamp"):
            return
        spec = rs.get("spec") or {}
        template = spec.get("template") or {}
        owned = self.informers.pods.by_index("owner", rs["metadata"]["uid"])
        active = [p for p in owned if is_active(p)]
        desired = max(int_field(spec.get("replicas"), 1), 0)
        failure: ApiError | None = None
        if spec.get("selector") is None:
            failure = ApiError(422, "Invalid", "spec.selector: Required value")
        elif len(active) < desired:
            wanted = min(desired - len(active), BURST_REPLICAS)
            pods = [pod_from_template(template, _with_kind(rs)) for _ in range(wanted)]
            failure = await create_in_batches(
                self.cluster,
                self.informers,
                pods,
                lambda pod: self.events.normal(
                    rs, "ReplicaSet", "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}"
                ),
            )
            if failure is not None:
                self.events.warning(
                    rs, "ReplicaSet", "FailedCreate", f"Error creating: {failure.message}"
                )
        elif len(active) > desired:
            now = cluster_now(self.cluster)
            victims = pods_to_delete(
                active, self._related_pods(rs, active), len(active) - desired, now
            )
            await asyncio.gather(*(delete_pod(self.cluster, self.informers, p) for p in victims))
            for pod in victims:
                self.events.normal(
                    rs, "ReplicaSet", "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}"
                )
        await self._update_status(key, failure)

    async def _update_status(self, key: str, failure: ApiError | None) -> None:
        rs = self.informers.replicasets.get(key)
        if rs is None:
            return
        spec = rs.get("spec") or {}
        selector = spec.get("selector")
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        active = [
            p for p in self.informers.pods.by_index("owner", rs["metadata"]["uid"]) if is_active(p)
        ]
        now = cluster_now(self.cluster)
        min_ready = int_field(spec.get("minReadySeconds"), 0)
        available = 0
        soonest: float | None = None
        for pod in active:
            ok, remaining = availability(pod, min_ready, now)
            if ok:
                available += 1
            elif remaining > 0:
                soonest = remaining if soonest is None else min(soonest, remaining)
        old = rs.get("status") or {}
        conditions = list(old.get("conditions") or [])
        if failure is not None:
            conditions = set_condition(
                conditions,
                {
                    "type": "ReplicaFailure",
                    "status": "True",
                    "reason": "FailedCreate",
                    "message": failure.message,
                    "lastTransitionTime": self.cluster.now(),
                },
            )
        else:
            conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
        status: JsonObject = {
            "replicas": len(active),
            "fullyLabeledReplicas": sum(
                1
                for p in active
                if all(
                    (p["metadata"].get("labels") or {}).get(k) == v
                    for k, v in template_labels.items()
                )
                and (selector is None or selector_matches(selector, p["metadata"].get("labels")))
            ),
            "readyReplicas": sum(1 for p in active if is_ready(p)),
            "availableReplicas": available,
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        if conditions:
            status["conditions"] = conditions
        if soonest is not None:
            self.queue.add_after(key, soonest + 0.01)
        if _strip_zero(status) != _strip_zero(old):
            await self.write(
                REPLICASETS,
                self.informers.replicasets,
                {**rs, "status": status},
                subresource="status",
            )
        if failure is not None:
            raise failure  # retried with backoff by the queue


def _strip_zero(status: JsonObject) -> JsonObject:
    return {k: v for k, v in status.items() if v not in (0, None, [], {})}


def _with_kind(rs: JsonObject) -> JsonObject:
    return {**rs, "apiVersion": "apps/v1", "kind": "ReplicaSet"}
