"""How many replicas a Resource metric asks for: upstream's replica calculator, as pure functions.

Given the pods the scale target's selector finds (each with its simulated usage sample and its
requests) and the HPA's target, it returns the proposal the horizontal controller then
stabilizes and bounds. The rules are upstream's (``pkg/controller/podautoscaler``):

- utilization is total usage over total requests of the pods with a sample, in whole percent;
  the usage ratio is that percentage over the target (AverageValue: the integer mean usage over
  the target value);
- within the tolerance (0.1) of 1.0 the current count stands; otherwise
  ``ceil(ratio * ready pods)``;
- deleted and failed pods are ignored; pending pods, and for cpu pods not ready (or within the
  cpu initialization period, or never ready after the initial readiness delay) count as unready:
  on a scale-up they are assumed to use nothing, pods without a sample are assumed to use their
  whole request (or the target, if higher) on a scale-down and nothing on a scale-up, and a
  proposal those assumptions turn around, or bring within tolerance, keeps the current count.

Quantities are milli-units (millicores for cpu). Time is a parameter; samples are taken at
``now`` with no window, as kubesim's metrics are read when the controller asks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

DEFAULT_TOLERANCE = 0.1
CPU = "cpu"


class MetricError(Exception):
    """No proposal: the message is upstream's (``did not receive metrics for ...``)."""


@dataclass(frozen=True, slots=True)
class PodSample:
    """What the calculator reads of one pod selected by the scale target."""

    name: str
    phase: str = "Running"
    deleting: bool = False
    ready: str | None = "True"
    """The Ready condition's status, None when the pod has no Ready condition yet."""
    ready_since: datetime | None = None
    """The Ready condition's lastTransitionTime."""
    started: datetime | None = None
    """``status.startTime``."""
    request: int | None = 0
    """The pod's request of the resource, summed over its containers; None when one lacks it."""
    missing_request: str = ""
    """The first container without a request, for the error message."""
    usage: int | None = None
    """The usage sample; None when the metrics have none for the pod."""


@dataclass(frozen=True, slots=True)
class Timing:
    """The calculator's clock and upstream's tunables (``--horizontal-pod-autoscaler-*``)."""

    now: datetime
    tolerance: float = DEFAULT_TOLERANCE
    cpu_initialization_period: timedelta = timedelta(minutes=5)
    initial_readiness_delay: timedelta = timedelta(seconds=30)


@dataclass(frozen=True, slots=True)
class Proposal:
    replicas: int
    average: int
    """The mean usage of the counted pods (milli-units)."""
    utilization: int | None = None
    """Utilization in percent of requests (Utilization targets only)."""


@dataclass(slots=True)
class _Groups:
    ready: int = 0
    unready: set[str] = field(default_factory=set)
    missing: set[str] = field(default_factory=set)
    ignored: set[str] = field(default_factory=set)


def _group(pods: Iterable[PodSample], resource: str, timing: Timing) -> _Groups:
    groups = _Groups()
    for pod in pods:
        if pod.deleting or pod.phase == "Failed":
            groups.ignored.add(pod.name)
            continue
        if pod.phase == "Pending":
            groups.unready.add(pod.name)
            continue
        if pod.usage is None:
            groups.missing.add(pod.name)
            continue
        if resource == CPU and _cpu_unready(pod, timing):
            groups.unready.add(pod.name)
            continue
        groups.ready += 1
    return groups


def _cpu_unready(pod: PodSample, timing: Timing) -> bool:
    if pod.ready is None or pod.started is None:
        return True
    if pod.started + timing.cpu_initialization_period > timing.now:
        # samples are instantaneous: one taken now is never older than the last transition
        since = pod.ready_since or pod.started
        return pod.ready == "False" or timing.now < since
    since = pod.ready_since or pod.started
    return pod.ready == "False" and pod.started + timing.initial_readiness_delay > since


