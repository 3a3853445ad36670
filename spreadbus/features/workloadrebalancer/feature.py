"""WorkloadRebalancer as a feature: what the watcher, planner, actuator, webhook and CLI run of it.

- Planner: :class:`~.planning.rule.WorkloadRebalancerRule` writes the status, sets the
  rebalance request on the governing UnitedDeployment or WorkloadSpread (which that feature
  carries out), or Karmada's ``rescheduleTriggeredAt`` on the workload's ResourceBinding (which
  propagation's scheduler carries out), and deletes the rebalancer once its TTL has passed.
- Webhook: WorkloadRebalancers are validated (``/validate-workloadrebalancer``, fail closed).
- CLI: ``spreadbus plan`` shows ``workloadRebalancers``, ``spreadbus validate`` checks the kind.
"""

from __future__ import annotations

from typing import Final

from kubesemantics.karmada_binding import WORK_GROUP
from spreadbus.engine.feature import Feature
from spreadbus.engine.plan_grants import Governor, PlanGrant
from spreadbus.engine.side_import import webhook_side_in
from spreadbus.features.workloadrebalancer.core.binding_trigger import TRIGGER, trigger_follows
from spreadbus.features.workloadrebalancer.core.model import (
    GROUP,
    KIND,
    NAME,
    REQUEST_ANNOTATION,
    RESOURCE,
)
from spreadbus.features.workloadrebalancer.offline import offline_plan, validate_offline
from spreadbus.features.workloadrebalancer.planner import planner_side
from spreadbus.features.workloadrebalancer.planning.rule import WorkloadRebalancerRule

_GOVERNOR: Final = Governor(group=GROUP, kind=KIND, resource=RESOURCE, namespaced=False)


FEATURE: Final = Feature(
    name=NAME,
    watches=(
        f"{GROUP}/v1alpha1/{RESOURCE}",
        "apps.kruise.io/v1alpha1/workloadspreads",
        "apps.kruise.io/v1alpha1/uniteddeployments",
        "apps/v1/deployments",
        "apps/v1/replicasets",
        "apps/v1/statefulsets",
    ),
    plan_grants=(
        PlanGrant(rule=WorkloadRebalancerRule.name, verb="patch_status", group=GROUP,
                  resource=RESOURCE, writes=(("status",),), governor=_GOVERNOR),
        # ttlSecondsAfterFinished
        PlanGrant(rule=WorkloadRebalancerRule.name, verb="delete", group=GROUP, resource=RESOURCE,
                  governor=_GOVERNOR),
        # The rebalance request, on the governing placement of a workload the rebalancer names:
        # a UnitedDeployment it names, or a WorkloadSpread whose targetRef it names (any
        # namespace: a rebalancer is cluster-scoped).
        *(PlanGrant(rule=WorkloadRebalancerRule.name, verb="patch", group="apps.kruise.io",
                    resource=resource, writes=(("metadata", "annotations", REQUEST_ANNOTATION),),
                    governor=_GOVERNOR, relation="named", names="spec.workloads",
                    names_through="spec.targetRef")
          for resource in ("workloadspreads", "uniteddeployments")),
        # Karmada's trigger, on the (Cluster)ResourceBinding of a resource it names
        # (spec.resource).
        *(PlanGrant(rule=WorkloadRebalancerRule.name, verb="patch", group=WORK_GROUP,
                    resource=resource, writes=(("spec", TRIGGER),),
                    governor=_GOVERNOR, relation="named", names="spec.workloads",
                    names_through="spec.resource", cluster_scoped=cluster,
                    follows=trigger_follows)
          for resource, cluster in (("resourcebindings", False),
                                    ("clusterresourcebindings", True))),
    ),
    planner=planner_side,
    webhook=webhook_side_in("spreadbus.features.workloadrebalancer.webhook"),
    validators={(GROUP, KIND): validate_offline},
    kinds={RESOURCE: KIND},
    status_history=((GROUP, RESOURCE),),
    offline_plan=offline_plan,
)
