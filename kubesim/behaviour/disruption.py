"""The disruption controller: keeps every PodDisruptionBudget's status true to the pods.

The Eviction subresource refuses when ``status.disruptionsAllowed`` is below one, so this status
must follow pod readiness closely: each pod change enqueues only the budgets in its namespace
whose selector matches the pod (before or after the change). Expected pods come from the scale
of the pods' controllers (a Deployment through its ReplicaSet, a ReplicaSet, a StatefulSet of
apps/v1 or Kruise's Advanced StatefulSet, a CloneSet).
Entries in ``disruptedPods`` (evictions admitted but not yet observed) are kept until the pod is
gone or two minutes pass, and those pods do not count as healthy.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from kubesim.behaviour.disruption_budget import (
    DISRUPTED_POD_TIMEOUT,
    budget_status,
    count_healthy,
    live_disrupted_pods,
    needs_controller_scale,
)
from kubesim.behaviour.informer import controller_ref, object_key
from kubesim.behaviour.label_match import selector_matches
from kubesim.behaviour.pod_template import int_field
from kubesim.behaviour.replicaset import cluster_now, set_condition
from kubesim.behaviour.scaled_value import ScaledValueError
from kubesim.behaviour.shared_informers import Informers
from kubesim.behaviour.timestamps import parse_time
from kubesim.behaviour.workqueue import WorkQueue
from kubesim.interface import PODDISRUPTIONBUDGETS, Cluster, JsonObject

log = logging.getLogger(__name__)


class NoController(Exception):
    """A selected pod whose controller's scale cannot be found."""


