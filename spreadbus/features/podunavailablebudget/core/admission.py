"""The pod webhook's budget decision, as Kruise v1.9.0 takes it (reference §4).

DELETE, EVICT and UPDATE of a pod are checked against the budget its ``kruise.io/related-pub``
annotation names, first match wins:

1. the pod opts out (``pub.kruise.io/no-protect: "true"``): allowed;
2. the pod is not ready or not consistent: allowed (it does not count as available anyway);
3. no such budget: allowed;
4. the budget's desiredAvailable is 0: allowed, nothing recorded;
5. the operation is not one the budget protects: allowed;
6. the pod is already recorded in disruptedPods or unavailablePods: allowed, nothing spent
   (a retried request costs nothing);
7. unavailableAllowed <= 0, or the two maps hold more than 2000 pods: denied;
8. otherwise allowed, and the new status spends one: unavailableAllowed - 1 and the pod recorded
   at ``now``, in unavailablePods for an UPDATE, in disruptedPods for anything else (DELETE,
   EVICT and RESIZE, as Kruise records them).

An UPDATE is checked only when the new pod carries the annotation and the update changes
availability (a spec change, or an added ``unavailable-pod.kruise.io/`` label); readiness and
the budget are then read from the old pod, and a change the kubelet applies in place (cpu or
memory only) is a RESIZE. A denied DELETE or UPDATE is 403 Forbidden as in Kruise; a denied EVICT
is 429 TooManyRequests, as a PodDisruptionBudget answers, so that ``kubectl drain`` waits and
retries (spreadbus's deliberate difference).

Pure: the status the decision spends is the budget's, an input. The webhook spends it by
compare-and-set and repeats the decision on a conflict; a dry-run request is decided and spends
nothing. On CREATE a pod gets the annotation from the first budget of its namespace that matches
(:func:`budget_for_new_pod`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Final, Literal

import msgspec

from spreadbus.features.podunavailablebudget.core import pod_health
from spreadbus.features.podunavailablebudget.core.budget_selector import (
    compile_selector,
    string_labels,
)
from spreadbus.features.podunavailablebudget.core.model import (
    EVICT,
    NO_PROTECT_ANNOTATION,
    RELATED_PUB_ANNOTATION,
    RESIZE,
    UPDATE,
    BudgetStatus,
    PodUnavailableBudget,
    protected_operations,
    truncate,
)
from spreadbus.features.podunavailablebudget.core.workloads import Workloads, namespace_of

JSON = Mapping[str, Any]
Operation = Literal["DELETE", "EVICT", "UPDATE", "RESIZE"]
Lookup = Callable[[str, str], PodUnavailableBudget | None]
"""(namespace, name) -> the budget, or None when there is none."""

MAX_RECORDED: Final = 2000
RESOURCE: Final = 'podunavailablebudget.policy.kruise.io'


class PodDecision(msgspec.Struct, frozen=True):
    allowed: bool
    budget: str | None = None
    """``namespace/name`` of the budget consulted, if one was."""
    status: BudgetStatus | None = None
    """The status to write when the decision spent budget; None when nothing is written."""
    code: int = 200
    reason: str = ""
    message: str = ""
    why: str = ""
    """Which rule decided (``no-protect``, ``unavailable``, ``no-budget``, ``desired-zero``,
    ``unprotected-operation``, ``recorded``, ``spent``, ``dry-run``, ``exhausted``,
    ``too-many-recorded``, ``unannotated``, ``availability-unchanged``)."""
    detail: str = ""
    """For a denial, the status fields and values behind it, in words: ``message`` is Kruise's
    own text, kept as it is, and says neither."""


def related_pub(pod: JSON) -> str:
    value = pod_health.annotations_of(pod).get(RELATED_PUB_ANNOTATION)
    return value if isinstance(value, str) else ""


def forbidden_message(budget_name: str, detail: str) -> str:
    return f'{RESOURCE} "{budget_name}" is forbidden: {detail}'


def _deny(
    pub: PodUnavailableBudget, operation: Operation, detail: str, why: str, explained: str
) -> PodDecision:
    code, reason = (429, "TooManyRequests") if operation == EVICT else (403, "Forbidden")
    return PodDecision(
        allowed=False, budget=pub.key, code=code, reason=reason,
        message=forbidden_message(pub.name, detail), why=why, detail=explained,
    )


def decide(
    pod: JSON,
    pub: PodUnavailableBudget | None,
    *,
    operation: Operation,
    now: datetime,
    dry_run: bool = False,
    inplace_vertical_scaling: bool = False,
) -> PodDecision:
    """Steps 1 to 8 for the pod being checked and the budget its annotation names."""
    if pod_health.annotations_of(pod).get(NO_PROTECT_ANNOTATION) == "true":
        return PodDecision(allowed=True, why="no-protect")
    if not pod_health.available(pod):
        return PodDecision(allowed=True, why="unavailable")
    if pub is None:
        return PodDecision(allowed=True, why="no-budget")
    status = pub.status
    if status.desired_available == 0:
        return PodDecision(allowed=True, budget=pub.key, why="desired-zero")
    protected = protected_operations(pub, inplace_vertical_scaling=inplace_vertical_scaling)
    if operation not in protected:
        return PodDecision(allowed=True, budget=pub.key, why="unprotected-operation")
    name = pod_health.name_of(pod)
    if status.records(name):
        return PodDecision(allowed=True, budget=pub.key, why="recorded")
    if status.unavailable_allowed <= 0:
        return _deny(pub, operation, "pub unavailable allowed is negative", "exhausted",
                     f"status.unavailableAllowed is {status.unavailable_allowed} "
                     f"(currentAvailable {status.current_available}, desiredAvailable "
                     f"{status.desired_available}): no more of its pods may be disrupted now")
    recorded = len(status.disrupted_pods) + len(status.unavailable_pods)
    if recorded > MAX_RECORDED:
        return _deny(pub, operation, "DisruptedPods and UnavailablePods map too big - too many "
                     "unavailable not confirmed by PUB controller", "too-many-recorded",
                     f"status.disruptedPods and status.unavailablePods hold {recorded} pods, "
                     f"more than {MAX_RECORDED}")
    if dry_run:
        return PodDecision(allowed=True, budget=pub.key, why="dry-run")
    when = truncate(now)
    if operation == UPDATE:
        spent = msgspec.structs.replace(
            status,
            unavailable_allowed=status.unavailable_allowed - 1,
            unavailable_pods={**status.unavailable_pods, name: when},
        )
    else:
        spent = msgspec.structs.replace(
            status,
            unavailable_allowed=status.unavailable_allowed - 1,
            disrupted_pods={**status.disrupted_pods, name: when},
        )
    return PodDecision(allowed=True, budget=pub.key, status=spent, why="spent")


def _lookup_for(pod: JSON, lookup: Lookup) -> PodUnavailableBudget | None:
    name = related_pub(pod)
    return lookup(namespace_of(pod), name) if name else None


def admit_removal(
    pod: JSON,
    *,
    lookup: Lookup,
    operation: Literal["DELETE", "EVICT"],
    now: datetime,
    dry_run: bool = False,
    inplace_vertical_scaling: bool = False,
) -> PodDecision:
    """A DELETE of the stored pod, or its eviction."""
    if not related_pub(pod):
        return PodDecision(allowed=True, why="unannotated")
    return decide(pod, _lookup_for(pod, lookup), operation=operation, now=now, dry_run=dry_run,
                  inplace_vertical_scaling=inplace_vertical_scaling)


def update_operation(old: JSON, new: JSON) -> Operation | None:
    """What an UPDATE from ``old`` to ``new`` is to a budget: None when it cannot change the
    pod's availability, RESIZE when the kubelet applies it in place, UPDATE otherwise."""
    if not pod_health.unavailability_changing(old, new):
        return None
    return RESIZE if pod_health.can_resize_inplace(old, new) else UPDATE


