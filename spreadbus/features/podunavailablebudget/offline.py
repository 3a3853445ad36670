"""The PodUnavailableBudget answers of ``spreadbus validate``, ``plan`` and ``admit``, offline.

``validate``: a PodUnavailableBudget is checked as a CREATE (an UPDATE with ``old``) against the
other budgets of the input for conflicts; one of the same name is the stored version of the object
under test and is skipped. There is no defaulting webhook: ``defaulted`` is the object.

``plan``: every budget of the input with its whole status after one reconcile at ``now``, whether
or not it changed (``podUnavailableBudgets: {"ns/name": {"status": ...}}``, absent when the input
holds no budget, so that the answer for other inputs is what it was); the text form adds the pods
to annotate, the events and the next expiry.

``admit``: CREATE stamps ``kruise.io/related-pub`` from the first matching budget of the pod's
namespace; DELETE, EVICT and UPDATE (``old_pod`` the stored pod) are decided from the budget
status in the input, as Kruise's webhook trusts the last written status, never recomputed from the
pods of the input. A denial carries ``code`` (403, 429 for EVICT), ``reason`` and ``message``
(Kruise's words), and the text form names the status field and value that denied it; a decision
that spent budget shows the status it wrote under ``podUnavailableBudgets``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from kubesemantics import json_patch
from spreadbus.clusterregistry.registry import host_objects
from spreadbus.engine.feature import (
    OfflineAdmission,
    OfflinePlan,
    OfflineValidation,
    UnreadableInput,
)
from spreadbus.features.podunavailablebudget.core.admission import (
    PodDecision,
    admit_removal,
    admit_update,
    budget_for_new_pod,
    related_pub_patch,
)
from spreadbus.features.podunavailablebudget.core.budget import compute_status
from spreadbus.features.podunavailablebudget.core.model import (
    PodUnavailableBudget,
    format_time,
    from_object,
    is_budget,
    status_to_json,
)
from spreadbus.features.podunavailablebudget.core.validation import validate_budget
from spreadbus.features.podunavailablebudget.core.workloads import Workloads

JSON = dict[str, Any]

ANSWER_KEY = "podUnavailableBudgets"


def _budgets(objects: Sequence[Mapping[str, Any]]) -> list[PodUnavailableBudget]:
    return [from_object(o) for o in objects if is_budget(o)]


def validate_offline(
    obj: JSON, *, old: JSON | None, context: Sequence[JSON]
) -> OfflineValidation:
    others = [o for o in context if is_budget(o)]
    return OfflineValidation(errors=validate_budget(obj, old=old, others=others))


def offline_plan(objects: Sequence[JSON], now: datetime) -> OfflinePlan:
    objects = host_objects(objects)  # a member's pods are not the host's
    budgets = _budgets(objects)
    if not budgets:
        return OfflinePlan(answer={})
    workloads = Workloads(objects)
    pods = [o for o in objects if o.get("kind") == "Pod"]
    entries: dict[str, Any] = {}
    lines: list[str] = []
    for pub in budgets:
        result = compute_status(pub, workloads=workloads, pods=pods, now=now)
        status = status_to_json(result.status)
        entries[pub.key] = {"status": status}
        lines.append(
            f"PodUnavailableBudget {pub.key}: allowed={status['unavailableAllowed']} "
            f"current={status['currentAvailable']} desired={status['desiredAvailable']} "
            f"total={status['totalReplicas']}"
        )
        if result.error:
            lines.append(f"  error: {result.error}")
        lines.extend(f"  annotate {name}: kruise.io/related-pub={pub.name}"
                     for name in result.pods_to_annotate)
        lines.extend(
            f"  event {e.type} {e.reason}{f' on pod {e.pod}' if e.pod else ''}: {e.message}"
            for e in result.events
        )
        if result.requeue_at is not None:
            lines.append(f"  recheck at {format_time(result.requeue_at)}")
    return OfflinePlan(answer={ANSWER_KEY: entries}, lines=lines)


def _decision_answer(decision: PodDecision) -> OfflineAdmission:
    answer: JSON = {}
    why = f"{decision.why}: {decision.detail}" if decision.detail else decision.why
    lines = [f"podUnavailableBudget: {decision.budget or '-'} ({why})"]
    if decision.status is not None and decision.budget is not None:
        answer[ANSWER_KEY] = {decision.budget: {"status": status_to_json(decision.status)}}
    if not decision.allowed:
        answer.update(
            allowed=False, code=decision.code, reason=decision.reason, message=decision.message
        )
    return OfflineAdmission(
        allowed=decision.allowed,
        message=decision.message,
        code=decision.code,
        reason=decision.reason,
        answer=answer,
        lines=lines,
    )


def offline_admit(
    pod: JSON,
    objects: Sequence[JSON],
    *,
    operation: str,
    now: datetime,
    old_pod: JSON | None = None,
) -> OfflineAdmission:
    budgets = _budgets(objects)
    if operation == "CREATE":
        pub = budget_for_new_pod(pod, budgets, Workloads(objects))
        if pub is None:
            return OfflineAdmission(allowed=True)
        patch = related_pub_patch(pod, pub.name)
        return OfflineAdmission(
            allowed=True,
            patch=patch,
            answer={"pod": json_patch.apply(pod, [dict(op) for op in patch])},
            lines=[f"podUnavailableBudget: {pub.key} (related-pub)"],
        )
    by_name: dict[tuple[str, str], PodUnavailableBudget] = {}
    for pub in budgets:
        by_name.setdefault((pub.namespace, pub.name), pub)

    def lookup(namespace: str, name: str) -> PodUnavailableBudget | None:
        return by_name.get((namespace, name))

    if operation == "UPDATE":
        if old_pod is None:
            raise UnreadableInput("an UPDATE needs the stored pod (--old-pod)", in_file=False)
        decision = admit_update(pod, old_pod, lookup=lookup, now=now)
    elif operation in ("DELETE", "EVICT"):
        decision = admit_removal(
            pod, lookup=lookup, operation="EVICT" if operation == "EVICT" else "DELETE", now=now
        )
    else:
        return OfflineAdmission(allowed=True)
    return _decision_answer(decision)


__all__ = ["offline_admit", "offline_plan", "validate_offline"]
