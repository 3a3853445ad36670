"""The Deployment controller: ReplicaSets per pod template, rolled with RollingUpdate or Recreate.

Each distinct template gets a ReplicaSet named ``<deployment>-<pod-template-hash>`` with a
``deployment.kubernetes.io/revision`` one past the highest so far. A rolling update steps the
new ReplicaSet up within ``maxSurge`` and the old ones down within ``maxUnavailable`` (old
unhealthy pods first, then oldest ReplicaSets first), re-evaluated whenever a ReplicaSet's
status changes. Resizing mid-rollout is shared proportionally. ``paused`` stops the rollout but
not scaling. Status carries the counts and the Available and Progressing conditions that
``kubectl rollout status`` reads. Old ReplicaSets beyond ``revisionHistoryLimit`` are deleted.
"""

from __future__ import annotations

import logging
from typing import Any

from kubesim.behaviour.informer import controller_ref, object_key
from kubesim.behaviour.label_match import selector_matches
from kubesim.behaviour.owner_controller import OwnerController
from kubesim.behaviour.pod_template import int_field, is_active, owner_reference, template_hash
from kubesim.behaviour.replicaset import set_condition
from kubesim.behaviour.rollout import (
    ReplicaSetSize,
    new_replicaset_target,
    old_scale_down_budget,
    proportional_targets,
    resolve_fenceposts,
)
from kubesim.behaviour.scaled_value import ScaledValueError
from kubesim.behaviour.shared_informers import Informers
from kubesim.behaviour.timestamps import parse_time
from kubesim.interface import DEPLOYMENTS, REPLICASETS, ApiError, Cluster, JsonObject

log = logging.getLogger(__name__)

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"


def _replicas(obj: JsonObject) -> int:
    return max(int_field((obj.get("spec") or {}).get("replicas"), 1), 0)


def _status(obj: JsonObject, field: str) -> int:
    return int_field((obj.get("status") or {}).get(field), 0)


def _revision(rs: JsonObject) -> int:
    return int_field((rs["metadata"].get("annotations") or {}).get(REVISION), 0)


def _created(rs: JsonObject) -> str:
    return str(rs["metadata"].get("creationTimestamp") or "")


