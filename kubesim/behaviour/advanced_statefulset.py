"""The Advanced StatefulSet controller: Kruise's ``apps.kruise.io`` StatefulSet on kubesim's pods.

It is the apps/v1 controller's sibling and shares what the two kinds have in common: pods named
``<set>-<ordinal>`` with the identity labels and the set as controlling owner, templates kept
as ControllerRevisions, the events. What differs is the round, decided without I/O by
:mod:`kubesim.behaviour.advanced_statefulset_plan` from a snapshot of the pods (reserved
ordinals, the scale-up budget of ``scaleStrategy.maxUnavailable``, rolling updates of several
pods at once, ``paused``, ``minReadySeconds``) and then carried out here. New pods also carry
Kruise's lifecycle label (``lifecycle.apps.kruise.io/state: Normal``) and its timestamp.

Readiness held back by ``minReadySeconds`` is rechecked when it is due, on the cluster's clock.
Revisions beyond ``revisionHistoryLimit`` that neither revision nor any pod uses are deleted,
oldest first, as Kruise truncates its history.
"""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any

from kubesemantics import label_selector
from kubesim.behaviour.advanced_statefulset_plan import (
    Member,
    Shape,
    plan_round,
    replica_status,
    shape_of,
    stale_revisions,
)
from kubesim.behaviour.informer import Informer, object_key
from kubesim.behaviour.pod_ranking import is_ready
from kubesim.behaviour.pod_template import availability, int_field
from kubesim.behaviour.replicaset import cluster_now
from kubesim.behaviour.statefulset import REVISION_LABEL, StatefulSetController, ordinal
from kubesim.interface import (
    ADVANCED_STATEFULSETS,
    CONTROLLERREVISIONS,
    GVR,
    ApiError,
    JsonObject,
)

LIFECYCLE_STATE = "lifecycle.apps.kruise.io/state"
LIFECYCLE_TIMESTAMP = "lifecycle.apps.kruise.io/timestamp"


class AdvancedStatefulSetController(StatefulSetController):
    api_version = "apps.kruise.io/v1beta1"
    resource: GVR = ADVANCED_STATEFULSETS

    def _own_informer(self) -> Informer:
        return self.informers.advanced_statefulsets

    def _stamp(self, pod: JsonObject) -> None:
        pod["metadata"]["labels"][LIFECYCLE_STATE] = "Normal"
        pod["metadata"].setdefault("annotations", {})[LIFECYCLE_TIMESTAMP] = self.cluster.now()

    async def _sync(self, key: str) -> None:
        sts = self.sets.get(key)
        if sts is None or sts["metadata"].get("deletionTimestamp"):
            return
        spec = sts.get("spec") or {}
        update_revision, _ = await self._revision(sts, spec.get("template") or {})
        current_revision = (sts.get("status") or {}).get("currentRevision") or update_revision
        if self._template_of(sts, current_revision) is None:
            current_revision = update_revision
        shape = shape_of(spec, current_revision, update_revision)
        min_ready = _min_ready_seconds(spec)
        pods = self._pods(sts)
        plan = plan_round(shape, self._members(pods, min_ready, cluster_now(self.cluster))[0])
        for index in plan.delete:
            await self._delete(sts, pods[index])
        for index, revision in plan.create:
            await self._create_pod(sts, index, revision)
        members, wait = self._members(self._pods(sts), min_ready, cluster_now(self.cluster))
        if wait is not None:
            self.queue.add_after(key, wait)
        await self._record(sts, shape, members)
        await self._truncate_history(sts, spec, {current_revision, update_revision}, members)

    def _pods(self, sts: JsonObject) -> dict[int, JsonObject]:
        """The set's pods by ordinal (pods it controls whose names are not its ordinals are
        not its members, as upstream ignores them)."""
        out: dict[int, JsonObject] = {}
        for pod in self.informers.pods.by_index("owner", sts["metadata"]["uid"]):
            index = ordinal(pod["metadata"]["name"], sts["metadata"]["name"])
            if index is not None:
                out[index] = pod
        return out

    @staticmethod
    def _members(
        pods: dict[int, JsonObject], min_ready: int, now: datetime
    ) -> tuple[dict[int, Member], float | None]:
        """The round's view of each pod, and the soonest a Ready pod turns available."""
        members: dict[int, Member] = {}
        wait: float | None = None
        for index, pod in pods.items():
            phase = str((pod.get("status") or {}).get("phase") or "Pending")
            ready = phase == "Running" and is_ready(pod)
            available, remaining = availability(pod, min_ready, now)
            if ready and not available:
                wait = remaining if wait is None else min(wait, remaining)
            members[index] = Member(
                ordinal=index,
                revision=(pod["metadata"].get("labels") or {}).get(REVISION_LABEL) or "",
                phase=phase,
                ready=ready,
                available=ready and available,
                terminating=bool(pod["metadata"].get("deletionTimestamp")),
            )
        return members, wait

    async def _truncate_history(
        self, sts: JsonObject, spec: JsonObject, revisions: set[str], members: dict[int, Member]
    ) -> None:
        """Delete the revisions beyond ``revisionHistoryLimit`` nothing uses any more."""
        owned = {
            r["metadata"]["name"]: int_field(r.get("revision"), 0)
            for r in self.informers.revisions.by_index("owner", sts["metadata"]["uid"])
        }
        live = revisions | {m.revision for m in members.values()}
        limit = int_field(spec.get("revisionHistoryLimit"), 10)
        namespace = sts["metadata"].get("namespace")
        for name in stale_revisions(owned, live, limit):
            try:
                gone = await self.cluster.delete(CONTROLLERREVISIONS, name, namespace=namespace)
            except ApiError as exc:
                if exc.code != 404:
                    raise
                continue
            self.informers.revisions.remove(gone)

    async def _record(self, sts: JsonObject, shape: Shape, members: dict[int, Member]) -> None:
        """Write Kruise's status when it changed (the whole status, as Kruise writes it)."""
        fresh = self.sets.get(object_key(sts)) or sts
        status: dict[str, Any] = {
            "observedGeneration": fresh["metadata"].get("generation", 1),
            **replica_status(list(members.values()), shape),
            "collisionCount": 0,
        }
        selector = (fresh.get("spec") or {}).get("selector")
        with contextlib.suppress(label_selector.SelectorError):
            status["labelSelector"] = label_selector.to_string(
                label_selector.from_label_selector(selector)
            )
        if status == (fresh.get("status") or {}):
            return
        await self.write(
            self.resource, self.sets, {**fresh, "status": status}, subresource="status"
        )


def _min_ready_seconds(spec: JsonObject) -> int:
    rolling = (spec.get("updateStrategy") or {}).get("rollingUpdate") or {}
    return max(int_field(rolling.get("minReadySeconds"), 0), 0)
