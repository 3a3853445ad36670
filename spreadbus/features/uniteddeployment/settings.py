"""UnitedDeployment's settings, and which services read each."""

from __future__ import annotations

from typing import Annotated

from spreadbus.engine.feature_settings import FeatureSettings, UsedBy


class UnitedDeploymentSettings(FeatureSettings):
    uniteddeployment_min_interval_seconds: Annotated[float, UsedBy("planner")] = 0.25
    """Reconcile one UnitedDeployment at most this often; changes in between are taken
    together (its status is then rewritten a few times per second, not once per pod event)."""
