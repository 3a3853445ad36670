"""The UnitedDeployment part of a webhook replica: its two handlers, and the cluster registry it
has seen (to look up the clusters subsets target)."""

from __future__ import annotations

from functools import partial
from typing import Any

from spreadbus.engine.admission_chain import AdmissionHandler
from spreadbus.engine.feature import WebhookContext, WebhookSide
from spreadbus.features.uniteddeployment.admission import handlers
from spreadbus.features.uniteddeployment.admission.cluster_registry_view import (
    ClusterRegistryView,
)
from spreadbus.features.uniteddeployment.core.model import NAME


class UnitedDeploymentWebhook(WebhookSide):
    """Defaulting (``/mutate-uniteddeployment``) and validation (``/validate-uniteddeployment``),
    both failing closed as Kruise's do; validation reads the Cluster objects observed, nothing
    else."""

    def __init__(self, *, control_plane: bool = False) -> None:
        self.registry = ClusterRegistryView()
        self.handlers = (
            AdmissionHandler(feature=NAME, path="/mutate-uniteddeployment",
                             decide=handlers.mutate, failure_policy="Fail"),
            AdmissionHandler(feature=NAME, path="/validate-uniteddeployment",
                             decide=partial(handlers.validate, clusters=self.registry.clusters,
                                            control_plane=control_plane),
                             failure_policy="Fail"),
        )

    def apply_message(self, seq: int, subject: str, data: bytes) -> None:
        self.registry.apply_message(subject, data)


async def webhook_side(ctx: WebhookContext[Any]) -> UnitedDeploymentWebhook:
    """Any settings model: the handlers read only ``uniteddeployment_control_plane``, when the
    model has it."""
    return UnitedDeploymentWebhook(
        control_plane=getattr(ctx.settings, "uniteddeployment_control_plane", False) is True)
