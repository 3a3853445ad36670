"""WorkloadSpread as a feature: what the watcher, planner, actuator, webhook and CLI run of it.

- Planner (:mod:`.planner`): status, deletion costs, Adaptive evictions, matched annotations,
  rebalancing on request, with the reservation bucket's stream folded beside the projection.
- Webhook (:mod:`.webhook`): pod CREATE steered into a subset, pod DELETE recording the freed
  slot, WorkloadSpreads validated and converted between API versions.

Its settings are :class:`~.settings.WorkloadSpreadSettings`: the whitelist (watcher, planner,
webhook), the Adaptive recovery, the planning interval and the rebalance limit (planner), the
reservation deadline (webhook).
"""

from __future__ import annotations

from typing import Final

from events import subjects
from events.messages import Verb
from spreadbus.engine.bus_access import BusAccess
from spreadbus.engine.feature import Feature
from spreadbus.engine.plan_grants import Governor, Kind, PlanGrant
from spreadbus.engine.side_import import webhook_side_in
from spreadbus.features.workloadspread.admission.kept_pod import KeptPod
from spreadbus.features.workloadspread.admission.spread_hints import HINTS_PREFIX
from spreadbus.features.workloadspread.audit import AUDIT
from spreadbus.features.workloadspread.core.model import NAME
from spreadbus.features.workloadspread.core.rebalance import HANDLED_ANNOTATION
from spreadbus.features.workloadspread.core.reservation_contract import (
    BUCKET as RESERVATIONS_BUCKET,
)
from spreadbus.features.workloadspread.core.reservation_contract import (
    SPEC as RESERVATIONS_SPEC,
)
from spreadbus.features.workloadspread.core.reservation_contract import (
    STREAM as RESERVATIONS_STREAM,
)
from spreadbus.features.workloadspread.core.workload_kinds import workload_kinds
from spreadbus.features.workloadspread.offline import (
    offline_admit,
    offline_plan,
    validate_offline,
)
from spreadbus.features.workloadspread.planner import planner_side
from spreadbus.features.workloadspread.planning.rule import WorkloadSpreadRule
from spreadbus.features.workloadspread.settings import WorkloadSpreadSettings

_GOVERNOR: Final = Governor(group="apps.kruise.io", kind="WorkloadSpread",
                            resource="workloadspreads")


def _itself(verb: Verb, writes: tuple[tuple[str, ...], ...]) -> PlanGrant:
    """A write of the WorkloadSpread the plan is for."""
    return PlanGrant(rule=WorkloadSpreadRule.name, verb=verb, group=_GOVERNOR.group,
                     resource=_GOVERNOR.resource, writes=writes, governor=_GOVERNOR)


def _its_pods(verb: Verb, writes: tuple[tuple[str, ...], ...] = ()) -> PlanGrant:
    """A plan on a pod whose controller chain reaches the workload the WorkloadSpread targets
    (a Deployment's through its ReplicaSet), whatever its annotations say: an unsteered pod has
    none."""
    return PlanGrant(rule=WorkloadSpreadRule.name, verb=verb, group="", resource="pods",
                     writes=writes, governor=_GOVERNOR, relation="governed",
                     reach="spec.targetRef", via=(Kind("apps", "ReplicaSet", "replicasets"),))


FEATURE: Final = Feature(
    name=NAME,
    settings=WorkloadSpreadSettings,
    watches=(
        "v1/pods",
        "v1/nodes",
        *workload_kinds().resources(),
        "apps/v1/controllerrevisions",
        "apps.kruise.io/v1alpha1/workloadspreads",
        "policy/v1/poddisruptionbudgets",  # rebalancing stays within disruption budgets
        "policy.kruise.io/v1alpha1/podunavailablebudgets",
    ),
    plan_grants=(
        # Deletion cost, matched annotation, the subset's labels and annotations: metadata only.
        _its_pods("patch", (("metadata", "annotations", "*"), ("metadata", "labels", "*"))),
        _itself("patch_status", (("status",),)),
        # Adaptive rescheduling, rebalancing, unsteered pods put right.
        _its_pods("evict"),
        _itself("patch", (("metadata", "annotations", HANDLED_ANNOTATION),)),
    ),
    bus={
        # Reservations in their bucket, announced admissions, hints between replicas.
        "webhook": BusAccess(publish=(f"{subjects.ADMISSIONS}.>", f"{HINTS_PREFIX}.>"),
                             subscribe=(f"{HINTS_PREFIX}.>",), buckets=(RESERVATIONS_BUCKET,)),
        "planner": BusAccess(reads=(RESERVATIONS_STREAM,)),
    },
    buckets=(RESERVATIONS_SPEC,),
    planner=planner_side,
    webhook=webhook_side_in("spreadbus.features.workloadspread.webhook"),
    webhook_pods=KeptPod.of,
    validators={("apps.kruise.io", "WorkloadSpread"): validate_offline},
    kinds={_GOVERNOR.resource: _GOVERNOR.kind},
    status_history=((_GOVERNOR.group, _GOVERNOR.resource),),
    audit=AUDIT,
    offline_admit=offline_admit,
    offline_plan=offline_plan,
)