class DeploymentController(OwnerController):
    def __init__(self, cluster: Cluster, informers: Informers, *, events: bool = True) -> None:
        super().__init__(cluster, informers, name="deployment", workers=2, events=events)
        self._on_replicaset = self.enqueue_owner("Deployment")
        informers.deployments.add_handler(self.enqueue)
        informers.replicasets.add_handler(self._on_replicaset)
        informers.pods.add_handler(self._on_pod)

    def _on_pod(self, old: JsonObject | None, new: JsonObject | None) -> None:
        # Recreate waits for old pods to go; only disappearances matter here.
        if new is not None or old is None:
            return
        ref = controller_ref(old)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return
        namespace = old["metadata"].get("namespace")
        rs = self.informers.replicasets.get(f"{namespace}/{ref.get('name')}")
        if rs is not None:
            self._on_replicaset(None, rs)

    # -- reconcile -------------------------------------------------------------------------

    async def _sync(self, key: str) -> None:
        d = self.informers.deployments.get(key)
        if d is None or d["metadata"].get("deletionTimestamp"):
            return
        spec = d.get("spec") or {}
        template = spec.get("template") or {}
        selector = spec.get("selector")
        labels = (template.get("metadata") or {}).get("labels") or {}
        if not selector or not selector_matches(selector, labels):
            await self._write_status(
                d, [], None, failure=("InvalidSelector", "selector does not match template labels")
            )
            return
        strategy = spec.get("strategy") or {}
        rolling = strategy.get("rollingUpdate") or {}
        desired = _replicas(d)
        try:
            surge, unavailable = (
                resolve_fenceposts(
                    rolling.get("maxSurge", "25%"), rolling.get("maxUnavailable", "25%"), desired
                )
                if strategy.get("type", "RollingUpdate") == "RollingUpdate"
                else (0, desired)
            )
        except ScaledValueError as exc:
            await self._write_status(d, [], None, failure=("InvalidStrategy", str(exc)))
            return
        owned = [
            rs
            for rs in self.informers.replicasets.by_index("owner", d["metadata"]["uid"])
            if not rs["metadata"].get("deletionTimestamp")
        ]
        current_hash = template_hash(
            template, int_field((d.get("status") or {}).get("collisionCount"), 0)
        )
        new_rs = next(
            (
                rs
                for rs in owned
                if (rs["metadata"].get("labels") or {}).get(HASH_LABEL) == current_hash
            ),
            None,
        )
        old_rss = sorted((rs for rs in owned if rs is not new_rs), key=_created)
        if spec.get("paused") or self._is_scaling_event(d, new_rs, old_rss):
            await self._scale(d, new_rs, old_rss, surge)
            await self._write_status(d, owned, new_rs)
            return
        if new_rs is None:
            new_rs = await self._create_new_rs(d, current_hash, old_rss, surge)
            owned.append(new_rs)
        if new_rs is not None and _revision(new_rs) <= max(
            (_revision(rs) for rs in old_rss), default=0
        ):
            new_rs = await self._bump_revision(d, new_rs, old_rss, surge)
        await self._sync_deployment_revision(d, new_rs)
        if strategy.get("type") == "Recreate":
            await self._recreate(d, new_rs, old_rss)
        else:
            await self._rolling(d, new_rs, old_rss, surge, unavailable)
        owned = [
            rs
            for rs in self.informers.replicasets.by_index("owner", d["metadata"]["uid"])
            if not rs["metadata"].get("deletionTimestamp")
        ]
        new_rs = next(
            (rs for rs in owned if rs["metadata"]["uid"] == new_rs["metadata"]["uid"]), new_rs
        )
        if self._complete(d, new_rs, owned):
            await self._cleanup(d, [rs for rs in owned if rs is not new_rs])
        await self._write_status(self.informers.deployments.get(key) or d, owned, new_rs)

    def _is_scaling_event(
        self, d: JsonObject, new_rs: JsonObject | None, old_rss: list[JsonObject]
    ) -> bool:
        for rs in [*([new_rs] if new_rs else []), *old_rss]:
            if _replicas(rs) == 0:
                continue
            annotated = (rs["metadata"].get("annotations") or {}).get(DESIRED_REPLICAS)
            if annotated is not None and int_field(annotated, -1) != _replicas(d):
                return True
        return False

    async def _scale(
        self, d: JsonObject, new_rs: JsonObject | None, old_rss: list[JsonObject], surge: int
    ) -> None:
        desired = _replicas(d)
        every = [*([new_rs] if new_rs else []), *old_rss]
        active = [rs for rs in every if _replicas(rs) > 0]
        if len(active) <= 1:
            target = active[0] if active else (new_rs or (old_rss[-1] if old_rss else None))
            if target is not None:
                await self._scale_rs(d, target, desired, surge)
            return
        if (
            new_rs is not None
            and _replicas(new_rs) == desired
            and _status(new_rs, "availableReplicas") >= desired
        ):
            for rs in old_rss:
                await self._scale_rs(d, rs, 0, surge)
            return
        targets = proportional_targets(
            [
                ReplicaSetSize(
                    rs["metadata"]["name"],
                    _replicas(rs),
                    int_field((rs["metadata"].get("annotations") or {}).get(MAX_REPLICAS), 0)
                    or None,
                    _created(rs),
                )
                for rs in every
            ],
            desired=desired,
            surge=surge,
            status_replicas=_status(d, "replicas"),
        )
        for rs in every:
            await self._scale_rs(d, rs, targets[rs["metadata"]["name"]], surge)

    async def _scale_rs(
        self, d: JsonObject, rs: JsonObject, replicas: int, surge: int
    ) -> JsonObject:
        annotations = dict(rs["metadata"].get("annotations") or {})
        wanted = {DESIRED_REPLICAS: str(_replicas(d)), MAX_REPLICAS: str(_replicas(d) + surge)}
        if _replicas(rs) == replicas and all(annotations.get(k) == v for k, v in wanted.items()):
            return rs
        annotations.update(wanted)
        body = {
            **rs,
            "metadata": {**rs["metadata"], "annotations": annotations},
            "spec": {**rs["spec"], "replicas": replicas},
        }
        updated = await self.write(REPLICASETS, self.informers.replicasets, body)
        before, after = _replicas(rs), replicas
        if before != after:
            self.events.normal(
                d,
                "Deployment",
                "ScalingReplicaSet",
                f"Scaled {'up' if after > before else 'down'} replica set "
                f"{rs['metadata']['name']} from {before} to {after}",
            )
        return updated

    async def _create_new_rs(
        self, d: JsonObject, pod_hash: str, old_rss: list[JsonObject], surge: int
    ) -> JsonObject:
        spec = d["spec"]
        template = spec.get("template") or {}
        desired = _replicas(d)
        if (spec.get("strategy") or {}).get("type") == "Recreate":
            replicas = 0
        else:
            replicas = new_replicaset_target(
                desired=desired,
                surge=surge,
                total_current=sum(_replicas(rs) for rs in old_rss),
                new_current=0,
            )
        tmeta = dict(template.get("metadata") or {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), HASH_LABEL: pod_hash}
        selector = dict(spec["selector"])
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: pod_hash}
        revision = max((_revision(rs) for rs in old_rss), default=0) + 1
        annotations = {
            k: v
            for k, v in (d["metadata"].get("annotations") or {}).items()
            if k not in ("kubectl.kubernetes.io/last-applied-configuration", REVISION)
        }
        annotations.update(
            {
                REVISION: str(revision),
                DESIRED_REPLICAS: str(desired),
                MAX_REPLICAS: str(desired + surge),
            }
        )
        rs: JsonObject = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{d['metadata']['name']}-{pod_hash}",
                "namespace": d["metadata"].get("namespace"),
                "labels": dict(tmeta["labels"]),
                "annotations": annotations,
                "ownerReferences": [
                    owner_reference({**d, "apiVersion": "apps/v1", "kind": "Deployment"})
                ],
            },
            "spec": {
                "replicas": replicas,
                "minReadySeconds": int_field(spec.get("minReadySeconds"), 0),
                "selector": selector,
                "template": {**template, "metadata": tmeta},
            },
        }
        try:
            created = await self.cluster.create(
                REPLICASETS, rs, namespace=d["metadata"].get("namespace")
            )
        except ApiError as exc:
            if exc.code != 409:
                raise
            existing = await self.cluster.get(
                REPLICASETS, rs["metadata"]["name"], namespace=d["metadata"].get("namespace")
            )
            ref = controller_ref(existing)
            if ref is None or ref.get("uid") != d["metadata"]["uid"]:
                await self._bump_collision(d)
                raise
            created = existing
        self.informers.replicasets.write_result(created)
        if replicas:
            self.events.normal(
                d,
                "Deployment",
                "ScalingReplicaSet",
                f"Scaled up replica set {created['metadata']['name']} from 0 to {replicas}",
            )
        return created

    async def _bump_collision(self, d: JsonObject) -> None:
        status = dict(d.get("status") or {})
        status["collisionCount"] = int_field(status.get("collisionCount"), 0) + 1
        await self.write(
            DEPLOYMENTS, self.informers.deployments, {**d, "status": status}, subresource="status"
        )

    async def _bump_revision(
        self, d: JsonObject, rs: JsonObject, old_rss: list[JsonObject], surge: int
    ) -> JsonObject:
        """A rollback to an older template makes its ReplicaSet the newest revision again."""
        annotations = dict(rs["metadata"].get("annotations") or {})
        annotations[REVISION] = str(max((_revision(o) for o in old_rss), default=0) + 1)
        body = {**rs, "metadata": {**rs["metadata"], "annotations": annotations}}
        return await self.write(REPLICASETS, self.informers.replicasets, body)

    async def _sync_deployment_revision(self, d: JsonObject, new_rs: JsonObject) -> None:
        revision = str(_revision(new_rs))
        annotations = dict(d["metadata"].get("annotations") or {})
        if annotations.get(REVISION) == revision:
            return
        annotations[REVISION] = revision
        await self.write(
            DEPLOYMENTS,
            self.informers.deployments,
            {**d, "metadata": {**d["metadata"], "annotations": annotations}},
        )

    async def _recreate(self, d: JsonObject, new_rs: JsonObject, old_rss: list[JsonObject]) -> None:
        scaled = False
        for rs in old_rss:
            if _replicas(rs) != 0:
                await self._scale_rs(d, rs, 0, 0)
                scaled = True
        if scaled:
            return
        for rs in old_rss:
            if any(
                is_active(p) or p["metadata"].get("deletionTimestamp")
                for p in self.informers.pods.by_index("owner", rs["metadata"]["uid"])
            ):
                return
        await self._scale_rs(d, new_rs, _replicas(d), 0)

    async def _rolling(
        self,
        d: JsonObject,
        new_rs: JsonObject,
        old_rss: list[JsonObject],
        surge: int,
        unavailable: int,
    ) -> None:
        desired = _replicas(d)
        total = _replicas(new_rs) + sum(_replicas(rs) for rs in old_rss)
        if _replicas(new_rs) > desired:
            await self._scale_rs(d, new_rs, desired, surge)
            return
        # Pods an old ReplicaSet has been told to drop but still runs count against the surge
        # too, so the surge holds for pods, not only for ReplicaSet specs.
        running = sum(
            1
            for rs in (new_rs, *old_rss)
            for p in self.informers.pods.by_index("owner", rs["metadata"]["uid"])
            if is_active(p)
        )
        target = new_replicaset_target(
            desired=desired,
            surge=surge,
            total_current=max(total, running),
            new_current=_replicas(new_rs),
        )
        if target != _replicas(new_rs):
            await self._scale_rs(d, new_rs, target, surge)
            return
        unavailable = min(unavailable, desired)
        budget = old_scale_down_budget(
            desired=desired,
            unavailable=unavailable,
            total_current=total,
            new_replicas=_replicas(new_rs),
            new_available=_status(new_rs, "availableReplicas"),
        )
        if budget <= 0:
            await self._scale_rs(d, new_rs, _replicas(new_rs), surge)
            return
        # old pods that are not available go first: removing them costs no availability
        live_old = [rs for rs in old_rss if _replicas(rs) > 0]
        cleaned = 0
        for rs in live_old:
            if cleaned >= budget:
                break
            unhealthy = _replicas(rs) - _status(rs, "availableReplicas")
            if unhealthy <= 0:
                continue
            step = min(budget - cleaned, unhealthy)
            rs = await self._scale_rs(d, rs, _replicas(rs) - step, surge)
            cleaned += step
        if cleaned:
            return
        min_available = desired - unavailable
        available = _status(new_rs, "availableReplicas") + sum(
            _status(rs, "availableReplicas") for rs in old_rss
        )
        remaining = min(available - min_available, budget)
        for rs in live_old:
            if remaining <= 0:
                break
            step = min(_replicas(rs), remaining)
            await self._scale_rs(d, rs, _replicas(rs) - step, surge)
            remaining -= step
        await self._scale_rs(d, new_rs, _replicas(new_rs), surge)

    def _complete(self, d: JsonObject, new_rs: JsonObject, owned: list[JsonObject]) -> bool:
        desired = _replicas(d)
        return (
            _replicas(new_rs) == desired
            and _status(new_rs, "replicas") == desired
            and _status(new_rs, "availableReplicas") >= desired
            and all(_replicas(rs) == 0 for rs in owned if rs is not new_rs)
        )

    async def _cleanup(self, d: JsonObject, old_rss: list[JsonObject]) -> None:
        limit = int_field((d.get("spec") or {}).get("revisionHistoryLimit"), 10)
        idle = sorted(
            (rs for rs in old_rss if _replicas(rs) == 0 and _status(rs, "replicas") == 0),
            key=_revision,
        )
        for rs in idle[: max(len(idle) - limit, 0)]:
            try:
                await self.cluster.delete(
                    REPLICASETS, rs["metadata"]["name"], namespace=rs["metadata"].get("namespace")
                )
            except ApiError as exc:
                if exc.code != 404:
                    raise

    def _progressing(
        self,
        d: JsonObject,
        new_rs: JsonObject,
        owned: list[JsonObject],
        old: dict[str, Any],
        status: dict[str, Any],
        conditions: list[JsonObject],
        now: str,
    ) -> list[JsonObject]:
        """The Progressing condition, timing out after ``progressDeadlineSeconds`` without progress.

        Progress is what upstream counts: more updated, ready or available pods, fewer old pods,
        or a new ReplicaSet; each refreshes ``lastUpdateTime``, from which the deadline runs.
        """
        spec = d.get("spec") or {}
        name = new_rs["metadata"]["name"]
        existing = next((c for c in conditions if c.get("type") == "Progressing"), None)
        old_pods = int_field(old.get("replicas"), 0) - int_field(old.get("updatedReplicas"), 0)
        new_old_pods = status["replicas"] - status["updatedReplicas"]
        progressed = (
            existing is None
            or f'"{name}"' not in str(existing.get("message"))
            or status["updatedReplicas"] > int_field(old.get("updatedReplicas"), 0)
            or new_old_pods < old_pods
            or status["readyReplicas"] > int_field(old.get("readyReplicas"), 0)
            or status["availableReplicas"] > int_field(old.get("availableReplicas"), 0)
        )
        condition: JsonObject
        if spec.get("paused"):
            condition = {
                "status": "Unknown",
                "reason": "DeploymentPaused",
                "message": "Deployment is paused",
            }
        elif self._complete(d, new_rs, owned):
            condition = {
                "status": "True",
                "reason": "NewReplicaSetAvailable",
                "message": f'ReplicaSet "{name}" has successfully progressed.',
            }
        elif progressed or existing is None or existing.get("reason") == "NewReplicaSetAvailable":
            condition = {
                "status": "True",
                "reason": "ReplicaSetUpdated",
                "message": f'ReplicaSet "{name}" is progressing.',
                "lastUpdateTime": now,
            }
        else:
            deadline = int_field(spec.get("progressDeadlineSeconds"), 600)
            waited = _seconds_since(existing.get("lastUpdateTime"), now)
            if existing.get("reason") == "ProgressDeadlineExceeded" or waited >= deadline:
                condition = {
                    "status": "False",
                    "reason": "ProgressDeadlineExceeded",
                    "message": f'ReplicaSet "{name}" has timed out progressing.',
                }
            else:
                condition = {k: v for k, v in existing.items() if k != "type"}
                self.queue.add_after(object_key(d), deadline - waited + 0.05)
        condition = {
            "type": "Progressing",
            "lastUpdateTime": now,
            "lastTransitionTime": now,
            **condition,
        }
        return set_condition(conditions, condition, touch=progressed)

    async def _write_status(
        self,
        d: JsonObject,
        owned: list[JsonObject],
        new_rs: JsonObject | None,
        *,
        failure: tuple[str, str] | None = None,
    ) -> None:
        now = self.cluster.now()
        desired = _replicas(d)
        spec = d.get("spec") or {}
        strategy = spec.get("strategy") or {}
        rolling = strategy.get("rollingUpdate") or {}
        try:
            _, unavailable = (
                resolve_fenceposts(
                    rolling.get("maxSurge", "25%"), rolling.get("maxUnavailable", "25%"), desired
                )
                if strategy.get("type", "RollingUpdate") == "RollingUpdate"
                else (0, desired)
            )
        except ScaledValueError:
            unavailable = desired
        old = d.get("status") or {}
        available = sum(_status(rs, "availableReplicas") for rs in owned)
        total_spec = sum(_replicas(rs) for rs in owned)
        status: dict[str, Any] = {
            "observedGeneration": d["metadata"].get("generation", 1),
            "replicas": sum(_status(rs, "replicas") for rs in owned),
            "updatedReplicas": _status(new_rs, "replicas") if new_rs else 0,
            "readyReplicas": sum(_status(rs, "readyReplicas") for rs in owned),
            "availableReplicas": available,
            "unavailableReplicas": max(total_spec - available, 0),
        }
        if old.get("collisionCount"):
            status["collisionCount"] = old["collisionCount"]
        conditions = list(old.get("conditions") or [])
        if failure is not None:
            conditions = set_condition(
                conditions,
                {
                    "type": "ReplicaFailure",
                    "status": "True",
                    "reason": failure[0],
                    "message": failure[1],
                    "lastUpdateTime": now,
                    "lastTransitionTime": now,
                },
            )
        else:
            conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
            min_available = desired - min(unavailable, desired)
            ok = available >= min_available
            conditions = set_condition(
                conditions,
                {
                    "type": "Available",
                    "status": "True" if ok else "False",
                    "reason": "MinimumReplicasAvailable" if ok else "MinimumReplicasUnavailable",
                    "message": "Deployment has minimum availability."
                    if ok
                    else "Deployment does not have minimum availability.",
                    "lastUpdateTime": now,
                    "lastTransitionTime": now,
                },
            )
            if new_rs is not None:
                conditions = self._progressing(d, new_rs, owned, old, status, conditions, now)
        status["conditions"] = conditions
        if _comparable(status) == _comparable(old):
            return
        await self.write(
            DEPLOYMENTS, self.informers.deployments, {**d, "status": status}, subresource="status"
        )


def _seconds_since(stamp: str | None, now: str) -> float:
    then, current = parse_time(stamp), parse_time(now)
    if then is None or current is None:
        return 0.0
    return (current - then).total_seconds()


def _comparable(status: dict[str, Any]) -> dict[str, Any]:
    """Status without timestamps and zeroes, to skip writes that change nothing."""
    out = {k: v for k, v in status.items() if v not in (0, None, []) and k != "conditions"}
    out["conditions"] = sorted(
        (
            (c.get("type"), c.get("status"), c.get("reason"), c.get("message"))
            for c in status.get("conditions") or ()
        ),
        key=str,
    )
    return out
