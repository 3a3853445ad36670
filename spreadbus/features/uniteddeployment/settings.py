"""UnitedDeployment's settings, and which services read each."""

from __future__ import annotations

from typing import Annotated

from spreadbus.engine.feature_settings import FeatureSettings, UsedBy


class UnitedDeploymentSettings(FeatureSettings):
    uniteddeployment_min_interval_seconds: Annotated[float, UsedBy("planner")] = 0.25
    """Reconcile one UnitedDeployment at most this often; changes in between are taken
    together (its status is then rewritten a few times per second, not once per pod event)."""
    uniteddeployment_control_plane: Annotated[bool, UsedBy("planner", "webhook")] = False
    """The UnitedDeployments' cluster is a control plane (a multi-cluster host) that runs no
    workloads: a subset without a ``targetCluster`` is refused by the webhook and provisioned
    nowhere by the planner, which says so in the status."""
