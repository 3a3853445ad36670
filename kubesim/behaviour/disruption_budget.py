"""PodDisruptionBudget status arithmetic (upstream disruption controller), pure.

``maxUnavailable`` and percentage ``minAvailable`` are measured against the pods the owning
controllers want (their scale), an integer ``minAvailable`` against the pods that exist. A pod
counts as healthy when it is Ready, not terminating and not in ``disruptedPods`` (an eviction the
API has admitted but whose deletion has not yet been observed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kubesim.behaviour.pod_ranking import is_ready
from kubesim.behaviour.scaled_value import ScaledValueError, is_percent, scaled_value
from kubesim.behaviour.timestamps import parse_time

DISRUPTED_POD_TIMEOUT = timedelta(minutes=2)


@dataclass(frozen=True)
class BudgetStatus:
    expected_pods: int
    desired_healthy: int
    current_healthy: int
    disruptions_allowed: int


def needs_controller_scale(spec: Mapping[str, Any]) -> bool:
    """Whether the expected pod count must come from the owning controllers' scale."""
    return spec.get("maxUnavailable") is not None or is_percent(spec.get("minAvailable"))


def live_disrupted_pods(
    disrupted: Mapping[str, str] | None, pods: Mapping[str, Mapping[str, Any]], now: datetime
) -> dict[str, str]:
    """Entries still pending: the pod exists, is not terminating and the entry has not expired."""
    kept: dict[str, str] = {}
    for name, stamp in (disrupted or {}).items():
        pod = pods.get(name)
        if pod is None or (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        moment = parse_time(stamp)
        if moment is not None and moment + DISRUPTED_POD_TIMEOUT < now:
            continue
        kept[name] = stamp
    return kept


def count_healthy(pods: Iterable[Mapping[str, Any]], disrupted: Mapping[str, str]) -> int:
    return sum(
        1
        for pod in pods
        if not (pod.get("metadata") or {}).get("deletionTimestamp")
        and (pod.get("metadata") or {}).get("name") not in disrupted
        and is_ready(pod)
    )


def budget_status(
    spec: Mapping[str, Any], *, pod_count: int, controller_scale: int, current_healthy: int
) -> BudgetStatus:
    """Raises :class:`ScaledValueError` on a malformed intstr (the controller reports it)."""
    max_unavailable = spec.get("maxUnavailable")
    min_available = spec.get("minAvailable")
    expected = 0
    desired = 0
    if max_unavailable is not None:
        expected = controller_scale
        allowed = scaled_value(max_unavailable, expected, round_up=True)
        desired = max(expected - allowed, 0)
    elif min_available is not None:
        if is_percent(min_available):
            expected = controller_scale
            desired = scaled_value(min_available, expected, round_up=True)
        else:
            expected = pod_count
            desired = scaled_value(min_available, expected, round_up=True)
    disruptions = current_healthy - desired
    if expected <= 0 or disruptions <= 0:
        disruptions = 0
    return BudgetStatus(expected, desired, current_healthy, disruptions)


__all__ = [
    "BudgetStatus",
    "ScaledValueError",
    "budget_status",
    "count_healthy",
    "live_disrupted_pods",
    "needs_controller_scale",
]
