"""Karmada propagation as a feature: what ``spreadbus validate`` and ``spreadbus plan`` run of it.

- CLI: ``spreadbus validate`` checks PropagationPolicies, ClusterPropagationPolicies,
  ResourceBindings, ClusterResourceBindings and Clusters; ``spreadbus plan`` shows
  ``resourceBindings``, one scheduling round of every binding the host holds.
- Watcher: policies, bindings and the workload templates of
  :data:`.planning.templates.TEMPLATES`, in the host and in every member; the non-workload ones
  (ConfigMaps, ClusterRoles) only with ``--propagate-configmaps`` and
  ``--propagate-clusterroles`` (:class:`.settings.PropagationSettings`).
- Planner: :class:`~.planning.rule.PropagationRule` keeps the host's bindings (detector and
  scheduler), each member's copies, and their status in the binding and the template.
- Actuator: the host's writes a binding only as its template's (:func:`.core.binding_check.
  binding_follows`), a member's writes a copy only as the host's binding schedules it
  (:func:`.core.member_copy.follows`).
"""

from __future__ import annotations

from typing import Final

from spreadbus.engine.feature import Feature
from spreadbus.engine.plan_grants import Governor, PlanGrant
from spreadbus.features.propagation.core import claim
from spreadbus.features.propagation.core.binding_check import binding_follows
from spreadbus.features.propagation.core.member_copy import (
    TEMPLATE_DIGEST_ANNOTATION,
    follows,
    names_binding,
)
from spreadbus.features.propagation.core.model import (
    CLUSTER_GROUP,
    NAME,
    POLICY_GROUP,
    WORK_GROUP,
)
from spreadbus.features.propagation.core.policy import APPLIED_PLACEMENT
from spreadbus.features.propagation.core.stepped_replicas import STEPPED_REPLICAS
from spreadbus.features.propagation.offline import (
    offline_plan,
    validate_binding_offline,
    validate_cluster_offline,
    validate_policy_offline,
)
from spreadbus.features.propagation.planner import planner_side
from spreadbus.features.propagation.planning.application_failover import UNHEALTHY_SINCE
from spreadbus.features.propagation.planning.binding_writes import (
    SCHEDULED_AFFINITY,
    SCHEDULED_AT,
)
from spreadbus.features.propagation.planning.rule import NAME as RULE
from spreadbus.features.propagation.planning.templates import (
    CLUSTER_PROPAGATION_POLICIES,
    CLUSTER_RESOURCE_BINDINGS,
    PROPAGATION_POLICIES,
    RESOURCE_BINDINGS,
    TEMPLATES,
    TemplateKind,
    watch_of,
)
from spreadbus.features.propagation.settings import PropagationSettings

_BINDING: Final = Governor(group=RESOURCE_BINDINGS.group, kind="ResourceBinding",
                           resource=RESOURCE_BINDINGS.resource)
_HOST_BINDING: Final = Governor(group=RESOURCE_BINDINGS.group, kind="ResourceBinding",
                                resource=RESOURCE_BINDINGS.resource, in_host=True)
"""The binding as the governor of its copies in the members: read from the host."""
_CLUSTER_BINDING: Final = Governor(group=CLUSTER_RESOURCE_BINDINGS.group,
                                   kind="ClusterResourceBinding",
                                   resource=CLUSTER_RESOURCE_BINDINGS.resource, namespaced=False,
                                   in_host=True)
_OWN_CLUSTER_BINDING: Final = Governor(group=CLUSTER_RESOURCE_BINDINGS.group,
                                       kind="ClusterResourceBinding",
                                       resource=CLUSTER_RESOURCE_BINDINGS.resource,
                                       namespaced=False)
_CLAIM_WRITES: Final = (*(("metadata", "labels", k) for k in claim.LABELS),
                        *(("metadata", "annotations", k) for k in claim.ANNOTATIONS))
"""A policy's claim on a binding (:mod:`.core.claim`)."""
_COPY_WRITES: Final = (("spec",), ("data",), ("binaryData",), ("rules",), ("aggregationRule",),
                       ("metadata", "labels"), ("metadata", "annotations"))
"""What patching a member's copy may write: the template's content and its marks."""