def _requests(pods: Iterable[PodSample], resource: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for pod in pods:
        if pod.request is None:
            raise MetricError(
                f"missing request for {resource} in container {pod.missing_request} "
                f"of Pod {pod.name}"
            )
        out[pod.name] = pod.request
    return out


def _utilization(
    metrics: dict[str, int], requests: dict[str, int], target: int
) -> tuple[float, int, int]:
    total = requested = entries = 0
    for name, value in metrics.items():
        if name not in requests:
            continue
        total += value
        requested += requests[name]
        entries += 1
    if requested == 0:
        raise MetricError("no metrics returned matched known pods")
    utilization = total * 100 // requested
    return utilization / target, utilization, total // entries


def _metrics(pods: list[PodSample], resource: str) -> dict[str, int]:
    metrics = {p.name: p.usage for p in pods if p.usage is not None}
    if not metrics:
        raise MetricError(
            f"unable to get metrics for resource {resource}: no metrics returned from resource "
            "metrics API"
        )
    return metrics


def _within(ratio: float, timing: Timing) -> bool:
    return abs(1.0 - ratio) <= timing.tolerance


def utilization_replicas(
    current: int, target_utilization: int, pods: list[PodSample], resource: str, timing: Timing
) -> Proposal:
    """The proposal for a Resource metric with an ``averageUtilization`` target."""
    metrics = _metrics(pods, resource)
    if not pods:
        raise MetricError("no pods returned by selector while calculating replica count")
    groups = _group(pods, resource, timing)
    for name in groups.ignored | groups.unready:
        metrics.pop(name, None)
    requests = _requests(pods, resource)
    if not metrics:
        raise MetricError("did not receive metrics for targeted pods (pods might be unready)")
    ratio, utilization, average = _utilization(metrics, requests, target_utilization)

    def proposal(replicas: int) -> Proposal:
        return Proposal(replicas, average, utilization)

    scale_up_with_unready = bool(groups.unready) and ratio > 1.0
    if not scale_up_with_unready and not groups.missing:
        if _within(ratio, timing):
            return proposal(current)
        return proposal(math.ceil(ratio * groups.ready))
    if groups.missing:
        if ratio < 1.0:
            fallback = max(100, target_utilization)
            for name in groups.missing:
                metrics[name] = requests[name] * fallback // 100
        elif ratio > 1.0:
            for name in groups.missing:
                metrics[name] = 0
    if scale_up_with_unready:
        for name in groups.unready:
            metrics[name] = 0
    new_ratio, _, _ = _utilization(metrics, requests, target_utilization)
    return proposal(_rebalanced(current, ratio, new_ratio, len(metrics), timing))


def average_value_replicas(
    current: int, target_average: int, pods: list[PodSample], resource: str, timing: Timing
) -> Proposal:
    """The proposal for a Resource metric with an ``averageValue`` target (milli-units)."""
    metrics = _metrics(pods, resource)
    if not pods:
        raise MetricError("no pods returned by selector while calculating replica count")
    groups = _group(pods, resource, timing)
    for name in groups.ignored | groups.unready:
        metrics.pop(name, None)
    if not metrics:
        raise MetricError("did not receive metrics for targeted pods (pods might be unready)")
    average = sum(metrics.values()) // len(metrics)
    ratio = average / target_average
    scale_up_with_unready = bool(groups.unready) and ratio > 1.0
    if not scale_up_with_unready and not groups.missing:
        if _within(ratio, timing):
            return Proposal(current, average)
        return Proposal(math.ceil(ratio * groups.ready), average)
    for name in groups.missing:
        metrics[name] = target_average if ratio < 1.0 else 0
    if scale_up_with_unready:
        for name in groups.unready:
            metrics[name] = 0
    new_ratio = (sum(metrics.values()) // len(metrics)) / target_average
    if (
        _within(new_ratio, timing)
        or (ratio < 1.0 and new_ratio > 1.0)
        or (ratio > 1.0 and new_ratio < 1.0)
    ):
        return Proposal(current, average)
    return Proposal(math.ceil(new_ratio * len(metrics)), average)


def _rebalanced(current: int, ratio: float, new_ratio: float, counted: int, timing: Timing) -> int:
    """The count after assuming values for unready and missing pods, unless that assumption
    brings the ratio within tolerance or turns the direction around."""
    if (
        _within(new_ratio, timing)
        or (ratio < 1.0 and new_ratio > 1.0)
        or (ratio > 1.0 and new_ratio < 1.0)
    ):
        return current
    replicas = math.ceil(new_ratio * counted)
    if (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
        return current
    return replicas
