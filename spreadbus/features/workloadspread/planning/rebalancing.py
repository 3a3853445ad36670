"""The rule's side of rebalancing: evictions in flight, the budgets on the projection.

:func:`~spreadbus.features.workloadspread.core.rebalance.rebalance` is pure; what it needs that
only the planner knows is kept here:

- the rebalance evictions this planner sent and has not yet seen land (the pod still active), so
  that the next plan neither sends them again nor counts their pods as available; an eviction
  not seen within ``IN_FLIGHT_SECONDS`` (refused by a budget after all, or lost) is forgotten and
  may be planned again;
- the PodDisruptionBudgets and PodUnavailableBudgets of the WorkloadSpread's namespace, read as
  plain JSON from the projection, only while a request is pending;
- a wake-up ``RECHECK_SECONDS`` later while pods wait to move: budgets and readiness change
  without the WorkloadSpread changing.

Only while a request is pending, or an unsteered pod is to be put right (repair, on by
default), does a plan cost every pod of the workload (the moves depend on all of them) and every
budget of the cluster; otherwise rebalancing costs one look at each pod's annotations.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.model import Status, WorkloadSpread
from spreadbus.features.workloadspread.core.rebalance import (
    DEFAULT_MAX_UNAVAILABLE,
    HANDLED_ANNOTATION,
    Move,
    budgets_for,
    is_unsteered,
    pending_request,
    rebalance,
)
from spreadbus.features.workloadspread.core.target import ReplicasPathError, workload_replicas
from spreadbus.features.workloadspread.planning.spread_tally import SpreadTally
from spreadbus.projection.kube_state import KubeProjection

IN_FLIGHT_SECONDS: Final = 30.0
RECHECK_SECONDS: Final = 2.0
BUDGETS: Final = (("policy", "poddisruptionbudgets"),
                  ("policy.kruise.io", "podunavailablebudgets"))


@dataclass(frozen=True)
class Step:
    evictions: tuple[Move, ...] = ()
    handled: dict[str, Any] | None = None
    """The WorkloadSpread patch recording the request as handled."""
    wake_at: float | None = None


@dataclass
class Rebalancing:
    cluster: str
    whitelist: Whitelist
    max_unavailable: int | str = DEFAULT_MAX_UNAVAILABLE
    repair: bool = True
    """Move unsteered pods without a request (:mod:`~.core.rebalance`)."""
    _moving: dict[str, dict[str, float]] = field(default_factory=dict)
    """WorkloadSpread key -> pod key -> when its eviction was planned."""

    def forget(self, okey: str) -> None:
        self._moving.pop(okey, None)

    def step(self, view: KubeProjection, okey: str, ws: WorkloadSpread, *, status: Status,
             tally: SpreadTally, workload: Mapping[str, Any] | None, now: float,
             busy: set[str]) -> Step:
        """This plan's moves; ``busy``: pods another decision of the same plan evicts."""
        pods = tally.pods()
        repairing = self.repair and any(is_unsteered(ws, p) for p in pods)
        if not (pending_request(ws) or repairing) or ws.target_ref is None:
            self.forget(okey)
            return Step()
        try:
            replicas = workload_replicas(ws, workload, whitelist=self.whitelist)
        except ReplicasPathError:
            return Step()
        moving = {key: at for key, at in self._moving.get(okey, {}).items()
                  if now - at < IN_FLIGHT_SECONDS
                  and (pod := tally.pod(key)) is not None and pod_state.is_active(pod)}
        ref = ws.target_ref
        budgets = budgets_for(
            pods, namespace=ws.namespace, target=(ref.group, ref.kind, ref.name),
            disruption_budgets=(o for _, o in view.iter_decoded(self.cluster, *BUDGETS[0])),
            unavailable_budgets=(o for _, o in view.iter_decoded(self.cluster, *BUDGETS[1])),
        )
        outcome = rebalance(ws, status=status, pods=pods, replicas=replicas,
                            max_unavailable=self.max_unavailable, budgets=budgets,
                            in_flight=set(moving) | busy, repair=repairing)
        evictions = tuple(m for m in outcome.evictions if m.pod not in busy)
        for move in evictions:
            moving[move.pod] = now
        self._moving[okey] = moving
        handled = None
        if outcome.handled is not None:
            handled = {"metadata": {"annotations": {HANDLED_ANNOTATION: outcome.handled}}}
            self.forget(okey)
        wake = now + RECHECK_SECONDS if outcome.movable else None
        return Step(evictions=evictions, handled=handled, wake_at=wake)
