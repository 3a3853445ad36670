"""OpenKruise's CloneSet controller: pods named ``<set>-<id>``, updated by recreation.

Each reconcile does what Kruise's does, in its order: find (or create) the update revision as a
ControllerRevision ``<set>-<hash>`` of the template; compute the step with
:mod:`kubesim.behaviour.cloneset_diffs`; then scale (create missing pods, of which the
partition's share at the current revision; delete specified pods; scale in, choosing victims
by :mod:`kubesim.behaviour.cloneset_ranking`); and only if scaling changed nothing, update.

An update is a recreation, as Kruise's ``ReCreate`` strategy: the pods chosen (not ready first,
at most ``maxUnavailable`` unavailable) are labelled ``apps.kruise.io/specified-delete``, and
the next reconcile deletes them (ready ones within the unavailability budget) and creates their
replacements at the update revision, ``maxSurge`` extra first when it is set. ``InPlaceIfPossible``
and ``InPlaceOnly`` are served but recreate as well: kubesim runs no container images to swap.
``scaleStrategy.podsToDelete`` marks pods the same way; names of pods that are gone are removed
from it afterwards, as Kruise does.

Installing a ``clonesets.apps.kruise.io`` CRD replaces the built-in kind (its schema serves the
objects) and this controller leaves CloneSets alone until the CRD is deleted: a cluster with
Kruise's own CRD is one whose Kruise is supplied by whoever installed it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from kubesemantics import label_selector
from kubesim.behaviour import cloneset_diffs
from kubesim.behaviour.cloneset_ranking import (
    Availability,
    choose_pods_to_delete,
    compare,
    rank_for_scale_in,
)
from kubesim.behaviour.owner_controller import OwnerController
from kubesim.behaviour.pod_ranking import is_ready
from kubesim.behaviour.pod_template import (
    availability,
    int_field,
    is_active,
    pod_from_template,
    template_hash,
)
from kubesim.behaviour.replicaset import (
    cluster_now,
    counts_for_replicaset,
    delete_pod,
    set_condition,
)
from kubesim.behaviour.shared_informers import Informers
from kubesim.interface import (
    CLONESETS,
    CONTROLLERREVISIONS,
    GVR,
    PODS,
    ApiError,
    Cluster,
    JsonObject,
)

log = logging.getLogger(__name__)

API_VERSION = "apps.kruise.io/v1alpha1"
KIND = "CloneSet"
REVISION_LABEL = "controller-revision-hash"
TEMPLATE_HASH_LABEL = "pod-template-hash"
INSTANCE_ID_LABEL = "apps.kruise.io/cloneset-instance-id"
SPECIFIED_DELETE_LABEL = "apps.kruise.io/specified-delete"
REVISION_HASH_LABEL = "controller.kubernetes.io/hash"
CUSTOM_RESOURCE_DEFINITIONS = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")
CRD_NAME = "clonesets.apps.kruise.io"
_ID_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_ID_LENGTH = 5


def revision_of(pod: JsonObject) -> str:
    return str((pod["metadata"].get("labels") or {}).get(REVISION_LABEL) or "")


def _with_kind(cs: JsonObject) -> JsonObject:
    return {**cs, "apiVersion": API_VERSION, "kind": KIND}


class CloneSetController(OwnerController):
    def __init__(self, cluster: Cluster, informers: Informers, *, events: bool = True) -> None:
        super().__init__(cluster, informers, name="cloneset", workers=2, events=events)
        informers.clonesets.add_handler(self.enqueue)
        informers.pods.add_handler(self.enqueue_owner(KIND, when=counts_for_replicaset))

    # -- revisions ------------------------------------------------------------------------------

    def _revisions(self, cs: JsonObject) -> list[JsonObject]:
        owned = self.informers.revisions.by_index("owner", cs["metadata"]["uid"])
        return sorted(owned, key=lambda r: int_field(r.get("revision"), 0))

    async def _update_revision(self, cs: JsonObject, revisions: list[JsonObject]) -> JsonObject:
        """The revision of the current template: the latest if equal, an older equal one moved
        to the front (a rollback), or a new one."""
        template = (cs.get("spec") or {}).get("template") or {}
        digest = template_hash(template)
        name = f"{cs['metadata']['name']}-{digest}"
        namespace = cs["metadata"].get("namespace")
        latest = int_field(revisions[-1].get("revision"), 0) if revisions else 0
        for revision in revisions:
            if revision["metadata"]["name"] != name:
                continue
            if int_field(revision.get("revision"), 0) == latest:
                return revision
            moved = await self.cluster.patch(
                CONTROLLERREVISIONS,
                name,
                {"revision": latest + 1},
                patch_type="merge",
                namespace=namespace,
            )
            self.informers.revisions.write_result(moved)
            return moved
        return await self.create_revision(
            _with_kind(cs),
            name=name,
            labels={**((template.get("metadata") or {}).get("labels") or {}),
                    REVISION_HASH_LABEL: digest},
            data={"spec": {"template": {**template, "$patch": "replace"}}},
            number=latest + 1,
        )

    @staticmethod
    def _template(revision: JsonObject) -> JsonObject:
        stored = ((revision.get("data") or {}).get("spec") or {}).get("template") or {}
        return {k: v for k, v in stored.items() if k != "$patch"}

    # -- reconcile ------------------------------------------------------------------------------

    async def _sync(self, key: str) -> None:
        cs = self.informers.clonesets.get(key)
        if cs is None or cs["metadata"].get("deletionTimestamp"):
            return
        if await self._served_by_crd():
            return
        spec = cs.get("spec") or {}
        try:
            selector = label_selector.from_label_selector(spec.get("selector"))
        except label_selector.SelectorError:
            return  # not retried, as upstream: the spec must change first
        pods = [
            p for p in self.informers.pods.by_index("owner", cs["metadata"]["uid"]) if is_active(p)
        ]
        revisions = self._revisions(cs)
        update = await self._update_revision(cs, revisions)
        revisions = self._revisions(cs)
        current = next(
            (
                r
                for r in revisions
                if r["metadata"]["name"] == (cs.get("status") or {}).get("currentRevision")
            ),
            update,
        )
        failure: tuple[str, ApiError] | None = None
        try:
            modified = await self._scale(cs, pods, current, update)
        except ApiError as exc:
            failure, modified = ("FailedScale", exc), True
        if not modified and not (spec.get("updateStrategy") or {}).get("paused"):
            try:
                await self._update(cs, pods, update)
            except ApiError as exc:
                failure = ("FailedUpdate", exc)
        await self._write_status(key, current, update, label_selector.to_string(selector), failure)
        if failure is not None:
            raise failure[1]  # retried with backoff by the queue
        await self._truncate_pods_to_delete(key, pods)
        await self._truncate_history(cs, pods, revisions, current, update)

    async def _served_by_crd(self) -> bool:
        """Whether a CRD of its own serves ``clonesets``: whoever installs Kruise's CRD brings
        their own controller (or none), and kubesim's steps back."""
        try:
            await self.cluster.get(CUSTOM_RESOURCE_DEFINITIONS, CRD_NAME)
        except ApiError as exc:
            if exc.code == 404:
                return False
            raise
        return True

    def _available(self, cs: JsonObject) -> Availability:
        """Ready for ``minReadySeconds``, now."""
        min_ready = int_field((cs.get("spec") or {}).get("minReadySeconds"), 0)
        now = cluster_now(self.cluster)

        def available(pod: Mapping[str, Any]) -> bool:
            return availability(dict(pod), min_ready, now)[0]

        return available

    def _specified(self, cs: JsonObject, pod: JsonObject) -> bool:
        names = ((cs.get("spec") or {}).get("scaleStrategy") or {}).get("podsToDelete") or ()
        labels = pod["metadata"].get("labels") or {}
        return labels.get(SPECIFIED_DELETE_LABEL) is not None or pod["metadata"]["name"] in names

    def _diffs(
        self, cs: JsonObject, pods: list[JsonObject], update: JsonObject
    ) -> cloneset_diffs.Diffs:
        spec = cs.get("spec") or {}
        strategy = spec.get("updateStrategy") or {}
        available = self._available(cs)
        return cloneset_diffs.calculate(
            cloneset_diffs.Strategy(
                replicas=max(int_field(spec.get("replicas"), 1), 0),
                partition=strategy.get("partition"),
                max_surge=strategy.get("maxSurge"),
                max_unavailable=strategy.get("maxUnavailable"),
                paused=bool(strategy.get("paused")),
                scale_max_unavailable=(spec.get("scaleStrategy") or {}).get("maxUnavailable"),
            ),
            [
                cloneset_diffs.PodFacts(
                    updated=revision_of(p) == update["metadata"]["name"],
                    available=available(p),
                    specified_delete=self._specified(cs, p),
                )
                for p in pods
            ],
        )

    async def _scale(
        self, cs: JsonObject, pods: list[JsonObject], current: JsonObject, update: JsonObject
    ) -> bool:
        """Kruise's Scale: create, else delete specified pods, else scale in; True if it did."""
        diffs = self._diffs(cs, pods, update)
        update_name = update["metadata"]["name"]
        if diffs.scale_up > diffs.scale_up_limit:
            self.events.warning(
                cs,
                KIND,
                "ScaleUpLimited",
                "scaleUp is limited because of scaleStrategy.maxUnavailable, limit: "
                f"{diffs.scale_up_limit}",
            )
        if diffs.scale_up > 0:
            at_current = min(diffs.scale_up_old_revision, diffs.scale_up_limit)
            if current["metadata"]["name"] == update_name:
                at_current = 0
            plan = [current] * at_current + [update] * (diffs.scale_up_limit - at_current)
            return await self._create(cs, plan)
        specified = [p for p in pods if self._specified(cs, p)]
        if specified:
            return await self._delete(cs, specified, diffs.delete_ready_limit)
        if diffs.scale_down > 0:
            available = self._available(cs)
            topology_keys = [
                str(c.get("topologyKey"))
                for c in (((cs.get("spec") or {}).get("template") or {}).get("spec") or {}).get(
                    "topologySpreadConstraints"
                )
                or ()
                if isinstance(c, dict) and c.get("topologyKey")
            ]
            node_labels = {
                str(node["metadata"]["name"]): node["metadata"].get("labels") or {}
                for node in self.informers.nodes.values()
            }

            def rank(group: Sequence[JsonObject]) -> list[JsonObject]:
                return rank_for_scale_in(
                    group, topology_keys=topology_keys, node_labels=node_labels, available=available
                )

            victims = choose_pods_to_delete(
                diffs.scale_down,
                diffs.scale_down_old_revision,
                [p for p in pods if revision_of(p) != update_name],
                [p for p in pods if revision_of(p) == update_name],
                rank,
            )
            return await self._delete(cs, victims, diffs.delete_ready_limit)
        return False

    async def _create(self, cs: JsonObject, plan: list[JsonObject]) -> bool:
        """Create a pod per revision in ``plan``, 1, 2, 4, ... at a time as Kruise does."""
        owned = self.informers.pods.by_index("owner", cs["metadata"]["uid"])
        # terminating pods keep their names for a while: their ids are taken too
        taken = {str((p["metadata"].get("labels") or {}).get(INSTANCE_ID_LABEL)) for p in owned}
        bodies = []
        for revision in plan:
            instance = _new_id(taken)
            name = revision["metadata"]["name"]
            pod = pod_from_template(
                self._template(revision),
                _with_kind(cs),
                name=f"{cs['metadata']['name']}-{instance}",
                extra_labels={
                    REVISION_LABEL: name,
                    TEMPLATE_HASH_LABEL: name.rsplit("-", 1)[-1],
                    INSTANCE_ID_LABEL: instance,
                },
            )
            bodies.append(pod)
        created = 0
        batch = 1
        while created < len(bodies):
            chunk = bodies[created : created + batch]
            results = await asyncio.gather(
                *(
                    self.cluster.create(PODS, p, namespace=cs["metadata"].get("namespace"))
                    for p in chunk
                ),
                return_exceptions=True,
            )
            failure: ApiError | None = None
            for body, result in zip(chunk, results, strict=True):
                if isinstance(result, ApiError):
                    failure = failure or result
                    self.events.warning(
                        cs,
                        KIND,
                        "FailedCreate",
                        f"failed to create pod: {result.message}, pod: {body['metadata']['name']}",
                    )
                elif isinstance(result, BaseException):
                    raise result
                else:
                    self.informers.pods.write_result(result)
                    self.events.normal(
                        cs,
                        KIND,
                        "SuccessfulCreate",
                        f"succeed to create pod {result['metadata']['name']}",
                    )
            if failure is not None:
                raise failure  # reported in the status by the reconcile
            created += len(chunk)
            batch *= 2
        return created > 0

    async def _delete(self, cs: JsonObject, pods: list[JsonObject], ready_limit: int) -> bool:
        """Delete ``pods``: not-ready ones always, ready ones while ``ready_limit`` lasts."""
        chosen = []
        for pod in pods:
            if not is_ready(pod):
                chosen.append(pod)
            elif ready_limit > 0:
                chosen.append(pod)
                ready_limit -= 1
        await asyncio.gather(*(delete_pod(self.cluster, self.informers, p) for p in chosen))
        for pod in chosen:
            self.events.normal(
                cs, KIND, "SuccessfulDelete", f"succeed to delete pod {pod['metadata']['name']}"
            )
        return bool(chosen)

    async def _update(self, cs: JsonObject, pods: list[JsonObject], update: JsonObject) -> None:
        """Mark the next pods to recreate at the update revision (Kruise's Update, ReCreate)."""
        diffs = self._diffs(cs, pods, update)
        if diffs.update <= 0:
            return
        name = update["metadata"]["name"]
        available = self._available(cs)
        waiting = sorted(
            (p for p in pods if revision_of(p) != name),
            key=functools.cmp_to_key(_update_order),
        )[: diffs.update]
        unavailable = sum(1 for p in pods if not available(p))
        target_unavailable = sum(1 for p in pods if not available(p) and revision_of(p) == name)
        chosen: list[JsonObject] = []
        for pod in waiting:
            if target_unavailable + len(chosen) >= diffs.update_max_unavailable:
                break
            if available(pod):
                if unavailable >= diffs.update_max_unavailable:
                    break
                unavailable += 1
            chosen.append(pod)
        for pod in chosen:
            if (pod["metadata"].get("labels") or {}).get(SPECIFIED_DELETE_LABEL) is not None:
                continue
            try:
                patched = await self.cluster.patch(
                    PODS,
                    pod["metadata"]["name"],
                    {"metadata": {"labels": {SPECIFIED_DELETE_LABEL: "true"}}},
                    patch_type="merge",
                    namespace=pod["metadata"].get("namespace"),
                )
            except ApiError as exc:
                if exc.code == 404:
                    continue
                raise
            self.informers.pods.write_result(patched)
            self.events.normal(
                cs,
                KIND,
                "SuccessfulUpdatePodReCreate",
                f"successfully patch pod {pod['metadata']['name']} specified-delete for "
                f"update(revision {name})",
            )

    # -- status and clean-up --------------------------------------------------------------------

    async def _write_status(
        self,
        key: str,
        current: JsonObject,
        update: JsonObject,
        selector: str,
        failure: tuple[str, ApiError] | None,
    ) -> None:
        """Kruise's status; a ``FailedScale`` or ``FailedUpdate`` condition only while the
        reconcile that writes it failed, as Kruise starts each status without conditions."""
        cs = self.informers.clonesets.get(key)
        if cs is None:
            return
        spec = cs.get("spec") or {}
        replicas = max(int_field(spec.get("replicas"), 1), 0)
        min_ready = int_field(spec.get("minReadySeconds"), 0)
        now = cluster_now(self.cluster)
        pods = [
            p for p in self.informers.pods.by_index("owner", cs["metadata"]["uid"]) if is_active(p)
        ]
        update_name = update["metadata"]["name"]
        counts = {k: 0 for k in ("ready", "available", "updated", "updated_ready", "updated_av")}
        soonest: float | None = None
        for pod in pods:
            ok, remaining = availability(pod, min_ready, now)
            updated = revision_of(pod) == update_name
            counts["ready"] += is_ready(pod)
            counts["available"] += ok
            counts["updated"] += updated
            counts["updated_ready"] += updated and is_ready(pod)
            counts["updated_av"] += updated and ok
            if not ok and remaining > 0:
                soonest = remaining if soonest is None else min(soonest, remaining)
        current_name = current["metadata"]["name"]
        if counts["updated"] == len(pods) == replicas:
            current_name = update_name
        partition = cloneset_diffs.partition_replicas(
            (spec.get("updateStrategy") or {}).get("partition"), replicas
        )
        old = cs.get("status") or {}
        conditions: list[JsonObject] = []
        if failure is not None:
            kept = [c for c in old.get("conditions") or () if c.get("type") == failure[0]]
            conditions = set_condition(
                kept,
                {
                    "type": failure[0],
                    "status": "True",
                    "lastTransitionTime": self.cluster.now(),
                    "message": failure[1].message,
                },
            )
        status: JsonObject = {
            **({"conditions": conditions} if conditions else {}),
            "observedGeneration": cs["metadata"].get("generation", 1),
            "replicas": len(pods),
            "readyReplicas": counts["ready"],
            "availableReplicas": counts["available"],
            "updatedReplicas": counts["updated"],
            "updatedReadyReplicas": counts["updated_ready"],
            "updatedAvailableReplicas": counts["updated_av"],
            "expectedUpdatedReplicas": replicas - partition,
            "updateRevision": update_name,
            "currentRevision": current_name,
            "collisionCount": 0,
            "labelSelector": selector,
        }
        if soonest is not None:
            self.queue.add_after(key, soonest + 0.01)
        if status == old:
            return
        await self.write(
            CLONESETS, self.informers.clonesets, {**cs, "status": status}, subresource="status"
        )

    async def _truncate_pods_to_delete(self, key: str, pods: list[JsonObject]) -> None:
        cs = self.informers.clonesets.get(key)
        if cs is None:
            return
        scale = (cs.get("spec") or {}).get("scaleStrategy") or {}
        names = scale.get("podsToDelete") or []
        present = {p["metadata"]["name"] for p in pods}
        kept = [n for n in names if n in present]
        if len(kept) == len(names):
            return
        trimmed = {k: v for k, v in scale.items() if k != "podsToDelete"}
        if kept:
            trimmed["podsToDelete"] = kept
        spec = {**cs["spec"], "scaleStrategy": trimmed}
        try:
            await self.write(CLONESETS, self.informers.clonesets, {**cs, "spec": spec})
        except ApiError as exc:
            if exc.code != 409:
                raise
            self.queue.add(key)

    async def _truncate_history(
        self,
        cs: JsonObject,
        pods: list[JsonObject],
        revisions: list[JsonObject],
        current: JsonObject,
        update: JsonObject,
    ) -> None:
        live = {revision_of(p) for p in pods} | {
            current["metadata"]["name"],
            update["metadata"]["name"],
        }
        history = [r for r in revisions if r["metadata"]["name"] not in live]
        limit = int_field((cs.get("spec") or {}).get("revisionHistoryLimit"), 10)
        for revision in history[: max(len(history) - limit, 0)]:
            try:
                await self.cluster.delete(
                    CONTROLLERREVISIONS,
                    revision["metadata"]["name"],
                    namespace=revision["metadata"].get("namespace"),
                )
            except ApiError as exc:
                if exc.code != 404:
                    raise
            self.informers.revisions.remove(revision)


def _update_order(a: JsonObject, b: JsonObject) -> int:
    """Upstream's ``ActivePods`` order, the one Kruise picks pods to update in."""
    return compare(a, b, by_cost=False)


def _new_id(taken: set[str]) -> str:
    """A fresh five-character instance id (Kruise's ``rand.String(5)`` alphabet)."""
    while True:
        candidate = "".join(secrets.choice(_ID_CHARS) for _ in range(_ID_LENGTH))
        if candidate not in taken:
            taken.add(candidate)
            return candidate
