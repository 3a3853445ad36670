"""What each webhook replica runs of PodUnavailableBudget.

Pod DELETE, eviction and UPDATE decided and spent on the budget bucket (``/validate-pod``; a
budget that cannot be spent refuses), pod CREATE linked to its budget (``/mutate-pod``), PUBs
validated (``/validate-podunavailablebudget``, fail closed), all from one fold of the
observations (:mod:`.admission.view`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from spreadbus.engine.admission_chain import AdmissionHandler
from spreadbus.engine.feature import WebhookContext, WebhookSide
from spreadbus.features.podunavailablebudget.admission.budget_bucket import (
    budget_bucket,
    budget_store,
)
from spreadbus.features.podunavailablebudget.admission.handlers import BudgetAdmission
from spreadbus.features.podunavailablebudget.admission.host_budgets import (
    HostBudgetClient,
    SpendResponder,
)
from spreadbus.features.podunavailablebudget.admission.view import BudgetView
from spreadbus.features.podunavailablebudget.core.model import NAME
from spreadbus.features.podunavailablebudget.settings import PodUnavailableBudgetSettings


class BudgetWebhook(WebhookSide):
    def __init__(self, admission: BudgetAdmission, view: BudgetView,
                 responder: SpendResponder | None = None,
                 host: HostBudgetClient | None = None) -> None:
        self.admission = admission
        self.view = view
        self.responder = responder
        self.host = host
        self.handlers = (
            AdmissionHandler(feature=NAME, path="/mutate-pod", decide=admission.mutate_pod),
            AdmissionHandler(feature=NAME, path="/validate-pod", decide=admission.validate_pod),
            AdmissionHandler(feature=NAME, path="/validate-podunavailablebudget",
                             decide=admission.validate_budget, failure_policy="Fail"),
        )

    def apply_message(self, seq: int, subject: str, data: bytes) -> None:
        self.view.apply_message(seq, subject, data)

    async def start(self) -> None:
        if self.responder is not None:
            await self.responder.start()

    async def stop(self) -> None:
        if self.responder is not None:
            await self.responder.stop()
        if self.host is not None:
            await self.host.stop()

    def gauges(self) -> Mapping[str, tuple[str, Callable[[], float]]]:
        admission = self.admission
        return {
            "spreadbus_webhook_budget_spent": ("Disruptions a PodUnavailableBudget allowed",
                                               lambda: admission.spent),
            "spreadbus_webhook_budget_refused": ("Disruptions a PodUnavailableBudget refused",
                                                 lambda: admission.refused),
            "spreadbus_webhook_budget_conflicts": ("Budget compare-and-set conflicts",
                                                   lambda: admission.store.conflicts),
        }


async def webhook_side(ctx: WebhookContext[PodUnavailableBudgetSettings]) -> BudgetWebhook:
    assert ctx.nc is not None, "the PodUnavailableBudget handlers spend budgets on NATS"
    kv = await budget_bucket(ctx.nc)
    view = BudgetView(ctx.cluster, ctx.pods)
    deadline = ctx.settings.pub_ledger_deadline_seconds
    # Every webhook answers members' spends on its cluster's budgets (a host's; a cluster with
    # no members is asked nothing) and asks the host for pods of copies (a member's; a cluster
    # with no copies asks nothing).
    host = HostBudgetClient(ctx.nc, ctx.cluster, deadline_seconds=deadline)
    admission = BudgetAdmission(
        view=view,
        store=budget_store(kv, deadline_seconds=deadline),
        settings=ctx.settings,
        clock=ctx.clock,
        host=host,
        workload=view.workload,
    )
    return BudgetWebhook(admission, view, SpendResponder(ctx.nc, admission, view.binding,
                                                        view.registers), host)
