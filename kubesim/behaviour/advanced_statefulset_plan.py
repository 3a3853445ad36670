"""One reconcile round of a Kruise Advanced StatefulSet, decided without I/O.

Kruise's ``updateStatefulSet`` walks the set's ordinals in a fixed order and stops at the first
thing it must wait for; :func:`plan_round` makes the same walk over a snapshot of the pods and
returns the pods to create and delete, so the controller only carries it out. The walk:

1. The ordinals the set should have are the first ``replicas`` ones not in ``reserveOrdinals``;
   pods at any other ordinal are condemned.
2. Ascending through the wanted ordinals: a failed pod is deleted, a missing one is created (at
   the current revision below the partition, else at the update revision). ``OrderedReady``
   stops the round at the first create, delete, terminating or unavailable pod. ``Parallel``
   goes on, unless ``scaleStrategy.maxUnavailable`` is set: each created, failed, terminating
   or unavailable pod spends one of its budget and the walk breaks when it is spent, so no more
   than that many pods are ever unavailable while the set scales up (seed 001's rate limit).
3. Condemned pods, highest ordinal first: ``OrderedReady`` deletes one and only when every
   other pod is healthy (the first unhealthy pod may go), ``Parallel`` deletes them all.
4. ``RollingUpdate`` (unless paused) deletes stale pods from the highest ordinal down to
   ``partition``, while fewer than ``rollingUpdate.maxUnavailable`` pods are unavailable; the
   recreated pods come back at the update revision in a later round. ``OnDelete`` stops at 3.

:func:`replica_status` counts the pods as Kruise's status does; :func:`stale_revisions` picks
the ControllerRevisions beyond ``revisionHistoryLimit`` that no pod and neither revision uses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesim.behaviour.scaled_value import ScaledValueError, scaled_value

_RANGE = re.compile(r"^(\d+)-(\d+)$")


@dataclass(frozen=True, slots=True)
class Member:
    """What a round reads of one pod of the set."""

    ordinal: int
    revision: str
    phase: str = ""  # "" for a pod the round has yet to create
    ready: bool = False  # Running with Ready=True
    available: bool = False  # ready for minReadySeconds
    terminating: bool = False

    @property
    def created(self) -> bool:
        return self.phase != ""

    @property
    def healthy(self) -> bool:
        return self.ready and not self.terminating


@dataclass(frozen=True, slots=True)
class Shape:
    """The parts of a set's spec and revisions a round follows."""

    replicas: int
    current_revision: str
    update_revision: str
    reserved: frozenset[int] = frozenset()
    parallel: bool = False
    rolling: bool = True
    partition: int = 0
    paused: bool = False
    update_max_unavailable: int = 1
    scale_max_unavailable: int | None = None


@dataclass(slots=True)
class Plan:
    """The writes of one round, in order: (ordinal, revision) to create, ordinals to delete."""

    create: list[tuple[int, str]] = field(default_factory=list)
    delete: list[int] = field(default_factory=list)


def reserved_ordinals(entries: Iterable[Any] | None) -> frozenset[int]:
    """``reserveOrdinals``: numbers and inclusive ``"a-b"`` ranges; one bad range voids all, as
    Kruise's parser returns nothing then."""
    out: set[int] = set()
    for entry in entries or ():
        if isinstance(entry, int) and not isinstance(entry, bool):
            out.add(entry)
            continue
        match = _RANGE.match(entry) if isinstance(entry, str) else None
        if match is None or int(match.group(1)) > int(match.group(2)):
            return frozenset()
        out.update(range(int(match.group(1)), int(match.group(2)) + 1))
    return frozenset(out)


def ordinal_slots(replicas: int, reserved: frozenset[int]) -> list[int]:
    """The first ``replicas`` ordinals that are not reserved."""
    slots: list[int] = []
    ordinal = 0
    while len(slots) < replicas:
        if ordinal not in reserved:
            slots.append(ordinal)
        ordinal += 1
    return slots


def shape_of(spec: Mapping[str, Any], current_revision: str, update_revision: str) -> Shape:
    """A round's view of a defaulted spec; unreadable limits fall back to Kruise's default 1."""
    replicas = max(_int(spec.get("replicas"), 1), 0)
    strategy = spec.get("updateStrategy") or {}
    rolling = strategy.get("rollingUpdate") or {}
    scale = (spec.get("scaleStrategy") or {}).get("maxUnavailable")
    return Shape(
        replicas=replicas,
        current_revision=current_revision,
        update_revision=update_revision,
        reserved=reserved_ordinals(spec.get("reserveOrdinals")),
        parallel=spec.get("podManagementPolicy") == "Parallel",
        rolling=strategy.get("type", "RollingUpdate") == "RollingUpdate",
        partition=max(_int(rolling.get("partition"), 0), 0),
        paused=bool(rolling.get("paused")),
        update_max_unavailable=_limit(rolling.get("maxUnavailable", 1), replicas),
        scale_max_unavailable=None if scale is None else _limit(scale, replicas),
    )


