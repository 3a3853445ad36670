"""WorkloadSpread as a feature: what the watcher, planner, actuator, webhook and CLI run of it.

- Planner: :class:`~.planning.rule.WorkloadSpreadRule` (status, deletion costs, Adaptive
  evictions, matched annotations, rebalancing on request) over the projection, with the
  reservation bucket's stream folded beside it (:mod:`.planning.reservations`).
- Webhook: pod CREATE is steered into a subset (``/mutate-pod``), pod DELETE records the freed
  slot (``/validate-pod``), WorkloadSpreads are validated (``/validate-workloadspread``, fail
  closed) and converted between API versions (``/convert``), all from one view of the
  observations (:mod:`.admission`).

Its settings are :class:`~.settings.WorkloadSpreadSettings`: the whitelist (watcher, planner,
webhook), the Adaptive recovery, the planning interval and the rebalance limit (planner), the
reservation deadline (webhook).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Final

from events import subjects
from events.messages import Verb
from events.reservations import BUCKET as RESERVATIONS_BUCKET
from events.reservations import STREAM as RESERVATIONS_STREAM
from spreadbus.engine.admission_chain import AdmissionHandler
from spreadbus.engine.bus_access import BusAccess
from spreadbus.engine.conversion_review import Convert
from spreadbus.engine.feature import (
    Feature,
    PlannerContext,
    PlannerSide,
    SideStream,
    WebhookContext,
    WebhookSide,
)
from spreadbus.engine.plan_grants import Governor, Kind, PlanGrant
from spreadbus.features.workloadspread.admission import conversion
from spreadbus.features.workloadspread.admission.admission import SpreadAdmission
from spreadbus.features.workloadspread.admission.reservation_bucket import (
    SPEC as RESERVATIONS_SPEC,
)
from spreadbus.features.workloadspread.admission.reservation_bucket import reservation_bucket
from spreadbus.features.workloadspread.admission.reservation_ledger import reservation_store
from spreadbus.features.workloadspread.admission.spread_hints import HINTS_PREFIX
from spreadbus.features.workloadspread.admission.view import View
from spreadbus.features.workloadspread.admission.view_progress import ViewProgress
from spreadbus.features.workloadspread.core.rebalance import HANDLED_ANNOTATION
from spreadbus.features.workloadspread.core.workload_kinds import workload_kinds
from spreadbus.features.workloadspread.offline import (
    offline_admit,
    offline_plan,
    validate_offline,
)
from spreadbus.features.workloadspread.planning.reservations import (
    RESERVATIONS_RESOURCE,
    ReservationLedgers,
)
from spreadbus.features.workloadspread.planning.rule import WorkloadSpreadRule
from spreadbus.features.workloadspread.settings import WorkloadSpreadSettings

log = logging.getLogger(__name__)

NAME: Final = "workloadspread"
_GOVERNOR: Final = Governor(group="apps.kruise.io", kind="WorkloadSpread",
                            resource="workloadspreads")


def _itself(verb: Verb, writes: tuple[tuple[str, ...], ...]) -> PlanGrant:
    """A write of the WorkloadSpread the plan is for."""
    return PlanGrant(rule=WorkloadSpreadRule.name, verb=verb, group=_GOVERNOR.group,
                     resource=_GOVERNOR.resource, writes=writes, governor=_GOVERNOR)


def _its_pods(verb: Verb, writes: tuple[tuple[str, ...], ...] = ()) -> PlanGrant:
    """A plan on a pod whose controller chain reaches the workload the WorkloadSpread targets
    (a Deployment's through its ReplicaSet), whatever its annotations say: an unsteered pod has
    none."""
    return PlanGrant(rule=WorkloadSpreadRule.name, verb=verb, group="", resource="pods",
                     writes=writes, governor=_GOVERNOR, relation="governed",
                     reach="spec.targetRef", via=(Kind("apps", "ReplicaSet", "replicasets"),))
LISTEN_TIMEOUT_SECONDS: Final = 5.0
"""How long start-up waits to hear other replicas before serving anyway (a warning says so)."""


async def planner_side(ctx: PlannerContext[WorkloadSpreadSettings]) -> PlannerSide:
    ledgers = ReservationLedgers(ctx.cluster)
    rule = WorkloadSpreadRule(
        ctx.cluster,
        reservations=ledgers,
        whitelist=ctx.settings.whitelist(),
        recover_after_seconds=ctx.settings.adaptive_recover_seconds,
        min_interval_seconds=ctx.settings.workloadspread_min_interval_seconds,
        max_unavailable=ctx.settings.max_unavailable(),
        repair_unsteered=ctx.settings.repair_unsteered_pods,
    )

    def fold(seq: int, subject: str, data: bytes) -> tuple[str, str] | None:
        changed = ledgers.apply(seq, subject, data)
        return None if changed is None else (RESERVATIONS_RESOURCE, changed)

    def reset() -> None:
        ledgers.last_seq = 0

    return PlannerSide(
        rules=[rule],
        streams=[SideStream(stream=RESERVATIONS_STREAM, fold=fold, reset=reset)],
    )


class SpreadWebhook(WebhookSide):
    """The WorkloadSpread handlers of one webhook replica, over its own view."""

    def __init__(self, admission: SpreadAdmission) -> None:
        self.admission = admission
        self.view = admission.view
        self.progress = admission.progress
        self.handlers = (
            AdmissionHandler(feature=NAME, path="/mutate-pod", decide=admission.mutate_pod),
            AdmissionHandler(feature=NAME, path="/validate-pod",
                             decide=admission.record_pod_removal),
            AdmissionHandler(feature=NAME, path="/validate-workloadspread",
                             decide=admission.validate_workloadspread, failure_policy="Fail"),
        )
        self.conversions: Mapping[str, Convert] = {"/convert": conversion.convert}

    def apply_message(self, seq: int, subject: str, data: bytes) -> None:
        self.view.apply_message(seq, subject, data)

    def progressed(self) -> None:
        self.progress.notify()

    def gauges(self) -> Mapping[str, tuple[str, Callable[[], float]]]:
        admission = self.admission
        return {
            "spreadbus_webhook_pods_steered": ("Pods steered into a subset",
                                               lambda: admission.steered),
            "spreadbus_webhook_ledger_writes": ("Reservation batches committed",
                                                lambda: admission.ledger.writes),
            "spreadbus_webhook_ledger_conflicts": ("Reservation compare-and-set conflicts",
                                                   lambda: admission.ledger.conflicts),
        }

    async def start(self) -> None:
        try:
            # Before the first review: a replica that cannot yet hear which WorkloadSpreads the
            # others allowed could admit a just-created workload's first pod unsteered.
            await asyncio.wait_for(self.admission.hints.listening(), LISTEN_TIMEOUT_SECONDS)
        except Exception as exc:
            log.warning("not yet hearing other replicas' allowed WorkloadSpreads: %r", exc)

    async def stop(self) -> None:
        await self.admission.announcements.drain(timeout=1.0)


async def webhook_side(ctx: WebhookContext[WorkloadSpreadSettings]) -> SpreadWebhook:
    assert ctx.nc is not None, "the WorkloadSpread handlers reserve slots on NATS"
    kv = await reservation_bucket(ctx.nc)
    whitelist = ctx.settings.whitelist()
    view = View(cluster=ctx.cluster, kinds=workload_kinds(whitelist))
    admission = SpreadAdmission(
        view=view,
        ledger=reservation_store(
            kv, deadline_seconds=ctx.settings.ledger_deadline_seconds
        ),
        progress=ViewProgress(view),
        nc=ctx.nc,
        whitelist=whitelist,
        clock=ctx.clock,
        stream_drained=ctx.stream_drained,
    )
    return SpreadWebhook(admission)


FEATURE: Final = Feature(
    name=NAME,
    settings=WorkloadSpreadSettings,
    watches=(
        "v1/pods",
        "v1/nodes",
        *workload_kinds().resources(),
        "apps/v1/controllerrevisions",
        "apps.kruise.io/v1alpha1/workloadspreads",
        "policy/v1/poddisruptionbudgets",  # rebalancing stays within disruption budgets
        "policy.kruise.io/v1alpha1/podunavailablebudgets",
    ),
    plan_grants=(
        # Deletion cost, matched annotation, the subset's labels and annotations: metadata only.
        _its_pods("patch", (("metadata", "annotations", "*"), ("metadata", "labels", "*"))),
        _itself("patch_status", (("status",),)),
        # Adaptive rescheduling, rebalancing, unsteered pods put right.
        _its_pods("evict"),
        _itself("patch", (("metadata", "annotations", HANDLED_ANNOTATION),)),
    ),
    bus={
        # Reservations in their bucket, announced admissions, hints between replicas.
        "webhook": BusAccess(publish=(f"{subjects.ADMISSIONS}.>", f"{HINTS_PREFIX}.>"),
                             subscribe=(f"{HINTS_PREFIX}.>",), buckets=(RESERVATIONS_BUCKET,)),
        "planner": BusAccess(reads=(RESERVATIONS_STREAM,)),
    },
    buckets=(RESERVATIONS_SPEC,),
    planner=planner_side,
    webhook=webhook_side,
    validators={("apps.kruise.io", "WorkloadSpread"): validate_offline},
    offline_admit=offline_admit,
    offline_plan=offline_plan,
)
