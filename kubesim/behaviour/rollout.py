"""Deployment rollout arithmetic (upstream ``deployment/util``), pure.

RollingUpdate keeps the total of all ReplicaSets' replicas at most ``replicas + maxSurge`` and the
available pods at least ``replicas - maxUnavailable``; surge rounds up, unavailability rounds down,
and both zero becomes one unavailable so a rollout can always progress. When a Deployment is
resized mid-rollout the difference is shared among its ReplicaSets in proportion to their size
(``max-replicas`` annotation), the leftover going to the largest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubesim.behaviour.scaled_value import scaled_value


def resolve_fenceposts(
    max_surge: int | str | None, max_unavailable: int | str | None, desired: int
) -> tuple[int, int]:
    """(surge, unavailable) as absolute pod counts."""
    surge = scaled_value(max_surge, desired, round_up=True, default=0)
    unavailable = scaled_value(max_unavailable, desired, round_up=False, default=0)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_unavailable(
    desired: int, max_unavailable_raw: int | str | None, surge_raw: int | str | None
) -> int:
    """The deployment's allowed unavailable pods, capped at its replicas."""
    if desired == 0:
        return 0
    _, unavailable = resolve_fenceposts(surge_raw, max_unavailable_raw, desired)
    return min(unavailable, desired)


def new_replicaset_target(*, desired: int, surge: int, total_current: int, new_current: int) -> int:
    """The new ReplicaSet's replicas for this step of a rolling update."""
    max_total = desired + surge
    if total_current >= max_total:
        return new_current
    scale_up = min(max_total - total_current, desired - new_current)
    return new_current + max(scale_up, 0)


def old_scale_down_budget(
    *, desired: int, unavailable: int, total_current: int, new_replicas: int, new_available: int
) -> int:
    """How many old-ReplicaSet pods may go now (upstream ``maxScaledDown``)."""
    min_available = desired - unavailable
    new_unavailable = new_replicas - new_available
    return total_current - min_available - new_unavailable


@dataclass(frozen=True)
class ReplicaSetSize:
    """What proportional scaling needs to know about one ReplicaSet."""

    name: str
    replicas: int
    max_replicas_annotation: int | None
    created: str


def proportional_targets(
    replica_sets: Sequence[ReplicaSetSize],
    *,
    desired: int,
    surge: int,
    status_replicas: int,
) -> dict[str, int]:
    """New replicas per ReplicaSet when a rolling Deployment is resized mid-rollout."""
    allowed = desired + surge
    current = sum(rs.replicas for rs in replica_sets)
    to_add = allowed - current
    if to_add == 0:
        return {rs.name: rs.replicas for rs in replica_sets}
    if to_add > 0:
        ordered = sorted(replica_sets, key=lambda rs: (-rs.replicas, _neg(rs.created), rs.name))
    else:
        ordered = sorted(replica_sets, key=lambda rs: (-rs.replicas, rs.created, rs.name))
    added = 0
    targets: dict[str, int] = {}
    for rs in ordered:
        if rs.replicas == 0:
            targets[rs.name] = 0
            continue
        annotated = rs.max_replicas_annotation or status_replicas
        if desired == 0 or annotated == 0:
            fraction = -rs.replicas
        else:
            fraction = _round_half_away(rs.replicas * allowed / annotated) - rs.replicas
        remaining = to_add - added
        proportion = min(fraction, remaining) if to_add > 0 else max(fraction, remaining)
        targets[rs.name] = rs.replicas + proportion
        added += proportion
    leftover = to_add - added
    if leftover and ordered:
        first = ordered[0].name
        targets[first] = max(targets[first] + leftover, 0)
    return targets


def _round_half_away(x: float) -> int:
    return int(x + 0.5) if x >= 0 else -int(-x + 0.5)


def _neg(created: str) -> str:
    """Newest first for an ascending sort on RFC 3339 strings."""
    return "".join(chr(0x10FFFF - ord(c)) for c in created)
