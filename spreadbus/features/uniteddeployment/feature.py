"""UnitedDeployment as a feature: what the watcher, planner, actuator, webhook and CLI run of it.

The planner reconciles every UnitedDeployment into one workload per subset (created, updated and
deleted by plans), its ControllerRevisions, its pods' reservation labels and its status; the
webhook defaults and validates UnitedDeployments as Kruise's webhooks do.
"""

from __future__ import annotations

from typing import Final

from spreadbus.engine.feature import Feature, PlannerContext, PlannerSide
from spreadbus.features.uniteddeployment.admission.side import webhook_side
from spreadbus.features.uniteddeployment.core.reconcile import reconcile
from spreadbus.features.uniteddeployment.offline import offline_plan
from spreadbus.features.uniteddeployment.offline_validation import validate_offline
from spreadbus.features.uniteddeployment.planning.rule import UnitedDeploymentRule
from spreadbus.features.uniteddeployment.settings import UnitedDeploymentSettings

NAME: Final = "uniteddeployment"


async def planner_side(ctx: PlannerContext[UnitedDeploymentSettings]) -> PlannerSide:
    rule = UnitedDeploymentRule(
        ctx.cluster, reconcile=reconcile,
        min_interval_seconds=ctx.settings.uniteddeployment_min_interval_seconds,
    )
    return PlannerSide(rules=[rule])


_WORKLOAD_RESOURCES: Final = (
    ("apps", "statefulsets"),
    ("apps", "deployments"),
    ("apps.kruise.io", "statefulsets"),
    ("apps.kruise.io", "clonesets"),
    ("apps", "controllerrevisions"),
)

FEATURE: Final = Feature(
    name=NAME,
    settings=UnitedDeploymentSettings,
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
    planner=planner_side,
    plan_targets=(
        *((verb, group, resource) for group, resource in _WORKLOAD_RESOURCES
          for verb in ("create", "patch", "delete")),  # subset workloads and revisions
        ("patch", "", "pods"),  # reservation labels
        ("patch_status", "apps.kruise.io", "uniteddeployments"),  # status
        ("patch", "apps.kruise.io", "uniteddeployments"),  # rebalance handled
    ),
    webhook=webhook_side,
    validators={("apps.kruise.io", "UnitedDeployment"): validate_offline},
    offline_plan=offline_plan,
)
