"""PodUnavailableBudget as a feature: what the watcher, planner, webhook and CLI run of it.

The pure rules live in :mod:`.core` (model, validation, status computation, admission
decision); :mod:`.offline` answers ``spreadbus validate``, ``plan`` and ``admit``;
:mod:`.planner` is what the planner runs of it (each budget's status), :mod:`.webhook` what the
webhook runs (pod DELETE, eviction, UPDATE and CREATE, PUB validation).
"""

from __future__ import annotations

from typing import Final

from events import subjects
from spreadbus.engine.bus_access import BusAccess
from spreadbus.engine.feature import Feature
from spreadbus.engine.plan_grants import WORKLOAD_CHAIN, Governor, PlanGrant
from spreadbus.engine.side_import import webhook_side_in
from spreadbus.features.podunavailablebudget.admission.kept_pod import kept_encoded
from spreadbus.features.podunavailablebudget.audit import AUDIT
from spreadbus.features.podunavailablebudget.core.budget_ledger import BUCKET, STREAM
from spreadbus.features.podunavailablebudget.core.budget_ledger import SPEC as BUCKET_SPEC
from spreadbus.features.podunavailablebudget.core.model import (
    GROUP,
    KIND,
    NAME,
    RELATED_PUB_ANNOTATION,
)
from spreadbus.features.podunavailablebudget.offline import (
    offline_admit,
    offline_plan,
    validate_offline,
)
from spreadbus.features.podunavailablebudget.planner import planner_side
from spreadbus.features.podunavailablebudget.planning.rule import WORKLOADS, BudgetRule
from spreadbus.features.podunavailablebudget.settings import PodUnavailableBudgetSettings

_GOVERNOR: Final = Governor(group=GROUP, kind=KIND, resource="podunavailablebudgets")

FEATURE: Final = Feature(
    name=NAME,
    settings=PodUnavailableBudgetSettings,
    watches=(
        "v1/pods",
        *(f"{w.group}/{w.version}/{w.resource}".lstrip("/") for w in WORKLOADS),
        "policy.kruise.io/v1alpha1/podunavailablebudgets",
    ),
    plan_grants=(
        PlanGrant(rule=BudgetRule.name, verb="patch_status", group=GROUP,
                  resource="podunavailablebudgets", writes=(("status",),), governor=_GOVERNOR),
        # The link on pods created before their budget, and nothing else of the pod; a pod of
        # the budget: its selector matches the pod, or the pod's controller chain reaches the
        # budget's targetRef.
        PlanGrant(rule=BudgetRule.name, verb="patch", group="", resource="pods",
                  writes=(("metadata", "annotations", RELATED_PUB_ANNOTATION),),
                  governor=_GOVERNOR, relation="governed", reach="spec.targetRef",
                  selector="spec.selector", via=WORKLOAD_CHAIN),
    ),
    bus={
        # The webhook spends budgets in their bucket; the planner folds the bucket's stream. A
        # member's webhook asks the host's to spend the host's budgets (``budget.spend.<member>``
        # for a member's user, :mod:`spreadbus.runtime.member_permissions`).
        "webhook": BusAccess(buckets=(BUCKET,),
                             publish=(f"{subjects.BUDGET_SPEND}.>", f"{subjects.BUDGET_ANSWER}.>"),
                             subscribe=(f"{subjects.BUDGET_SPEND}.>",
                                        f"{subjects.BUDGET_ANSWER}.>")),
        "planner": BusAccess(reads=(STREAM,)),
    },
    buckets=(BUCKET_SPEC,),
    planner=planner_side,
    webhook=webhook_side_in("spreadbus.features.podunavailablebudget.webhook"),
    webhook_pods=kept_encoded,
    validators={(GROUP, KIND): validate_offline},
    kinds={_GOVERNOR.resource: _GOVERNOR.kind},
    status_history=((_GOVERNOR.group, _GOVERNOR.resource),),
    audit=AUDIT,
    offline_admit=offline_admit,
    offline_plan=offline_plan,
)
