"""Rebalancing a WorkloadSpread's workload on request: pods move up to higher-priority subsets.

A WorkloadRebalancer (or anyone) asks for a fresh placement by setting the annotation
``rebalance.spreadbus.io/request`` on the WorkloadSpread; while it differs from
``rebalance.spreadbus.io/handled``, a pod that sits in a lower-priority subset (or in none) while
a higher-priority subset has room is moved: evicted through the Eviction API, so that its
workload re-creates it and the webhook steers the replacement first-fit into the subset with room.
Once nothing more can move, the request is written back as handled.

Room is what the webhook will see: a subset has room when both the status it reads (the observed
one) and the status about to be written give it missing replicas (``-1``: unlimited) and it is not
``Schedulable=False``. Room the webhook cannot use yet keeps the request open: a subset closed by
Adaptive scheduling (reopened after its window) or room only the status about to be written shows
(a raised ``maxReplicas``); the pods move once the webhook can steer them there.

The moves are planned as the webhook will fill: the lowest-priority pods first (within a subset,
in the order a scale-in removes pods: unscheduled, pending, not ready first), each into the first
subset above it with room left. Evictions already sent and not yet seen (``in_flight``) are
planned first and never sent twice.

Repair works the same way without a request (on unless the planner's
``--no-repair-unsteered-pods``): a pod admitted while no webhook steered it (the pod webhook
fails open) is matched to a subset by its node afterwards and marked
``spreadbus.io/unsteered`` (:func:`~.existing_pods.unsteered_at_creation`); such a pod moves up
to a subset with room as a requested rebalance would move it, and leaves a subset holding more
than its ``maxReplicas``. Pods the webhook steered, and pods made before their WorkloadSpread,
stay where they are: only a request moves them.

Availability is spent carefully: at most ``max(1, maxUnavailable)`` of the workload's replicas
unavailable at once (``maxUnavailable`` an int or a percentage of the replicas, rounded down,
25% by default), and never more evictions than any PodDisruptionBudget
(``status.disruptionsAllowed``) or PodUnavailableBudget (``status.unavailableAllowed``) covering
the workload's pods allows. Unavailable counts the replicas without a ready pod and the ready pods
whose eviction is in flight; a budget's allowance is reduced by the evictions in flight too, as its
status may not show them yet. This is conservative: a move waits rather than risk one pod too many.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Final

import msgspec

from kubesemantics import pod_status
from kubesemantics.group_version import api_group
from kubesemantics.intstr import IntOrStrError, scaled_value
from kubesemantics.label_selector import matches
from kubesemantics.lenient_json import as_int, as_map, as_str
from kubesemantics.pod_status import has_ready_condition
from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.existing_pods import initial_quota
from spreadbus.features.workloadspread.core.model import (
    UNSTEERED_ANNOTATION,
    Status,
    SubsetStatus,
    WorkloadSpread,
)
from spreadbus.features.workloadspread.core.pod_state import Pod

REQUEST_ANNOTATION: Final = "rebalance.spreadbus.io/request"
HANDLED_ANNOTATION: Final = "rebalance.spreadbus.io/handled"
DEFAULT_MAX_UNAVAILABLE: Final = "25%"


class Budget(msgspec.Struct, frozen=True):
    """A disruption budget covering the workload, and how many more it allows now."""

    kind: str  # PodDisruptionBudget or PodUnavailableBudget
    name: str
    allowed: int


class Move(msgspec.Struct, frozen=True):
    pod: str  # namespace/name
    source: str  # subset name, "" for none
    destination: str
    why: str = "rebalance"

    @property
    def reason(self) -> str:
        source = f"subset {self.source}" if self.source else "no subset"
        return f"{self.why}: from {source} to subset {self.destination}, which has room"


class Rebalance(msgspec.Struct, frozen=True):
    request: str
    """The request being carried out ("" when there is none)."""
    evictions: tuple[Move, ...] = ()
    """Moves to start now, within every budget."""
    movable: int = 0
    """Pods that would move, including those in flight and those a budget holds back."""
    handled: str | None = None
    """The value to write as handled: nothing more can move."""
    waiting_for: str = ""
    """Why movable pods wait (a budget's name, the unavailable limit, room not usable yet)."""


def pending_request(ws: WorkloadSpread) -> str:
    """The request not yet handled, or ""."""
    request = ws.annotations.get(REQUEST_ANNOTATION, "")
    return request if request and request != ws.annotations.get(HANDLED_ANNOTATION) else ""


def unavailable_limit(max_unavailable: int | str, replicas: int) -> int:
    """``max(1, maxUnavailable)`` of ``replicas``; a value that does not parse reads as 25%."""
    try:
        value = scaled_value(max_unavailable, replicas, round_up=False)
    except IntOrStrError:
        value = scaled_value(DEFAULT_MAX_UNAVAILABLE, replicas, round_up=False)
    return max(1, value)


def _room(observed: SubsetStatus | None, fresh: SubsetStatus | None) -> tuple[int | None, bool]:
    """(room the webhook will use: None for unlimited, held: room it cannot use yet).

    Held is room in a subset closed by Adaptive scheduling, or room the status about to be
    written shows and the written one does not (a raised maxReplicas): the webhook would still
    steer a replacement elsewhere."""
    if fresh is None:
        return 0, False
    room_fresh = None if fresh.missing_replicas == -1 else fresh.missing_replicas
    if observed is None:
        return 0, room_fresh != 0
    room_seen = None if observed.missing_replicas == -1 else observed.missing_replicas
    values = [r for r in (room_seen, room_fresh) if r is not None]
    room = min(values) if values else None
    if observed.unschedulable or fresh.unschedulable:
        return 0, room != 0
    if room_seen == 0 and room_fresh != 0:
        return 0, True
    return room, False


def is_unsteered(ws: WorkloadSpread, pod: Pod) -> bool:
    """Matched to ``ws`` by the planner, although its admission should have steered it."""
    match = pod_state.matched(pod)
    return (match is not None and match.name == ws.name
            and pod_state.metadata(pod).get("annotations", {}).get(UNSTEERED_ANNOTATION)
            == "true")


def rebalance(
    ws: WorkloadSpread,
    *,
    status: Status,
    pods: Iterable[Pod],
    replicas: int,
    max_unavailable: int | str = DEFAULT_MAX_UNAVAILABLE,
    budgets: Sequence[Budget] = (),
    in_flight: Collection[str] = (),
    repair: bool = False,
) -> Rebalance:
    """What to move now for the pending request, or for repair (unsteered pods only);
    ``status`` is the one about to be written."""
    request = pending_request(ws)
    if not request and not repair:
        return Rebalance(request="")
    observed = {s.name: s for s in ws.status.subset_statuses}
    fresh = {s.name: s for s in status.subset_statuses}
    order = {s.name: i for i, s in enumerate(ws.subsets)}
    room: list[int | None] = []
    held: list[bool] = []
    for subset in ws.subsets:
        free, waits = _room(observed.get(subset.name), fresh.get(subset.name))
        room.append(free)
        held.append(waits)

    active = [p for p in pods if pod_status.active_deleting_truthy(p)]

    def rank(pod: Pod) -> int:
        match = pod_state.matched(pod)
        if match is None or match.name != ws.name:
            return len(order)
        return order.get(match.subset, len(order))

    counts = [0] * len(ws.subsets)
    for pod in active:
        if (here := rank(pod)) < len(ws.subsets):
            counts[here] += 1
    limits = initial_quota(ws, replicas)
    over = [max(0, counts[i] - limits.get(s.name, counts[i])) for i, s in enumerate(ws.subsets)]
    eligible = active if request else [p for p in active if is_unsteered(ws, p)]
    candidates = sorted(eligible, key=lambda p: (pod_state.key(p) not in in_flight, -rank(p),
                                                 pod_state.deletion_order_key(p),
                                                 pod_state.key(p)))
    moves: list[Move] = []
    blocked = False
    for pod in candidates:
        here = rank(pod)
        target = next((j for j in range(here) if room[j] != 0), None)
        if target is None and not request and here < len(ws.subsets) and over[here] > 0:
            # Repair: out of a subset beyond its maxReplicas, into any subset with room.
            target = next((j for j in range(len(ws.subsets)) if j != here and room[j] != 0),
                          None)
        if target is None:
            blocked = blocked or any(held[:here])
            continue
        free = room[target]
        if free is not None:
            room[target] = free - 1
        if here < len(ws.subsets):
            over[here] = max(0, over[here] - 1)
        source = ws.subsets[here].name if here < len(ws.subsets) else ""
        moves.append(Move(pod=pod_state.key(pod), source=source,
                          destination=ws.subsets[target].name,
                          why="rebalance" if request else "repair of an unsteered pod"))
    if not moves:
        handled = request if request and not blocked else None
        return Rebalance(request=request, handled=handled,
                         waiting_for="room the webhook cannot use yet" if blocked else "")
    ready = {pod_state.key(p) for p in active if has_ready_condition(p)}
    leaving = len(ready & set(in_flight))
    unavailable = max(0, replicas - len(ready)) + leaving
    allowance = unavailable_limit(max_unavailable, replicas) - unavailable
    waiting_for = "the unavailable limit"
    for budget in budgets:
        if budget.allowed - leaving < allowance:
            allowance = budget.allowed - leaving
            waiting_for = f"{budget.kind} {budget.name}"
    fresh_moves = [m for m in moves if m.pod not in in_flight]
    start = fresh_moves[:max(0, allowance)]
    return Rebalance(request=request, evictions=tuple(start), movable=len(moves),
                     waiting_for=waiting_for if len(start) < len(fresh_moves) else "")


def budgets_for(
    pods: Sequence[Pod],
    *,
    namespace: str,
    target: tuple[str, str, str] | None,
    disruption_budgets: Iterable[Mapping[str, Any]] = (),
    unavailable_budgets: Iterable[Mapping[str, Any]] = (),
) -> list[Budget]:
    """The budgets of ``namespace`` covering any of the workload's pods.

    A PodDisruptionBudget by its selector (an empty selector covers every pod, as in
    ``policy/v1``); a PodUnavailableBudget by its ``targetRef`` naming the workload (``target``:
    API group, kind, name) or else by a non-empty selector. Both are read as plain JSON.
    """
    labels = [pod_state.pod_labels(p) for p in pods]
    out: list[Budget] = []
    for pdb in disruption_budgets:
        if _namespace(pdb) != namespace:
            continue
        selector = as_map(pdb.get("spec")).get("selector")
        if isinstance(selector, Mapping) and any(matches(selector, ls) for ls in labels):
            allowed = as_int(as_map(pdb.get("status")).get("disruptionsAllowed")) or 0
            out.append(Budget(kind="PodDisruptionBudget", name=_name(pdb), allowed=allowed))
    for pub in unavailable_budgets:
        if _namespace(pub) != namespace:
            continue
        spec = as_map(pub.get("spec"))
        ref = spec.get("targetRef")
        if isinstance(ref, Mapping):
            covers = target is not None and (
                api_group(as_str(ref.get("apiVersion"))), as_str(ref.get("kind")),
                as_str(ref.get("name"))) == target
        else:
            selector = spec.get("selector")
            covers = (isinstance(selector, Mapping) and bool(selector)
                      and any(matches(selector, ls) for ls in labels))
        if covers:
            allowed = as_int(as_map(pub.get("status")).get("unavailableAllowed")) or 0
            out.append(Budget(kind="PodUnavailableBudget", name=_name(pub), allowed=allowed))
    return out


def _namespace(obj: Mapping[str, Any]) -> str:
    return as_str(as_map(obj.get("metadata")).get("namespace")) or "default"


def _name(obj: Mapping[str, Any]) -> str:
    return as_str(as_map(obj.get("metadata")).get("name"))
