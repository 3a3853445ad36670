"""UnitedDeployment as a feature: what the watcher, planner, actuator, webhook and CLI run of it.

The planner reconciles every UnitedDeployment into one workload per subset (created, updated and
deleted by plans), its ControllerRevisions, its pods' reservation labels and its status; the
webhook defaults and validates UnitedDeployments as Kruise's webhooks do.
"""

from __future__ import annotations

from typing import Final

from spreadbus.engine.feature import Feature
from spreadbus.features.uniteddeployment.admission.side import webhook_side
from spreadbus.features.uniteddeployment.offline import offline_plan
from spreadbus.features.uniteddeployment.offline_validation import validate_offline

NAME: Final = "uniteddeployment"

FEATURE: Final = Feature(
    name=NAME,
    watches=(
        "v1/pods",
        "apps/v1/deployments",
        "apps/v1/replicasets",
        "apps/v1/statefulsets",
        "apps/v1/controllerrevisions",
        "apps.kruise.io/v1alpha1/clonesets",
        "apps.kruise.io/v1beta1/statefulsets",
        "apps.kruise.io/v1alpha1/uniteddeployments",
    ),
    webhook=webhook_side,
    validators={("apps.kruise.io", "UnitedDeployment"): validate_offline},
    offline_plan=offline_plan,
)
