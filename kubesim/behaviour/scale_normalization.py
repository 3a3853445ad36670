"""From a metric's proposal to the replica count an HPA sets: stabilization, rates and bounds.

Upstream's horizontal controller keeps, per HPA, the recent unstabilized recommendations and the
recent scale events, and normalizes each proposal in one of two ways:

- without ``spec.behavior``: the highest recommendation of the downscale stabilization window
  (``--horizontal-pod-autoscaler-downscale-stabilization``, 300 s) is taken, then bounded by
  ``minReplicas``, ``maxReplicas`` and a scale-up limit of ``max(2 * current, 4)``;
- with ``spec.behavior``: the proposal is held between the lowest recommendation of the
  scale-up window and the highest of the scale-down window, then limited by the policies of its
  direction (``Pods``/``Percent`` per ``periodSeconds``, ``selectPolicy`` Max, Min or Disabled,
  counting the scale events of each period) and by the bounds.

Each step also names the reason and message the HPA's ``AbleToScale`` and ``ScalingLimited``
conditions carry, as upstream words them. Time is a parameter; nothing here reads a clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

JsonObject = dict[str, Any]

SCALE_UP_LIMIT_FACTOR = 2.0
SCALE_UP_LIMIT_MINIMUM = 4.0


@dataclass(slots=True)
class Recommendation:
    replicas: int
    at: datetime


@dataclass(slots=True)
class ScaleEvent:
    change: int
    """Replicas added or removed, always positive."""
    at: datetime
    outdated: bool = False


@dataclass(slots=True)
class History:
    """What the controller remembers of one HPA between syncs (forgotten when it is deleted)."""

    recommendations: list[Recommendation] = field(default_factory=list)
    scale_ups: list[ScaleEvent] = field(default_factory=list)
    scale_downs: list[ScaleEvent] = field(default_factory=list)

    def record_initial(self, current: int, now: datetime) -> None:
        """The first sync remembers the current count, so nothing scales down at once."""
        if not self.recommendations:
            self.recommendations.append(Recommendation(current, now))


@dataclass(frozen=True, slots=True)
class Normalized:
    replicas: int
    able_reason: str
    able_message: str
    limited: bool
    limited_reason: str
    limited_message: str


_READY = ("ReadyForNewScale", "recommended size matches current size")
_DOWN_STABILIZED = (
    "ScaleDownStabilized",
    "recent recommendations were higher than current one, applying the highest recent "
    "recommendation",
)
_UP_STABILIZED = (
    "ScaleUpStabilized",
    "recent recommendations were lower than current one, applying the lowest recent recommendation",
)
_WITHIN = ("DesiredWithinRange", "the desired count is within the acceptable range")
_TOO_FEW = ("TooFewReplicas", "the desired replica count is less than the minimum replica count")
_TOO_MANY = ("TooManyReplicas", "the desired replica count is more than the maximum replica count")
_UP_LIMIT = (
    "ScaleUpLimit",
    "the desired replica count is increasing faster than the maximum scale rate",
)
_DOWN_LIMIT = (
    "ScaleDownLimit",
    "the desired replica count is decreasing faster than the maximum scale rate",
)


def _remember(history: History, replicas: int, now: datetime, old: int | None) -> None:
    if old is not None:
        history.recommendations[old] = Recommendation(replicas, now)
    else:
        history.recommendations.append(Recommendation(replicas, now))


def normalize(
    history: History,
    current: int,
    desired: int,
    minimum: int,
    maximum: int,
    now: datetime,
    window: timedelta,
) -> Normalized:
    """Normalization of an HPA without ``spec.behavior``."""
    cutoff = now - window
    stabilized = desired
    old: int | None = None
    for i, rec in enumerate(history.recommendations):
        if rec.at < cutoff:
            old = i
        elif rec.replicas > stabilized:
            stabilized = rec.replicas
    _remember(history, desired, now, old)
    able = _DOWN_STABILIZED if stabilized != desired else _READY
    up_limit = int(max(SCALE_UP_LIMIT_FACTOR * current, SCALE_UP_LIMIT_MINIMUM))
    allowed, limit = (up_limit, _UP_LIMIT) if maximum > up_limit else (maximum, _TOO_MANY)
    if stabilized < minimum:
        replicas, why = minimum, _TOO_FEW
    elif stabilized > allowed:
        replicas, why = allowed, limit
    else:
        replicas, why = stabilized, _WITHIN
    return Normalized(replicas, *able, replicas != stabilized, *why)


def _window(rules: JsonObject, default: timedelta) -> timedelta:
    seconds = rules.get("stabilizationWindowSeconds")
    return default if seconds is None else timedelta(seconds=int(seconds))


def normalize_with_behavior(
    history: History,
    behavior: JsonObject,
    current: int,
    desired: int,
    minimum: int,
    maximum: int,
    now: datetime,
    downscale_window: timedelta,
) -> Normalized:
    """Normalization of an HPA with ``spec.behavior`` (its rules defaulted by the API)."""
    up_rules: JsonObject = behavior.get("scaleUp") or {}
    down_rules: JsonObject = behavior.get("scaleDown") or {}
    up_cutoff = now - _window(up_rules, timedelta(0))
    down_cutoff = now - _window(down_rules, downscale_window)
    up, down = desired, desired
    old: int | None = None
    for i, rec in enumerate(history.recommendations):
        if rec.at > up_cutoff:
            up = min(rec.replicas, up)
        if rec.at > down_cutoff:
            down = max(rec.replicas, down)
        if rec.at < up_cutoff and rec.at < down_cutoff:
            old = i
    stabilized = min(max(current, up), down)
    _remember(history, desired, now, old)
    direction = _UP_STABILIZED if desired >= current else _DOWN_STABILIZED
    able = direction if stabilized != desired else _READY
    replicas, why = _within_rate(
        history, up_rules, down_rules, current, stabilized, minimum, maximum, now
    )
    return Normalized(replicas, *able, replicas != stabilized, *why)


def _within_rate(
    history: History,
    up_rules: JsonObject,
    down_rules: JsonObject,
    current: int,
    desired: int,
    minimum: int,
    maximum: int,
    now: datetime,
) -> tuple[int, tuple[str, str]]:
    if desired > current:
        up_limit = max(scale_up_limit(current, history, up_rules, now), current)
        allowed, limit = (up_limit, _UP_LIMIT) if maximum > up_limit else (maximum, _TOO_MANY)
        if desired > allowed:
            return allowed, limit
    elif desired < current:
        down_limit = min(scale_down_limit(current, history, down_rules, now), current)
        allowed, limit = (down_limit, _DOWN_LIMIT) if minimum < down_limit else (minimum, _TOO_FEW)
        if desired < allowed:
            return allowed, limit
    return desired, _WITHIN


def _changed_within(events: list[ScaleEvent], period_seconds: int, now: datetime) -> int:
    cutoff = now - timedelta(seconds=period_seconds)
    return sum(e.change for e in events if e.at > cutoff)


def _period_start(current: int, history: History, period: int, now: datetime) -> int:
    added = _changed_within(history.scale_ups, period, now)
    removed = _changed_within(history.scale_downs, period, now)
    return current - added + removed


def scale_up_limit(current: int, history: History, rules: JsonObject, now: datetime) -> int:
    """The most replicas the scale-up policies allow now."""
    select = rules.get("selectPolicy") or "Max"
    if select == "Disabled":
        return current
    proposals = []
    for policy in rules.get("policies") or ():
        start = _period_start(current, history, int(policy.get("periodSeconds") or 0), now)
        value = int(policy.get("value") or 0)
        if policy.get("type") == "Pods":
            proposals.append(start + value)
        elif policy.get("type") == "Percent":
            proposals.append(math.ceil(start * (1 + value / 100)))
    if not proposals:
        return -(2**31) if select != "Min" else 2**31 - 1
    return min(proposals) if select == "Min" else max(proposals)


def scale_down_limit(current: int, history: History, rules: JsonObject, now: datetime) -> int:
    """The fewest replicas the scale-down policies allow now."""
    select = rules.get("selectPolicy") or "Max"
    if select == "Disabled":
        return current
    proposals = []
    for policy in rules.get("policies") or ():
        start = _period_start(current, history, int(policy.get("periodSeconds") or 0), now)
        value = int(policy.get("value") or 0)
        if policy.get("type") == "Pods":
            proposals.append(start - value)
        elif policy.get("type") == "Percent":
            proposals.append(int(start * (1 - value / 100)))
    if not proposals:
        return -(2**31) if select == "Min" else 2**31 - 1
    return max(proposals) if select == "Min" else min(proposals)


def _longest_period(rules: JsonObject) -> int:
    return max((int(p.get("periodSeconds") or 0) for p in rules.get("policies") or ()), default=0)


def store_scale_event(
    history: History, behavior: JsonObject | None, previous: int, new: int, now: datetime
) -> None:
    """Remember a rescale for the rate policies (only HPAs with a behaviour use them)."""
    if behavior is None:
        return
    if new > previous:
        events, rules, change = history.scale_ups, behavior.get("scaleUp") or {}, new - previous
    else:
        events, rules, change = history.scale_downs, behavior.get("scaleDown") or {}, previous - new
    cutoff = now - timedelta(seconds=_longest_period(rules))
    old: int | None = None
    for i, event in enumerate(events):
        if event.at < cutoff:
            event.outdated = True
        if event.outdated:
            old = i
    if old is not None:
        events[old] = ScaleEvent(change, now)
    else:
        events.append(ScaleEvent(change, now))
