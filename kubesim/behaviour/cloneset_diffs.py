"""How many pods a CloneSet creates, deletes and updates next (Kruise's
``calculateDiffsWithExpectation``, the heart of its controller).

The CloneSet keeps ``partition`` pods at the old revision and ``replicas - partition`` at the
update revision. ``maxSurge`` lets it run that many extra pods while it updates or deletes
specified pods (never while paused), and ``maxUnavailable`` caps how many pods may be
unavailable: it bounds the ready pods deleted (``delete_ready_limit``) and the pods updated at
once (``update_max_unavailable``). Percentages round up, except ``maxUnavailable`` when a surge
is configured, which rounds down; a percentage ``partition`` below 100% that rounds up to every
replica keeps one pod to update. Pods in Kruise's ``PreparingDelete`` lifecycle state are not
simulated, so they never appear here.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubesim.behaviour.scaled_value import scaled_value

DEFAULT_MAX_UNAVAILABLE = "20%"
_UNLIMITED = 2**31 - 1


@dataclass(frozen=True, slots=True)
class PodFacts:
    """What the arithmetic needs to know of one pod."""

    updated: bool
    """At the update revision."""
    available: bool
    specified_delete: bool


@dataclass(frozen=True, slots=True)
class Strategy:
    replicas: int
    partition: int | str | None = None
    max_surge: int | str | None = None
    max_unavailable: int | str | None = None
    paused: bool = False
    scale_max_unavailable: int | str | None = None


@dataclass(frozen=True, slots=True)
class Diffs:
    scale_up: int = 0
    scale_up_old_revision: int = 0
    scale_up_limit: int = 0
    scale_down: int = 0
    scale_down_old_revision: int = 0
    delete_ready_limit: int = 0
    use_surge: int = 0
    use_surge_old_revision: int = 0
    update: int = 0
    """Pods to move to the update revision next (negative: back to the current one)."""
    update_max_unavailable: int = 0


def partition_replicas(partition: int | str | None, replicas: int) -> int:
    """Pods kept at the old revision: a percentage rounds up, but short of 100% it always
    leaves one pod to update when there are several (Kruise ``CalculatePartitionReplicas``)."""
    if partition is None:
        return 0
    value = scaled_value(partition, replicas, round_up=True)
    if (
        replicas > 1
        and value == replicas
        and isinstance(partition, str)
        and partition.strip() != "100%"
    ):
        value = replicas - 1
    return value


def calculate(strategy: Strategy, pods: list[PodFacts]) -> Diffs:
    """The next step for ``pods``.

    Pods only ever move forward to the update revision: Kruise's ``CloneSetPartitionRollback``
    gate (raising ``partition`` sends updated pods back) is off by default and not simulated.
    """
    replicas = strategy.replicas
    partition = min(partition_replicas(strategy.partition, replicas), replicas)
    max_surge = 0
    if strategy.max_surge is not None and not strategy.paused:
        max_surge = scaled_value(strategy.max_surge, replicas, round_up=True)
    max_unavailable = scaled_value(
        strategy.max_unavailable
        if strategy.max_unavailable is not None
        else DEFAULT_MAX_UNAVAILABLE,
        replicas,
        round_up=max_surge == 0,
    )
    scale_max_unavailable = scaled_value(
        strategy.scale_max_unavailable, replicas, round_up=True, default=_UNLIMITED
    )

    new_count = sum(1 for p in pods if p.updated)
    old_count = len(pods) - new_count
    to_delete_new = sum(1 for p in pods if p.updated and p.specified_delete)
    to_delete_old = sum(1 for p in pods if not p.updated and p.specified_delete)
    unavailable = sum(1 for p in pods if not p.specified_delete and not p.available)

    update_old_diff = max(old_count - partition, 0)
    update_new_diff = min(new_count - (replicas - partition), 0)

    use_surge = use_surge_old = 0
    if max_surge > 0:
        scale_surge = scale_old_surge = 0
        to_delete = to_delete_new + to_delete_old
        if to_delete > 0:
            scale_surge = min(max(unavailable + to_delete - max_unavailable, 0), to_delete)
            if scale_surge > to_delete_new:
                scale_old_surge = scale_surge - to_delete_new
        update_surge = update_old_surge = 0
        if (update_old_diff > 0 > update_new_diff) or (update_old_diff < 0 < update_new_diff):
            if abs(update_old_diff) <= abs(update_new_diff):
                update_surge = abs(update_old_diff)
                if update_old_diff < 0:
                    update_old_surge = update_surge
            else:
                update_surge = abs(update_new_diff)
                if update_new_diff > 0:
                    update_old_surge = update_surge
        if scale_surge >= update_surge:
            use_surge = min(max_surge, scale_surge)
            use_surge_old = min(use_surge, scale_old_surge)
        else:
            use_surge = min(max_surge, update_surge)
            use_surge_old = min(use_surge, update_old_surge)

    expected_total = replicas + use_surge
    expected_old = partition + use_surge_old
    scale_up = scale_up_old = scale_up_limit = 0
    if expected_total - len(pods) > 0:
        scale_up = expected_total - len(pods)
        scale_up_old = max(expected_old - old_count, 0)
        scale_up_limit = min(scale_up, max(scale_max_unavailable - unavailable, 0))
    scale_down = scale_down_old = 0
    if len(pods) - to_delete_old - to_delete_new - expected_total > 0:
        scale_down = len(pods) - to_delete_old - to_delete_new - expected_total
        scale_down_old = max(old_count - to_delete_old - expected_old, 0)
    delete_ready_limit = 0
    if to_delete_new or to_delete_old or scale_down:
        delete_ready_limit = max(max_unavailable + (len(pods) - replicas) - unavailable, 0)
    update = update_old_diff if abs(update_old_diff) <= abs(update_new_diff) else -update_new_diff
    return Diffs(
        scale_up=scale_up,
        scale_up_old_revision=scale_up_old,
        scale_up_limit=scale_up_limit,
        scale_down=scale_down,
        scale_down_old_revision=scale_down_old,
        delete_ready_limit=delete_ready_limit,
        use_surge=use_surge,
        use_surge_old_revision=use_surge_old,
        update=update,
        update_max_unavailable=max_unavailable + len(pods) - replicas if update else 0,
    )