def admit_update(
    new: JSON,
    old: JSON,
    *,
    lookup: Lookup,
    now: datetime,
    dry_run: bool = False,
    inplace_vertical_scaling: bool = False,
) -> PodDecision:
    """An UPDATE of a pod: judged on the old pod when it changes availability."""
    if not related_pub(new):
        return PodDecision(allowed=True, why="unannotated")
    operation = update_operation(old, new)
    if operation is None:
        return PodDecision(allowed=True, why="availability-unchanged")
    if not related_pub(old):
        return PodDecision(allowed=True, why="unannotated")
    return decide(old, _lookup_for(old, lookup), operation=operation, now=now, dry_run=dry_run,
                  inplace_vertical_scaling=inplace_vertical_scaling)


# --- CREATE: which budget a new pod belongs to -------------------------------------------------


def _selects(pub: PodUnavailableBudget, pod: JSON) -> bool:
    """A selector that is missing, empty or unusable matches no new pod."""
    selector = compile_selector(pub.selector)
    if selector is None or selector.empty:
        return False
    return selector.matches(string_labels(pod))


def budget_for_new_pod(
    pod: JSON, budgets: Iterable[PodUnavailableBudget], workloads: Workloads
) -> PodUnavailableBudget | None:
    """The first budget of the pod's namespace, in the order given, that protects it.

    A targetRef budget matches when it names the pod's workload (a ReplicaSet's Deployment; or
    the UnitedDeployment controlling that workload, spreadbus's addition so that a budget naming
    a UnitedDeployment protects its pods from their creation); a pod without a workload is
    matched by selectors only. A selector budget matches when its selector is not empty and
    selects the pod's labels.
    """
    namespace = namespace_of(pod)
    workload = workloads.pod_workload(pod)
    governing = workloads.governing(namespace, workload) if workload is not None else None
    for pub in budgets:
        if pub.namespace != namespace:
            continue
        ref = pub.target_ref
        if ref is not None and workload is not None:
            named = {workload} | ({governing} if governing is not None else set())
            if any(ref.names(w.group, w.kind, w.name) for w in named):
                return pub
            continue
        if _selects(pub, pod):
            return pub
    return None


def related_pub_patch(pod: JSON, budget_name: str) -> list[dict[str, Any]]:
    """The JSON Patch that stamps ``kruise.io/related-pub`` on the pod (only that key)."""
    annotations = pod_health.annotations_of(pod)
    if isinstance(pod.get("metadata"), Mapping) and isinstance(
        pod["metadata"].get("annotations"), Mapping
    ):
        op = "replace" if RELATED_PUB_ANNOTATION in annotations else "add"
        return [{"op": op, "path": "/metadata/annotations/kruise.io~1related-pub",
                 "value": budget_name}]
    return [{"op": "add", "path": "/metadata/annotations",
             "value": {RELATED_PUB_ANNOTATION: budget_name}}]


__all__ = [
    "MAX_RECORDED",
    "Lookup",
    "Operation",
    "PodDecision",
    "admit_removal",
    "admit_update",
    "budget_for_new_pod",
    "decide",
    "forbidden_message",
    "related_pub",
    "related_pub_patch",
    "update_operation",
]
