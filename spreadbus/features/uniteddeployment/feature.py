"""UnitedDeployment as a feature: what the watcher, planner, actuator, webhook and CLI run of it.

The planner reconciles every UnitedDeployment into one workload per subset (created, updated and
deleted by plans), its ControllerRevisions, its pods' reservation labels and its status; the
webhook defaults and validates UnitedDeployments as Kruise's webhooks do. The actuator writes a
subset workload or a ControllerRevision only as the UD it reads asks for it
(:mod:`.core.derived_writes`).
"""

from __future__ import annotations

from typing import Final

from events.messages import Verb
from spreadbus.engine.feature import Feature
from spreadbus.engine.plan_grants import WORKLOAD_CHAIN, Follows, Governor, PlanGrant
from spreadbus.engine.side_import import webhook_side_in
from spreadbus.features.uniteddeployment.audit import AUDIT
from spreadbus.features.uniteddeployment.core.derived_writes import (
    member_identified,
    member_pod_identified,
    revision_follows,
    workload_follows,
)
from spreadbus.features.uniteddeployment.core.model import NAME
from spreadbus.features.uniteddeployment.core.reservation import RESERVED_POD_LABEL
from spreadbus.features.uniteddeployment.offline import (
    offline_plan,
    validate_offline,
    validate_offline_in_control_plane,
)
from spreadbus.features.uniteddeployment.planner import planner_side
from spreadbus.features.uniteddeployment.planning.rule import (
    HANDLED_ANNOTATION,
    UnitedDeploymentRule,
)
from spreadbus.features.uniteddeployment.settings import UnitedDeploymentSettings

_OWNER: Final = ("apps.kruise.io", "UnitedDeployment")
_GOVERNOR: Final = Governor(group=_OWNER[0], kind=_OWNER[1], resource="uniteddeployments")
_RULE: Final = UnitedDeploymentRule.name
_WORKLOAD_WRITES: Final = (("metadata", "labels"), ("metadata", "annotations"),
                           ("metadata", "ownerReferences"), ("spec",))
"""What a subset workload's update writes: the rendered labels, annotations, owners and spec."""


def _owned(group: str, resource: str, writes: tuple[tuple[str, ...], ...], *,
           follows: Follows, patch_follows: Follows | None) -> tuple[PlanGrant, ...]:
    """Create, update and delete objects of a resource that a UnitedDeployment controls; what a
    create (and, given ``patch_follows``, a patch) writes must follow from the UD as read."""
    checks: dict[Verb, Follows | None] = {"create": follows, "patch": patch_follows,
                                          "delete": None}
    return tuple(PlanGrant(rule=_RULE, verb=verb, group=group, resource=resource,
                           writes=writes if verb == "patch" else (), governor=_GOVERNOR,
                           relation="controlled", follows=check)
                 for verb, check in checks.items())


def _workloads(group: str, resource: str) -> tuple[PlanGrant, ...]:
    """A subset workload: its template, namespace, owner and replicas are the UD's; in a member
    cluster, where it names its UD in the host by labels and an annotation, only while the UD
    as the host holds it has that subset in that cluster (deleted once it has not)."""
    checks: dict[Verb, Follows | None] = {"create": workload_follows,
                                          "patch": workload_follows, "delete": None}
    elsewhere = tuple(PlanGrant(rule=_RULE, verb=verb, group=group, resource=resource,
                                writes=_WORKLOAD_WRITES if verb == "patch" else (),
                                governor=_GOVERNOR, relation="identified",
                                identifies=member_identified, follows=check)
                      for verb, check in checks.items())
    return (*_owned(group, resource, _WORKLOAD_WRITES, follows=workload_follows,
                    patch_follows=workload_follows), *elsewhere)


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
        # The cluster registries subsets' target clusters are looked up in.
        "cluster.karmada.io/v1alpha1/clusters",
        "clusterregistry.k8s.io/v1alpha1/clusters",
    ),
    planner=planner_side,
    plan_grants=(
        *_workloads("apps", "statefulsets"),
        *_workloads("apps", "deployments"),
        *_workloads("apps.kruise.io", "statefulsets"),
        *_workloads("apps.kruise.io", "clonesets"),
        # A revision records the UD's template; a rollback renumbers one, nothing else.
        *_owned("apps", "controllerrevisions", (("revision",),), follows=revision_follows,
                patch_follows=None),
        # The pods of its subset workloads: their controller chain reaches the UnitedDeployment.
        PlanGrant(rule=_RULE, verb="patch", group="", resource="pods",
                  writes=(("metadata", "labels", RESERVED_POD_LABEL),), governor=_GOVERNOR,
                  relation="governed", via=WORKLOAD_CHAIN),
        # The same on a pod of its subset in a member: selected by it, of a subset there.
        PlanGrant(rule=_RULE, verb="patch", group="", resource="pods",
                  writes=(("metadata", "labels", RESERVED_POD_LABEL),), governor=_GOVERNOR,
                  relation="identified", identifies=member_pod_identified),
        PlanGrant(rule=_RULE, verb="patch_status", group="apps.kruise.io",
                  resource="uniteddeployments", writes=(("status",),), governor=_GOVERNOR),
        PlanGrant(rule=_RULE, verb="patch", group="apps.kruise.io", resource="uniteddeployments",
                  writes=(("metadata", "annotations", HANDLED_ANNOTATION),), governor=_GOVERNOR),
        # The finalizer that holds its deletion until its workloads in members are gone.
        PlanGrant(rule=_RULE, verb="patch", group="apps.kruise.io", resource="uniteddeployments",
                  writes=(("metadata", "finalizers"),), governor=_GOVERNOR),
    ),
    webhook=webhook_side_in("spreadbus.features.uniteddeployment.webhook"),
    validators={("apps.kruise.io", "UnitedDeployment"): validate_offline},
    control_plane_validators={
        ("apps.kruise.io", "UnitedDeployment"): validate_offline_in_control_plane},
    kinds={_GOVERNOR.resource: _GOVERNOR.kind},
    status_history=((_GOVERNOR.group, _GOVERNOR.resource),),
    audit=AUDIT,
    offline_plan=offline_plan,
)
