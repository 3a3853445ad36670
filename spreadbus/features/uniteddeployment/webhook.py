"""The UnitedDeployment part of a webhook replica: its two handlers, no view of the cluster."""

from __future__ import annotations

from typing import Any

from spreadbus.engine.admission_chain import AdmissionHandler
from spreadbus.engine.feature import WebhookContext, WebhookSide
from spreadbus.features.uniteddeployment.admission import handlers
from spreadbus.features.uniteddeployment.core.model import NAME


class UnitedDeploymentWebhook(WebhookSide):
    """Defaulting (``/mutate-uniteddeployment``) and validation (``/validate-uniteddeployment``),
    both failing closed as Kruise's do; neither reads the observations."""

    handlers = (
        AdmissionHandler(feature=NAME, path="/mutate-uniteddeployment",
                         decide=handlers.mutate, failure_policy="Fail"),
        AdmissionHandler(feature=NAME, path="/validate-uniteddeployment",
                         decide=handlers.validate, failure_policy="Fail"),
    )


async def webhook_side(ctx: WebhookContext[Any]) -> UnitedDeploymentWebhook:
    """Any settings model: the handlers read none of the feature's settings."""
    return UnitedDeploymentWebhook()