def plan_round(shape: Shape, pods: Mapping[int, Member]) -> Plan:
    """The creates and deletes of one round over ``pods`` (keyed by ordinal)."""
    plan = Plan()
    slots = ordinal_slots(shape.replicas, shape.reserved)
    wanted: dict[int, Member] = {}
    for position, ordinal in enumerate(slots):
        pod = pods.get(ordinal)
        if pod is None:
            keep_current = shape.rolling and position < shape.partition
            revision = shape.current_revision if keep_current else shape.update_revision
            pod = Member(ordinal, revision)
        wanted[ordinal] = pod
    condemned = sorted((o for o in pods if o not in wanted), reverse=True)
    first_unhealthy = min(
        (o for o, p in (*wanted.items(), *((o, pods[o]) for o in condemned)) if not p.healthy),
        default=None,
    )
    monotonic = not shape.parallel
    budget = shape.scale_max_unavailable

    def spend() -> bool:
        """One more unavailable pod; True once the scale budget is used up."""
        nonlocal budget
        if budget is None:
            return False
        budget -= 1
        return budget <= 0

    for ordinal in slots:
        pod = wanted[ordinal]
        if pod.phase in ("Failed", "Succeeded"):
            if spend():
                break
            if not pod.terminating:
                plan.delete.append(ordinal)
            if monotonic:
                return plan
            continue
        if not pod.created:
            plan.create.append((ordinal, pod.revision))
            if monotonic:
                return plan
            if spend():
                break
            continue
        if pod.terminating:
            if monotonic:
                return plan
            if spend():
                break
        if (monotonic or budget is not None) and not pod.available:
            if monotonic:
                return plan
            if spend():
                break

    for ordinal in condemned:
        pod = pods[ordinal]
        if pod.terminating:
            if monotonic:
                return plan
            continue
        if monotonic and ordinal != first_unhealthy and not (pod.ready and pod.available):
            return plan
        plan.delete.append(ordinal)
        if monotonic:
            return plan

    if not shape.rolling or shape.paused:
        return plan
    unavailable = {o for o, p in wanted.items() if not p.healthy or not p.available}
    targets = [o for o in reversed(slots) if o >= shape.partition]
    for ordinal in targets[: max(shape.replicas - shape.partition, 0)]:
        pod = wanted[ordinal]
        if pod.revision == shape.update_revision or ordinal in plan.delete:
            continue
        if len(unavailable) >= shape.update_max_unavailable and ordinal not in unavailable:
            break
        if not pod.terminating:
            plan.delete.append(ordinal)
            unavailable.add(ordinal)
    return plan


def replica_status(members: Sequence[Member], shape: Shape) -> dict[str, Any]:
    """Kruise's status counts over the set's pods, with a finished rolling update recorded."""
    created = [m for m in members if m.created]
    live = [m for m in created if not m.terminating]
    ready = [m for m in created if m.ready]
    status: dict[str, Any] = {
        "replicas": len(created),
        "readyReplicas": len(ready),
        "availableReplicas": sum(1 for m in ready if m.available),
        "currentReplicas": sum(1 for m in live if m.revision == shape.current_revision),
        "updatedReplicas": sum(1 for m in live if m.revision == shape.update_revision),
        "updatedReadyReplicas": sum(1 for m in ready if m.revision == shape.update_revision),
        "updatedAvailableReplicas": sum(
            1 for m in ready if m.available and m.revision == shape.update_revision
        ),
        "currentRevision": shape.current_revision,
        "updateRevision": shape.update_revision,
    }
    if (
        shape.rolling
        and status["updatedReplicas"] == status["replicas"]
        and status["readyReplicas"] == status["replicas"]
    ):
        status["currentReplicas"] = status["updatedReplicas"]
        status["currentRevision"] = shape.update_revision
    return status


def stale_revisions(revisions: Mapping[str, int], live: Iterable[str], limit: int) -> list[str]:
    """ControllerRevisions (name to revision number) to delete so that no more than ``limit``
    are kept besides the live ones (current, update, any a pod still runs), oldest first."""
    kept = set(live)
    history = sorted((number, name) for name, number in revisions.items() if name not in kept)
    return [name for _, name in history[: max(len(history) - max(limit, 0), 0)]]


def _limit(raw: Any, replicas: int) -> int:
    """A maxUnavailable against ``replicas``, rounded down and never below 1."""
    try:
        value = scaled_value(raw, replicas, round_up=False, default=1)
    except ScaledValueError:
        value = 1
    return max(value, 1)


def _int(raw: Any, default: int) -> int:
    if isinstance(raw, bool):
        return default
    try:
        return int(raw) if raw is not None else default
    except (TypeError, ValueError):
        return default
