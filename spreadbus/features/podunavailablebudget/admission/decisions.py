"""The core's pure decisions in the shapes the handlers use: plain JSON in, JSON status out.

The handlers decide inside a ledger transaction on the status the ledger entry makes effective
(:func:`spreadbus.features.podunavailablebudget.core.budget_ledger.effective_status`); the budget
handed to the core carries that status, so the core's rule spends exactly what the entry holds.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import msgspec

from kubesemantics import pod_status
from kubesemantics.field_errors import FieldError
from kubesemantics.lenient_json import as_int, as_map
from kubesemantics.owner_refs import controller_ref
from kubesemantics.timestamps import parse_time
from spreadbus.features.podunavailablebudget.core import admission
from spreadbus.features.podunavailablebudget.core.model import (
    RELATED_PUB_ANNOTATION,
    BudgetStatus,
    PodUnavailableBudget,
    from_object,
    protect_total_replicas,
    status_from_json,
    status_to_json,
)
from spreadbus.features.podunavailablebudget.core.validation import validate_budget
from spreadbus.features.podunavailablebudget.core.workloads import Workloads

RELATED: Final = RELATED_PUB_ANNOTATION


SETTLED_WITHOUT_SPENDING: Final = frozenset({
    "no-protect", "unavailable", "no-budget", "desired-zero", "unprotected-operation",
    "recorded", "unannotated", "availability-unchanged",
})
"""Reasons the core allows for without spending."""
SETTLED_BY_STATUS: Final = frozenset({"desired-zero", "recorded"})
"""Those of them read from the budget's status, which a newer status can undo: a pod already
recorded, or nothing to protect yet. The others (the pod's own state, the budget's spec) hold
on any status."""


@dataclass(frozen=True)
class Decision:
    allowed: bool
    message: str = ""
    status: dict[str, Any] | None = None
    """The status with the pod recorded when the decision spent the budget, else None."""
    settled: bool = False
    """Allowed for a reason no spending can change (:data:`SETTLED_WITHOUT_SPENDING`)."""
    why: str = ""
    """Which of the core's rules decided (:attr:`..core.admission.PodDecision.why`)."""


def related_budget(pod: Mapping[str, Any] | None) -> str | None:
    """The budget a pod was linked to at CREATE, if any."""
    if pod is None:
        return None
    return admission.related_pub(pod) or None


def linked(pod: Mapping[str, Any], budget_name: str) -> dict[str, Any]:
    """The pod as if linked to ``budget_name`` at CREATE."""
    metadata = dict(pod.get("metadata") or {})
    metadata["annotations"] = {**as_map(metadata.get("annotations")), RELATED: budget_name}
    return {**pod, "metadata": metadata}


def parsed_budget(budget: Mapping[str, Any]) -> PodUnavailableBudget:
    """The budget's spec as the core reads it; its status is given to :func:`decide`."""
    return from_object({**budget, "status": {}})


@functools.lru_cache(maxsize=8192)
def _time(at: str) -> datetime | None:
    """Record times repeat in every decision over a budget: each is parsed once."""
    return parse_time(at)


def _times(value: object) -> dict[str, datetime]:
    if not isinstance(value, Mapping):
        return {}
    out: dict[str, datetime] = {}
    for pod, at in value.items():
        when = _time(at) if isinstance(at, str) else None
        if isinstance(pod, str) and when is not None:
            out[pod] = when
    return out


def status_of(status: Mapping[str, Any]) -> BudgetStatus:
    """The core's reading of a status, its record times parsed once per distinct time."""
    counters = status_from_json({k: v for k, v in status.items()
                                 if k not in ("disruptedPods", "unavailablePods")})
    return msgspec.structs.replace(counters,
                                   disrupted_pods=_times(status.get("disruptedPods")),
                                   unavailable_pods=_times(status.get("unavailablePods")))


def decide(operation: str, pod: Mapping[str, Any], budget: PodUnavailableBudget,
           status: Mapping[str, Any], *, old_pod: Mapping[str, Any] | None, now: datetime,
           dry_run: bool) -> Decision:
    """The core's decision for ``pod`` against ``budget`` holding ``status``."""
    pub = msgspec.structs.replace(budget, status=status_of(status))

    def lookup(namespace: str, name: str) -> Any:
        return pub

    if operation == "UPDATE":
        if old_pod is None:
            return Decision(allowed=True)
        decided = admission.admit_update(pod, old_pod, lookup=lookup, now=now, dry_run=dry_run)
    elif operation in ("DELETE", "EVICT"):
        decided = admission.admit_removal(pod, lookup=lookup,
                                          operation="EVICT" if operation == "EVICT" else "DELETE",
                                          now=now, dry_run=dry_run)
    else:
        return Decision(allowed=True)
    spent = None if decided.status is None else status_to_json(decided.status)
    return Decision(allowed=decided.allowed, message=decided.message, status=spent,
                    settled=decided.allowed and decided.why in SETTLED_WITHOUT_SPENDING,
                    why=decided.why)


def counted_before_its_workload(status: Mapping[str, Any], budget: PodUnavailableBudget,
                                pod: Mapping[str, Any], *,
                                replicaset: Callable[[str, str], Mapping[str, Any] | None],
                                namespace: str) -> bool:
    """Whether a status that protects nothing (``desired-zero``) was computed before the pod's
    workload: it counted no pods (``totalReplicas`` 0, not from the protect-total-replicas
    annotation) while the pod's ReplicaSet, as the view holds it, wants replicas. A budget whose
    workload is gone or scaled to zero protects nothing indeed; this one is only not yet
    counted, as right after it was created."""
    if as_int(status.get("totalReplicas")) or protect_total_replicas(budget) is not None:
        return False
    ref = controller_ref(pod)
    if ref is None or ref.get("kind") != "ReplicaSet":
        return False
    found = replicaset(namespace, str(ref.get("name") or ""))
    if found is None or pod_status.deleting(found):
        return False
    return (as_int(as_map(found.get("spec")).get("replicas")) or 0) > 0


def matching_budget(pod: Mapping[str, Any], budgets: Sequence[Mapping[str, Any]], *,
                    replicaset: Callable[[str, str], Mapping[str, Any] | None],
                    namespace: str) -> str | None:
    """The first budget of the namespace that protects a new pod (the core's rule); the pod's
    ReplicaSet, when the view holds it, tells its Deployment."""
    metadata = dict(pod.get("metadata") or {})
    metadata.setdefault("namespace", namespace)
    pod = {**pod, "metadata": metadata}
    owners: list[Mapping[str, Any]] = []
    ref = controller_ref(pod)
    if ref is not None and ref.get("kind") == "ReplicaSet":
        found = replicaset(namespace, str(ref.get("name") or ""))
        if found is not None:
            owners.append(found)
    chosen = admission.budget_for_new_pod(pod, [from_object(b) for b in budgets],
                                          Workloads(owners))
    return None if chosen is None else chosen.name


def validate(obj: Mapping[str, Any], *, old: Mapping[str, Any] | None,
             others: Sequence[Mapping[str, Any]]) -> list[FieldError]:
    return validate_budget(obj, old=old, others=others)