class DisruptionController:
    def __init__(self, cluster: Cluster, informers: Informers) -> None:
        self.cluster = cluster
        self.informers = informers
        self.queue = WorkQueue("disruption", self._sync, workers=1)
        informers.budgets.add_handler(self._on_budget)
        informers.pods.add_handler(self._on_pod)
        for workload in (
            informers.deployments,
            informers.replicasets,
            informers.statefulsets,
            informers.clonesets,
            informers.advanced_statefulsets,
        ):
            workload.add_handler(self._on_workload)

    def start(self) -> None:
        self.queue.start()

    async def stop(self) -> None:
        await self.queue.stop()

    def _on_budget(self, old: JsonObject | None, new: JsonObject | None) -> None:
        if new is not None:
            self.queue.add(object_key(new))

    def _on_pod(self, old: JsonObject | None, new: JsonObject | None) -> None:
        pod = new if new is not None else old
        if pod is None:
            return
        namespace = pod["metadata"].get("namespace") or ""
        for budget in self.informers.budgets.by_index("namespace", namespace):
            selector = (budget.get("spec") or {}).get("selector")
            if any(
                p is not None and selector_matches(selector, p["metadata"].get("labels"))
                for p in (old, new)
            ):
                self.queue.add(object_key(budget))

    def _on_workload(self, old: JsonObject | None, new: JsonObject | None) -> None:
        if (
            old is not None
            and new is not None
            and (old.get("spec") or {}).get("replicas") == (new.get("spec") or {}).get("replicas")
        ):
            return
        obj = new if new is not None else old
        if obj is None:
            return
        for key in self.informers.budgets.index_keys(
            "namespace", obj["metadata"].get("namespace") or ""
        ):
            self.queue.add(key)

    def _scale_of(self, namespace: str, ref: JsonObject) -> tuple[str, int]:
        kind, name, uid = ref.get("kind"), ref.get("name"), ref.get("uid")
        if kind == "ReplicaSet":
            rs = self.informers.replicasets.get(f"{namespace}/{name}")
            if rs is None or rs["metadata"].get("uid") != uid:
                raise NoController(f"replicaset {name} not found")
            owner = controller_ref(rs)
            if owner is not None and owner.get("kind") == "Deployment":
                d = self.informers.deployments.get(f"{namespace}/{owner.get('name')}")
                if d is None or d["metadata"].get("uid") != owner.get("uid"):
                    raise NoController(f"deployment {owner.get('name')} not found")
                return str(owner.get("uid")), int_field(d["spec"].get("replicas"), 1)
            return str(uid), int_field(rs["spec"].get("replicas"), 1)
        if kind == "StatefulSet":
            # apps/v1 or Kruise's Advanced StatefulSet (apps.kruise.io), told by the group
            advanced = str(ref.get("apiVersion", "")).startswith("apps.kruise.io/")
            sets = self.informers.advanced_statefulsets if advanced else self.informers.statefulsets
            sts = sets.get(f"{namespace}/{name}")
            if sts is None or sts["metadata"].get("uid") != uid:
                raise NoController(f"statefulset {name} not found")
            return str(uid), int_field(sts["spec"].get("replicas"), 1)
        if kind == "CloneSet":
            clone = self.informers.clonesets.get(f"{namespace}/{name}")
            if clone is None or clone["metadata"].get("uid") != uid:
                raise NoController(f"cloneset {name} not found")
            return str(uid), int_field(clone["spec"].get("replicas"), 1)
        raise NoController(f"controller {kind} {name} has no known scale")

    async def _sync(self, key: str) -> None:
        budget = self.informers.budgets.get(key)
        if budget is None or budget["metadata"].get("deletionTimestamp"):
            return
        namespace = budget["metadata"].get("namespace") or ""
        spec = budget.get("spec") or {}
        selector = spec.get("selector")
        pods = [
            p
            for p in self.informers.pods.by_index("namespace", namespace)
            if selector_matches(selector, p["metadata"].get("labels"))
        ]
        now = cluster_now(self.cluster)
        old = budget.get("status") or {}
        disrupted = live_disrupted_pods(
            old.get("disruptedPods"), {p["metadata"]["name"]: p for p in pods}, now
        )
        healthy = count_healthy(pods, disrupted)
        failure: str | None = None
        scale = 0
        try:
            if needs_controller_scale(spec):
                scales: dict[str, int] = {}
                for pod in pods:
                    ref = controller_ref(pod)
                    if ref is None:
                        raise NoController(f"found no controller for pod {pod['metadata']['name']}")
                    uid, replicas = self._scale_of(namespace, ref)
                    scales[uid] = replicas
                scale = sum(scales.values())
            result = budget_status(
                spec, pod_count=len(pods), controller_scale=scale, current_healthy=healthy
            )
        except (NoController, ScaledValueError) as exc:
            failure = str(exc)
            result = None
        stamp = self.cluster.now()
        status: dict[str, Any] = {
            **old,
            "observedGeneration": budget["metadata"].get("generation", 1),
            "disruptedPods": disrupted or None,
        }
        if result is None:
            status.update(disruptionsAllowed=0)
            condition = {
                "type": "DisruptionAllowed",
                "status": "False",
                "reason": "SyncFailed",
                "message": failure or "",
                "lastTransitionTime": stamp,
            }
        else:
            status.update(
                disruptionsAllowed=result.disruptions_allowed,
                currentHealthy=result.current_healthy,
                desiredHealthy=result.desired_healthy,
                expectedPods=result.expected_pods,
            )
            allowed = result.disruptions_allowed > 0
            condition = {
                "type": "DisruptionAllowed",
                "status": "True" if allowed else "False",
                "reason": "SufficientPods" if allowed else "InsufficientPods",
                "message": "",
                "lastTransitionTime": stamp,
            }
        status["conditions"] = set_condition(list(old.get("conditions") or []), condition)
        if status["disruptedPods"] is None:
            del status["disruptedPods"]
        expiries = [t for t in (parse_time(s) for s in disrupted.values()) if t is not None]
        if expiries:
            wait = min(expiries) + DISRUPTED_POD_TIMEOUT - now + timedelta(milliseconds=10)
            self.queue.add_after(key, max(wait.total_seconds(), 0.01))
        if _same(status, old):
            return
        updated = await self.cluster.update(
            PODDISRUPTIONBUDGETS,
            {**budget, "status": status},
            namespace=namespace,
            subresource="status",
        )
        self.informers.budgets.write_result(updated)


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def strip(s: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in s.items() if k != "conditions" and v not in (None, {}, 0)}
        out["conditions"] = [
            (c.get("type"), c.get("status"), c.get("reason"), c.get("message"))
            for c in s.get("conditions") or ()
        ]
        return out

    return strip(a) == strip(b)
