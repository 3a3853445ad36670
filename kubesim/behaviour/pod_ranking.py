"""Which pods a ReplicaSet deletes first when it scales down (upstream ``ActivePodsWithRanks``).

Order, most deletable first: unassigned before assigned; Pending before Unknown before Running;
not ready before ready; lower ``controller.kubernetes.io/pod-deletion-cost`` first; more related
pods on the same node first; ready for less time first; more container restarts first; newer
first. Ready and creation times are compared in logarithmic buckets of their age (upstream
LogarithmicScaleDown), and pods in the same bucket are ordered by UID, so scale-down is
semi-random among pods of similar age yet repeatable. WorkloadSpread sets deletion costs to
choose which subset loses pods, so that step is what spreadbus relies on.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from kubesim.behaviour.timestamps import parse_time

JsonObject = dict[str, Any]
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
PHASE_ORDER = {"Pending": 0, "Unknown": 1, "Running": 2}
"""Scale-down order of pod phases (any other phase counts as Pending)."""
_INT32_TEXT = re.compile(r"-?(0|[1-9][0-9]*)")


def deletion_cost(pod: Mapping[str, Any]) -> int:
    """The pod's deletion cost; missing or malformed counts as 0.

    Upstream parses the annotation as a base-10 int32 and refuses a leading ``+``, leading
    zeros and surrounding spaces, so ``"+10"`` and ``"007"`` cost 0 like ``"lots"`` does.
    """
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(DELETION_COST)
    if not isinstance(raw, str) or not _INT32_TEXT.fullmatch(raw):
        return 0
    cost = int(raw)
    return cost if -(2**31) <= cost < 2**31 else 0


def ready_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return condition  # type: ignore[no-any-return]
    return None


def is_ready(pod: Mapping[str, Any]) -> bool:
    condition = ready_condition(pod)
    return condition is not None and condition.get("status") == "True"


def ready_time(pod: Mapping[str, Any]) -> datetime | None:
    condition = ready_condition(pod)
    return parse_time(condition.get("lastTransitionTime")) if condition else None


def restart_count(pod: Mapping[str, Any]) -> int:
    """The most restarts of any one container (upstream ``maxContainerRestarts``)."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return max((int(s.get("restartCount") or 0) for s in statuses), default=0)


def _log_rank(moment: datetime, now: datetime) -> int:
    nanos = (now - moment).total_seconds() * 1e9
    return int(math.log2(nanos)) if nanos > 0 else -1


def _newer_first(
    a: datetime | None, b: datetime | None, now: datetime | None, uid_a: str, uid_b: str
) -> int | None:
    """-1 when the pod with time ``a`` goes first; None when the times are equal."""
    if a == b:
        return None
    if now is None or a is None or b is None:
        # upstream afterOrZero: a zero time counts as newest
        if a is None:
            return -1
        if b is None:
            return 1
        return -1 if a > b else 1
    diff = _log_rank(a, now) - _log_rank(b, now)
    if diff == 0:
        return -1 if uid_a < uid_b else (1 if uid_a > uid_b else 0)
    return -1 if diff < 0 else 1


def compare(
    a: Mapping[str, Any], b: Mapping[str, Any], rank_a: int, rank_b: int, now: datetime | None
) -> int:
    """Negative when ``a`` should be deleted before ``b``."""
    node_a = bool((a.get("spec") or {}).get("nodeName"))
    node_b = bool((b.get("spec") or {}).get("nodeName"))
    if node_a != node_b:
        return -1 if not node_a else 1
    phase_a = PHASE_ORDER.get((a.get("status") or {}).get("phase", ""), 0)
    phase_b = PHASE_ORDER.get((b.get("status") or {}).get("phase", ""), 0)
    if phase_a != phase_b:
        return -1 if phase_a < phase_b else 1
    ready_a, ready_b = is_ready(a), is_ready(b)
    if ready_a != ready_b:
        return -1 if not ready_a else 1
    cost_a, cost_b = deletion_cost(a), deletion_cost(b)
    if cost_a != cost_b:
        return -1 if cost_a < cost_b else 1
    if rank_a != rank_b:
        return -1 if rank_a > rank_b else 1
    uid_a = str((a.get("metadata") or {}).get("uid", ""))
    uid_b = str((b.get("metadata") or {}).get("uid", ""))
    if ready_a and ready_b:
        verdict = _newer_first(ready_time(a), ready_time(b), now, uid_a, uid_b)
        if verdict is not None:
            return verdict
    restarts_a, restarts_b = restart_count(a), restart_count(b)
    if restarts_a != restarts_b:
        return -1 if restarts_a > restarts_b else 1
    created_a = parse_time((a.get("metadata") or {}).get("creationTimestamp"))
    created_b = parse_time((b.get("metadata") or {}).get("creationTimestamp"))
    verdict = _newer_first(created_a, created_b, now, uid_a, uid_b)
    return verdict or 0


def rank_for_deletion(
    pods: Sequence[JsonObject], related: Sequence[Mapping[str, Any]], now: datetime | None
) -> list[JsonObject]:
    """``pods`` sorted most-deletable first; ranks count ``related`` pods on each pod's node.

    ``related`` are the active pods of every ReplicaSet owned by the same controller (upstream
    ``getIndirectlyRelatedPods``), so a node doubled up by a rollout is relieved first.
    """
    on_node = Counter(
        (p.get("spec") or {}).get("nodeName")
        for p in related
        if (p.get("spec") or {}).get("nodeName")
    )
    ranked = [(pod, on_node.get((pod.get("spec") or {}).get("nodeName"), 0)) for pod in pods]

    def order(x: tuple[JsonObject, int], y: tuple[JsonObject, int]) -> int:
        return compare(x[0], y[0], x[1], y[1], now)

    return [pod for pod, _ in sorted(ranked, key=functools.cmp_to_key(order))]


def pods_to_delete(
    pods: Sequence[JsonObject],
    related: Sequence[Mapping[str, Any]],
    count: int,
    now: datetime | None,
) -> list[JsonObject]:
    """The ``count`` pods a ReplicaSet removes on scale down."""
    if count >= len(pods):
        return list(pods)
    return rank_for_deletion(pods, related, now)[:count]
