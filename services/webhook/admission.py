"""The webhook's decisions: what each review path answers, from the view and the ledger.

- Pod CREATE (``/mutate-pod``): steer the pod into a subset of the WorkloadSpread that targets
  its workload, reserving the slot in the ledger first, then patch the pod. Dry-run requests
  are answered without reserving anything, as Kruise skips them.
- Pod DELETE and ``pods/eviction`` CREATE (``/validate-pod``): record that the pod's slot is
  being freed, so new pods may take it before the old one is gone. Always allowed: a deletion
  is never blocked by spreading.
- WorkloadSpread CREATE/UPDATE (``/validate-workloadspread``): every validation rule, with
  the other WorkloadSpreads of the view for the conflict check.

When the view is not synced yet (the watcher has not finished its first list), pods are
admitted unchanged with a warning: a pod without a subset is still a valid pod, while a
decision from an incomplete view could overfill a subset.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from nats.aio.client import Client

from events import subjects
from events.codec import encode
from events.messages import Admission
from services.webhook import review
from services.webhook.ledger import Ledger, LedgerStore, Reservation, ledger_key, pruned
from services.webhook.review import AdmissionRequest
from services.webhook.view import POD_KEY, SPREAD_KEY, View, is_active, matched_of, pod_key
from spreadbus.core.field_errors import describe
from spreadbus.core.workloadspread.custom_workloads import Whitelist
from spreadbus.core.workloadspread.model import api_group
from spreadbus.core.workloadspread.validation import validate_workloadspread

log = logging.getLogger(__name__)
T = TypeVar("T")

WORKLOAD_RESOURCES: Final = {
    ("apps", "Deployment"): ("apps", "deployments"),
    ("apps", "ReplicaSet"): ("apps", "replicasets"),
    ("apps", "StatefulSet"): ("apps", "statefulsets"),
    ("apps.kruise.io", "StatefulSet"): ("apps.kruise.io", "statefulsets"),
    ("apps.kruise.io", "CloneSet"): ("apps.kruise.io", "clonesets"),
    ("batch", "Job"): ("batch", "jobs"),
}
"""(group, kind) -> (group, resource) of the workloads the view keeps."""


@dataclass(frozen=True)
class Behind:
    """The ledger reflects observations this view has not folded yet."""

    floor: int


class ViewProgress:
    """Lets a request wait until the view has folded a given stream sequence."""

    def __init__(self, view: View) -> None:
        self.view = view
        self._changed = asyncio.Condition()

    def notify(self) -> None:
        """Called by the follower after it folded messages."""
        asyncio.get_running_loop().create_task(self._notify())

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def wait_for(self, seq: int, timeout: float) -> bool:
        async with self._changed:
            try:
                await asyncio.wait_for(
                    self._changed.wait_for(lambda: self.view.seq >= seq), timeout
                )
            except TimeoutError:
                return False
        return True


class SpreadAdmission:
    """Implements :class:`services.webhook.server.Policy` over a view and a ledger store."""

    def __init__(
        self,
        *,
        view: View,
        ledger: LedgerStore,
        progress: ViewProgress,
        nc: Client | None = None,
        whitelist: Whitelist | None = None,
        reservation_ttl: float = 60.0,
        catch_up_timeout: float = 1.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.view = view
        self.ledger = ledger
        self.progress = progress
        self.nc = nc
        self.whitelist = whitelist or Whitelist()
        self.ttl = reservation_ttl
        self.catch_up_timeout = catch_up_timeout
        self.clock = clock

    @property
    def synced(self) -> bool:
        return {POD_KEY, SPREAD_KEY} <= self.view.synced

    # -- pod CREATE ---------------------------------------------------------------------------

    async def mutate_pod(self, request: AdmissionRequest) -> dict[str, Any]:
        allow = review.allow(request.uid, api_version=request.api_version)
        if (request.resource, request.sub_resource, request.operation) != ("pods", "", "CREATE"):
            return allow
        if request.dry_run or request.object is None:
            return allow
        # Subset choice and injection are the placement core's; until a spread matches, the
        # pod is admitted exactly as it came.
        return allow

    # -- pod DELETE and eviction --------------------------------------------------------------

    async def record_pod_removal(self, request: AdmissionRequest) -> dict[str, Any]:
        allow = review.allow(request.uid, api_version=request.api_version)
        if request.resource != "pods" or request.dry_run:
            return allow
        if request.operation == "DELETE" and request.sub_resource == "":
            pod = request.old_object
        elif request.operation == "CREATE" and request.sub_resource == "eviction":
            pod = self.view.get("", "pods", request.namespace, request.name)
        else:
            return allow
        if pod is None or not is_active(pod) or not _controller_ref(pod):
            return allow
        matched = matched_of(pod)
        if matched is None:
            return allow
        if self.view.get(*SPREAD_KEY, request.namespace, matched.spread) is None:
            return allow
        name = request.name or str((pod.get("metadata") or {}).get("name") or "")
        if not name:
            return allow
        await self.record_deletion(request.namespace, matched.spread, matched.subset, name)
        return allow

    async def record_deletion(self, namespace: str, spread: str, subset: str, name: str) -> None:
        """Mark the pod's slot as being freed; repeated deletions of one pod record it once."""
        now = self.clock()

        def decide(ledger: Ledger) -> tuple[bool, Ledger | None]:
            current = self._prune(ledger, namespace, spread, now)
            if name in current.deleting:
                return True, current
            deleting = {**current.deleting, name: Reservation(subset=subset, at=now)}
            return True, Ledger(creating=current.creating, deleting=deleting, floor=current.floor)

        await self.transact(namespace, spread, decide)

    # -- ledger plumbing ----------------------------------------------------------------------

    def _prune(self, ledger: Ledger, namespace: str, spread: str, now: float) -> Ledger:
        def observed(key: str) -> bool:
            return self.view.pod_counted(namespace, spread, key)

        def present(name: str) -> bool:
            pod = self.view.get("", "pods", namespace, name)
            return pod is not None and is_active(pod)

        return pruned(
            ledger,
            now=now,
            ttl=self.ttl,
            observed=observed,
            present=present,
            view_seq=self.view.seq,
        )

    async def transact(
        self, namespace: str, spread: str, decide: Callable[[Ledger], tuple[T, Ledger | None]]
    ) -> T:
        """A ledger transaction that first lets the view catch up with the ledger's floor."""
        key = ledger_key(self.view.cluster, namespace, spread)

        def guarded(ledger: Ledger) -> tuple[T | Behind, Ledger | None]:
            if self.view.seq < ledger.floor:
                return Behind(ledger.floor), None
            return decide(ledger)

        while True:
            result = await self.ledger.transact(key, guarded)
            if not isinstance(result, Behind):
                return result
            if not await self.progress.wait_for(result.floor, self.catch_up_timeout):
                raise TimeoutError(f"view behind the reservation ledger at {result.floor}")

    async def announce(self, request: AdmissionRequest, spread: str, subset: str, key: str) -> None:
        """Publish the reservation on the bus for audit; best effort, never delays admission."""
        if self.nc is None or not self.nc.is_connected:
            return
        pod = request.object or {}
        metadata = pod.get("metadata") or {}
        event = Admission(
            cluster=self.view.cluster,
            namespace=request.namespace,
            request_uid=request.uid,
            pod_name=str(metadata.get("name") or key),
            generate_name=str(metadata.get("generateName") or ""),
            workload=f"WorkloadSpread/{spread}",
            subset=subset,
            ts=self.clock(),
        )
        subject = subjects.admission(
            self.view.cluster, request.namespace, f"WorkloadSpread/{spread}"
        )
        try:
            await self.nc.publish(subject, encode(event))
        except Exception as exc:
            log.warning("admission event not published: %r", exc)

    # -- WorkloadSpread validation -------------------------------------------------------------

    async def validate_workloadspread(self, request: AdmissionRequest) -> dict[str, Any]:
        allow = review.allow(request.uid, api_version=request.api_version)
        if request.operation not in ("CREATE", "UPDATE") or request.sub_resource:
            return allow
        obj = request.object
        if obj is None:
            return review.deny(
                request.uid, "request.object: required", api_version=request.api_version
            )
        namespace = request.namespace or str((obj.get("metadata") or {}).get("namespace") or "")
        others = self.view.spreads_in(namespace)
        errors = validate_workloadspread(
            obj,
            others=others,
            old=request.old_object if request.operation == "UPDATE" else None,
            whitelist=self.whitelist,
            workload=self._target_workload(obj, namespace),
        )
        if not errors:
            return allow
        name = str((obj.get("metadata") or {}).get("name") or "")
        lines = "; ".join(describe(e) for e in errors)
        message = f'WorkloadSpread.apps.kruise.io "{name}" is invalid: {lines}'
        causes = [
            {"field": e.field, "reason": f"Field{e.type}", "message": e.message} for e in errors
        ]
        return review.deny(
            request.uid,
            message,
            code=422,
            reason="Invalid",
            api_version=request.api_version,
            causes=causes,
        )

    def _target_workload(self, obj: Mapping[str, Any], namespace: str) -> dict[str, Any] | None:
        ref = (obj.get("spec") or {}).get("targetRef")
        if not isinstance(ref, Mapping):
            return None
        api_version, kind, name = ref.get("apiVersion"), ref.get("kind"), ref.get("name")
        if not (isinstance(api_version, str) and isinstance(kind, str) and isinstance(name, str)):
            return None
        resource = WORKLOAD_RESOURCES.get((api_group(api_version), kind))
        if resource is None:
            return None
        return self.view.get(*resource, namespace, name)


def _controller_ref(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


__all__ = ["SpreadAdmission", "ViewProgress", "pod_key"]
