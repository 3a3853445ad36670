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
from spreadbus.features.podunavailablebudget.admission.view import BudgetView
from spreadbus.features.podunavailablebudget.core.model import NAME
from spreadbus.features.podunavailablebudget.settings import PodUnavailableBudgetSettings


class BudgetWebhook(WebhookSide):
    def __init__(self, admission: BudgetAdmission, view: BudgetView) -> None:
        self.admission = admission
        self.view = view
        self.handlers = (
            AdmissionHandler(feature=NAME, path="/mutate-pod", decide=admission.mutate_pod),
            AdmissionHandler(feature=NAME, path="/validate-pod", decide=admission.validate_pod),
            AdmissionHandler(feature=NAME, path="/validate-podunavailablebudget",
                             decide=admission.validate_budget, failure_policy="Fail"),
        )

    def apply_message(self, seq: int, subject: str, data: bytes) -> None:
        self.view.apply_message(seq, subject, data)

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
    admission = BudgetAdmission(
        view=view,
        store=budget_store(kv, deadline_seconds=ctx.settings.pub_ledger_deadline_seconds),
        settings=ctx.settings,
        clock=ctx.clock,
    )
    return BudgetWebhook(admission, view)
