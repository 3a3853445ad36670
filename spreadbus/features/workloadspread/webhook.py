"""What each webhook replica runs of WorkloadSpread: pod CREATE is steered into a subset
(``/mutate-pod``), pod DELETE records the freed slot (``/validate-pod``), WorkloadSpreads are
validated (``/validate-workloadspread``, fail closed) and converted between API versions
(``/convert``), all from one view of the observations (:mod:`.admission`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Final

from spreadbus.engine.admission_chain import AdmissionHandler
from spreadbus.engine.conversion_review import Convert
from spreadbus.engine.feature import WebhookContext, WebhookSide
from spreadbus.features.workloadspread.admission import conversion
from spreadbus.features.workloadspread.admission.admission import SpreadAdmission
from spreadbus.features.workloadspread.admission.reservation_bucket import reservation_bucket
from spreadbus.features.workloadspread.admission.reservation_ledger import reservation_store
from spreadbus.features.workloadspread.admission.view import View
from spreadbus.features.workloadspread.admission.view_progress import ViewProgress
from spreadbus.features.workloadspread.core.model import NAME
from spreadbus.features.workloadspread.core.workload_kinds import workload_kinds
from spreadbus.features.workloadspread.settings import WorkloadSpreadSettings

log = logging.getLogger(__name__)

LISTEN_TIMEOUT_SECONDS: Final = 5.0
"""How long start-up waits to hear other replicas before serving anyway (a warning says so)."""


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
    view = View(cluster=ctx.cluster, kinds=workload_kinds(whitelist), pods=ctx.pods)
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
