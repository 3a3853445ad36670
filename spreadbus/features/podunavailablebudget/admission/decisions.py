"""The core's pure decisions in the shapes the handlers use: plain JSON in, JSON status out.

The handlers decide inside a ledger transaction on the status the ledger entry makes effective
(:func:`spreadbus.features.podunavailablebudget.budget_ledger.effective_status`); the budget
handed to the core carries that status, so the core's rule spends exactly what the entry holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from kubesemantics.field_errors import FieldError
from spreadbus.features.podunavailablebudget.core import admission
from spreadbus.features.podunavailablebudget.core.model import (
    RELATED_PUB_ANNOTATION,
    from_object,
    status_to_json,
)
from spreadbus.features.podunavailablebudget.core.validation import validate_budget
from spreadbus.features.podunavailablebudget.core.workloads import Workloads, controller_ref

RELATED: Final = RELATED_PUB_ANNOTATION


@dataclass(frozen=True)
class Decision:
    allowed: bool
    message: str = ""
    status: dict[str, Any] | None = None
    """The status with the pod recorded when the decision spent the budget, else None."""


def related_budget(pod: Mapping[str, Any] | None) -> str | None:
    """The budget a pod was linked to at CREATE, if any."""
    if pod is None:
        return None
    return admission.related_pub(pod) or None


def decide(operation: str, pod: Mapping[str, Any], budget: Mapping[str, Any],
           status: Mapping[str, Any], *, old_pod: Mapping[str, Any] | None, now: datetime,
           dry_run: bool) -> Decision:
    """The core's decision for ``pod`` against ``budget`` holding ``status``."""
    pub = from_object({**budget, "status": dict(status)})

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
    return Decision(allowed=decided.allowed, message=decided.message, status=spent)


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
