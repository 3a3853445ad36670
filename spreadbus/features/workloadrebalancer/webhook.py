"""What each webhook replica runs of WorkloadRebalancer: the validation of the object alone
(``/validate-workloadrebalancer``, fail closed)."""

from __future__ import annotations

from spreadbus.engine.admission_chain import AdmissionHandler
from spreadbus.engine.feature import WebhookContext, WebhookSide
from spreadbus.features.workloadrebalancer.admission import handlers
from spreadbus.features.workloadrebalancer.core.model import NAME


class RebalancerWebhook(WebhookSide):
    handlers = (AdmissionHandler(feature=NAME, path="/validate-workloadrebalancer",
                                 decide=handlers.validate, failure_policy="Fail"),)


async def webhook_side(ctx: WebhookContext) -> RebalancerWebhook:
    return RebalancerWebhook()
