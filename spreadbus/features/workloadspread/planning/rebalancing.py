"""The rule's side of rebalancing: evictions in flight, the budgets on the projection.

:func:`~spreadbus.features.workloadspread.core.rebalance.rebalance` is pure; what it needs that
only the planner knows is kept here:

- the evictions of the rule's pods that are on their way, read from the decision log (the
  projected ``PLANS`` and ``OUTCOMES``), so that the next plan neither sends them again nor counts
  their pods as available: a plan not answered yet, or applied less than ``IN_FLIGHT_SECONDS``
  ago while its pod is still seen active (the deletion not observed yet). An eviction that failed
  is not on its way: one a budget refused is wanted again and decided again after its backoff
  (:mod:`spreadbus.projection.refusal_backoff`), so a rebalance never stalls on a refusal while
  the budget has room later. Being read from the log, this is the same after a restart or on
  another replica, and replaying the log gives the same answer;
- the PodDisruptionBudgets and PodUnavailableBudgets of the WorkloadSpread's namespace, read as
  plain JSON from the projection, only while a request is pending;
- a wake-up ``RECHECK_SECONDS`` later while pods wait to move: budgets and readiness change
  without the WorkloadSpread changing.

Only while a request is pending, or an unsteered pod is to be put right (repair, on by
default), does a plan cost every pod of the workload (the moves depend on all of them) and every
budget of the cluster; otherwise rebalancing costs one look at each pod's annotations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubesemantics import pod_status
from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.model import Status, WorkloadSpread
from spreadbus.features.workloadspread.core.pod_state import Pod
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
from spreadbus.projection.decision_log import DecisionLog, slot_of
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
    rule: str = "workloadspread"
    """The rule whose eviction plans are read from the decision log."""

    def step(self, view: KubeProjection, ws: WorkloadSpread, *, status: Status,
             tally: SpreadTally, workload: Mapping[str, Any] | None, now: float,
             busy: set[str], plans: DecisionLog) -> Step:
        """This plan's moves; ``busy``: pods another decision of the same plan evicts."""
        pods = tally.pods()
        repairing = self.repair and any(is_unsteered(ws, p) for p in pods)
        if not (pending_request(ws) or repairing) or ws.target_ref is None:
            return Step()
        try:
            replicas = workload_replicas(ws, workload, whitelist=self.whitelist)
        except ReplicasPathError:
            return Step()
        moving = self.evictions_on_their_way(plans, pods, now)
        ref = ws.target_ref
        budgets = budgets_for(
            pods, namespace=ws.namespace, target=(ref.group, ref.kind, ref.name),
            disruption_budgets=(o for _, o in view.iter_decoded(self.cluster, *BUDGETS[0])),
            unavailable_budgets=(o for _, o in view.iter_decoded(self.cluster, *BUDGETS[1])),
        )
        outcome = rebalance(ws, status=status, pods=pods, replicas=replicas,
                            max_unavailable=self.max_unavailable, budgets=budgets,
                            in_flight=moving | busy, repair=repairing)
        evictions = tuple(m for m in outcome.evictions if m.pod not in busy)
        handled = None
        if outcome.handled is not None:
            handled = {"metadata": {"annotations": {HANDLED_ANNOTATION: outcome.handled}}}
        wake = now + RECHECK_SECONDS if outcome.movable else None
        return Step(evictions=evictions, handled=handled, wake_at=wake)

    def evictions_on_their_way(self, plans: DecisionLog, pods: Iterable[Pod],
                               now: float) -> set[str]:
        """The active pods whose newest eviction plan is unanswered, or applied so recently
        that the pod's deletion may not be observed yet."""
        out: set[str] = set()
        for pod in pods:
            if not pod_status.active_deleting_truthy(pod):
                continue
            metadata = pod_state.metadata(pod)
            record = plans.newest(slot_of(
                self.cluster, self.rule, "evict", "", "pods",
                str(metadata.get("namespace") or ""), str(metadata.get("name") or "")))
            if record is not None and (
                    record.status == "in_flight"
                    or (record.status == "applied" and now - record.ts < IN_FLIGHT_SECONDS)):
                out.add(pod_state.key(pod))
        return out
