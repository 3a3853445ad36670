"""A budget's status, computed as Kruise v1.9.0's PUB controller computes it (reference §2, §3).

1. The pods: a targetRef's workload's pods (targetRef wins over a selector), else the pods of
   the namespace the selector matches (a missing or unusable selector matches nothing); only
   active pods (not Succeeded/Failed, not terminating) count. The expected count is the
   workload's replicas (targetRef), or the summed replicas of the distinct workloads of the
   matched pods (selector); the protect-total-replicas annotation replaces it.
2. desiredAvailable: with maxUnavailable, ``max(0, total - scaled)``; else an int minAvailable as
   it is (not capped by the total), a percentage scaled; percentages round up either way.
3. disruptedPods entries live 20 s and unavailablePods entries 10 s from the time recorded, and
   only while the pod is still listed; a disrupted pod that outlived its entry is reported
   (``NotDeleted``).
4. currentAvailable: listed pods in neither map that are ready and consistent;
   unavailableAllowed = ``max(0, current - desired)``.

A maxUnavailable or minAvailable string that is not a percentage fails the computation, as it
fails Kruise's reconcile: the stored counters stay, and a ``Calculated`` condition set to False
says why (spreadbus's addition; a computed status carries no condition). ``now`` is a parameter:
the caller's clock decides expiry, and ``requeue_at`` is when the next entry expires.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final

import msgspec

from kubesemantics import pod_status
from kubesemantics.intstr import IntOrStrError, scaled_value
from spreadbus.features.podunavailablebudget.core import pod_health
from spreadbus.features.podunavailablebudget.core.budget_selector import (
    compile_selector,
    string_labels,
)
from spreadbus.features.podunavailablebudget.core.model import (
    RELATED_PUB_ANNOTATION,
    BudgetStatus,
    PodUnavailableBudget,
    format_time,
    protect_total_replicas,
    truncate,
)
from spreadbus.features.podunavailablebudget.core.workloads import (
    WorkloadId,
    Workloads,
    expected_for_pods,
    namespace_of,
    pods_for_workload,
)

JSON = Mapping[str, Any]

DISRUPTED_TIMEOUT: Final = timedelta(seconds=20)
UNAVAILABLE_TIMEOUT: Final = timedelta(seconds=10)
CALCULATED: Final = "Calculated"


class BudgetEvent(msgspec.Struct, frozen=True):
    """An event the controller records: on the budget (``pod`` None) or on one of its pods."""

    type: str
    reason: str
    message: str
    pod: str | None = None


class BudgetComputation(msgspec.Struct, frozen=True):
    status: BudgetStatus
    changed: bool
    """The status differs from the stored one (Kruise skips the write otherwise)."""
    pods: tuple[str, ...] = ()
    """Names of the listed pods, each once, in input order."""
    pods_to_annotate: tuple[str, ...] = ()
    """Listed pods without the related-pub annotation, which the controller stamps."""
    requeue_at: datetime | None = None
    events: tuple[BudgetEvent, ...] = ()
    error: str | None = None


def budget_pods(
    pub: PodUnavailableBudget, *, workloads: Workloads, pods: Sequence[JSON]
) -> tuple[list[JSON], int]:
    """The active pods of the budget and the expected count.

    As Kruise's ``GetPodsForPub``: a non-empty protect-total-replicas annotation replaces the
    count of a targetRef (found or not) or of a selector that lists pods; a missing selector or
    one with an unknown operator lists nothing and counts 0, the annotation notwithstanding
    (:mod:`.budget_selector`).
    """
    total = protect_total_replicas(pub)
    if pub.target_ref is not None:
        ref = pub.target_ref
        workload = workloads.find(
            pub.namespace, WorkloadId(ref.group, ref.kind, ref.name)
        ) if ref.parsable else None
        found, expected = ([], 0) if workload is None else pods_for_workload(
            workload, pods, workloads)
        return [p for p in found if pod_status.active(p)], expected if total is None else total
    if pub.selector is None:
        return [], 0
    selector = compile_selector(pub.selector)
    if selector is None:
        return [], 0
    matched = [
        p for p in pods
        if namespace_of(p) == pub.namespace
        and selector.matches(string_labels(p))
        and pod_status.active(p)
    ]
    return matched, expected_for_pods(matched, workloads) if total is None else total


def desired_available(pub: PodUnavailableBudget, expected: int) -> int:
    """Raises :class:`IntOrStrError` for a string that is not a percentage."""
    if pub.max_unavailable is not None:
        return max(0, expected - scaled_value(pub.max_unavailable, expected, round_up=True))
    if pub.min_available is not None:
        return scaled_value(pub.min_available, expected, round_up=True)
    return 0


def _kept(
    recorded: Mapping[str, datetime], listed: set[str], timeout: timedelta, now: datetime
) -> tuple[dict[str, datetime], list[str]]:
    """Entries of listed pods still within their timeout; names of listed pods that expired."""
    kept: dict[str, datetime] = {}
    expired: list[str] = []
    for name, when in recorded.items():
        if name not in listed:
            continue
        if when + timeout < now:
            expired.append(name)
        else:
            kept[name] = when
    return kept, expired


def _failed_condition(previous: BudgetStatus, message: str, now: datetime) -> dict[str, Any]:
    old = next((c for c in previous.conditions if c.get("type") == CALCULATED), None)
    since = format_time(now)
    if old is not None and old.get("status") == "False" and old.get("message") == message:
        since = str(old.get("lastTransitionTime") or since)
    return {
        "type": CALCULATED,
        "status": "False",
        "reason": "CalculateExpectedPodCountFailed",
        "message": message,
        "lastTransitionTime": since,
    }


def _same(a: BudgetStatus, b: BudgetStatus) -> bool:
    def times(m: Mapping[str, datetime]) -> dict[str, datetime]:
        return {k: truncate(v) for k, v in m.items()}

    return (
        (a.unavailable_allowed, a.current_available, a.desired_available, a.total_replicas)
        == (b.unavailable_allowed, b.current_available, b.desired_available, b.total_replicas)
        and a.observed_generation == b.observed_generation
        and times(a.disrupted_pods) == times(b.disrupted_pods)
        and times(a.unavailable_pods) == times(b.unavailable_pods)
        and list(a.conditions) == list(b.conditions)
    )


def _failure(
    pub: PodUnavailableBudget, message: str, now: datetime, listed: Sequence[JSON],
    events: Sequence[BudgetEvent],
) -> BudgetComputation:
    """The stored counters kept, the reason in a condition; the pods are still linked."""
    status = msgspec.structs.replace(
        pub.status,
        observed_generation=pub.generation,
        conditions=(_failed_condition(pub.status, message, now),),
    )
    return BudgetComputation(
        status=status,
        changed=not _same(status, pub.status),
        pods=_names(listed),
        pods_to_annotate=_unlinked(listed),
        events=(*events, BudgetEvent("Warning", "CalculateExpectedPodCountFailed", message)),
        error=message,
    )


def _names(listed: Sequence[JSON]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(pod_health.name_of(p) for p in listed))


def _unlinked(listed: Sequence[JSON]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(
        pod_health.name_of(p) for p in listed
        if not pod_health.annotations_of(p).get(RELATED_PUB_ANNOTATION)
    ))


def compute_status(
    pub: PodUnavailableBudget,
    *,
    workloads: Sequence[JSON] | Workloads,
    pods: Sequence[JSON],
    now: datetime,
) -> BudgetComputation:
    """The status the controller writes for ``pub`` at ``now``.

    ``workloads``: the namespace's workloads (ReplicaSets among them, so Deployment pods are
    found; any other objects are ignored); ``pods``: candidate pods (other namespaces ignored).
    """
    index = workloads if isinstance(workloads, Workloads) else Workloads(workloads)
    listed, expected = budget_pods(pub, workloads=index, pods=pods)
    events: list[BudgetEvent] = []
    if not listed:
        events.append(BudgetEvent("Normal", "NoPods", "No matching pods found"))
    try:
        desired = desired_available(pub, expected)
    except IntOrStrError as exc:
        return _failure(
            pub, f"Failed to calculate the number of expected pods: invalid value for "
            f"IntOrString: {exc}", now, listed, events,
        )
    names = _names(listed)
    stored = pub.status
    listed_names = set(names)
    disrupted, gone = _kept(stored.disrupted_pods, listed_names, DISRUPTED_TIMEOUT, now)
    unavailable, _ = _kept(stored.unavailable_pods, listed_names, UNAVAILABLE_TIMEOUT, now)
    events.extend(
        BudgetEvent("Warning", "NotDeleted",
                    f"Pod was expected by PUB {pub.namespace}/{pub.name} to be deleted but it "
                    "wasn't", pod=name)
        for name in sorted(gone)
    )
    expiries = [t + DISRUPTED_TIMEOUT for t in disrupted.values()] + [
        t + UNAVAILABLE_TIMEOUT for t in unavailable.values()
    ]
    seen: set[str] = set()
    current = 0
    for pod in listed:
        name = pod_health.name_of(pod)
        if name in seen:
            continue
        seen.add(name)
        if name in disrupted or name in unavailable:
            continue
        if pod_health.available(pod):
            current += 1
    status = BudgetStatus(
        unavailable_allowed=max(0, current - desired),
        current_available=current,
        desired_available=desired,
        total_replicas=expected,
        disrupted_pods=disrupted,
        unavailable_pods=unavailable,
        observed_generation=pub.generation,
    )
    return BudgetComputation(
        status=status,
        changed=not _same(status, stored),
        pods=names,
        pods_to_annotate=_unlinked(listed),
        requeue_at=min(expiries) if expiries else None,
        events=tuple(events),
    )