def _grants(template: TemplateKind) -> tuple[PlanGrant, ...]:
    """The host's binding of a template of this kind, its status, and the copies in members."""
    governor = Governor(group=template.group, kind=template.kind, resource=template.resource,
                        namespaced=template.namespaced)
    bindings = RESOURCE_BINDINGS if template.namespaced else CLUSTER_RESOURCE_BINDINGS
    binding = _HOST_BINDING if template.namespaced else _CLUSTER_BINDING
    cluster = not template.namespaced  # a ClusterRole: a ClusterResourceBinding, its copies
    out = [
        PlanGrant(rule=RULE, verb="create", group=bindings.group, resource=bindings.resource,
                  governor=governor, relation="controlled", cluster_scoped=cluster,
                  follows=binding_follows),
        # A claim removed when no policy takes the template any more: marks only.
        PlanGrant(rule=RULE, verb="patch", group=bindings.group, resource=bindings.resource,
                  cluster_scoped=cluster, writes=_CLAIM_WRITES, governor=governor,
                  relation="controlled"),
        PlanGrant(rule=RULE, verb="patch", group=bindings.group, resource=bindings.resource,
                  cluster_scoped=cluster,
                  writes=(*_CLAIM_WRITES, ("spec",),
                          ("metadata", "annotations", APPLIED_PLACEMENT),
                          ("metadata", "annotations", SCHEDULED_AT),
                          ("metadata", "annotations", SCHEDULED_AFFINITY),
                          ("metadata", "annotations", UNHEALTHY_SINCE),
                          ("metadata", "annotations", STEPPED_REPLICAS),
                          ("metadata", "annotations", TEMPLATE_DIGEST_ANNOTATION)),
                  governor=governor, relation="controlled", follows=binding_follows),
        PlanGrant(rule=RULE, verb="patch_status", group=bindings.group,
                  resource=bindings.resource, writes=(("status",),), governor=governor,
                  relation="controlled", cluster_scoped=cluster),
        *(PlanGrant(rule=RULE, verb=verb, group=template.group, resource=template.resource,
                    writes=_COPY_WRITES if verb == "patch" else (), governor=binding,
                    relation="named", names="spec.resource",
                    cluster_scoped=cluster, marked=names_binding if verb != "create" else None,
                    follows=follows if verb != "delete" else None)
          for verb in ("create", "patch", "delete")),
    ]
    if template.workload and template.namespaced:  # its status: its copies' summed
        out.append(PlanGrant(rule=RULE, verb="patch_status", group=template.group,
                             resource=template.resource, writes=(("status",),),
                             governor=governor))
    return tuple(out)


FEATURE: Final = Feature(
    name=NAME,
    settings=PropagationSettings,
    watches=tuple(watch_of(r) for r in (PROPAGATION_POLICIES, CLUSTER_PROPAGATION_POLICIES,
                                        RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS))
    + tuple(t.watch for t in TEMPLATES if t.workload),
    plan_grants=(
        *(g for t in TEMPLATES for g in _grants(t)),
        # A binding being deleted lets go once its copies are gone.
        *(PlanGrant(rule=RULE, verb="patch", group=g.group, resource=g.resource,
                    writes=(("metadata", "finalizers"),), governor=g)
          for g in (_BINDING, _OWN_CLUSTER_BINDING)),
    ),
    planner=planner_side,
    kinds={RESOURCE_BINDINGS.resource: "ResourceBinding",
           CLUSTER_RESOURCE_BINDINGS.resource: "ClusterResourceBinding",
           PROPAGATION_POLICIES.resource: "PropagationPolicy",
           CLUSTER_PROPAGATION_POLICIES.resource: "ClusterPropagationPolicy"},
    validators={
        (POLICY_GROUP, "PropagationPolicy"): validate_policy_offline,
        (POLICY_GROUP, "ClusterPropagationPolicy"): validate_policy_offline,
        (WORK_GROUP, "ResourceBinding"): validate_binding_offline,
        (WORK_GROUP, "ClusterResourceBinding"): validate_binding_offline,
        (CLUSTER_GROUP, "Cluster"): validate_cluster_offline,
    },
    offline_plan=offline_plan,
)
