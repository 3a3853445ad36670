"""The bindings the host holds: one per resource template a propagation policy takes, named as
Karmada names it, and every stored ResourceBinding and ClusterResourceBinding.

What a binding's schedule reads comes from two places, as in Karmada: the template gives the
replicas and the request (Karmada's detector copies them into the binding), the policy gives the
placement; the stored binding gives the earlier schedule (``spec.clusters``, the applied
placement, the rebalance trigger, the eviction tasks, ``lastScheduledTime``, the observed
affinity term). A stored binding whose template or policy is absent keeps its own replicas and
placement.

A WorkloadRebalancer naming the template delivers its trigger first, as Karmada's controller
does before the scheduler sees the binding: each of its workloads without a result sets
``rescheduleTriggeredAt`` to the rebalancer's ``creationTimestamp`` when the binding has none or
an older one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

import msgspec

from kubesemantics.karmada_binding import (
    CLUSTER_RESOURCE_BINDING,
    RESOURCE_BINDING,
    WORK_GROUP,
    binding_name,
    group_of,
    is_kind,
    is_member_object,
    matching_policy,
    policies_of,
    template_namespace,
)
from kubesemantics.lenient_json import as_int, as_map, as_str
from kubesemantics.timestamps import parse_time
from spreadbus.features.propagation.core.claim import claim_of, preserves
from spreadbus.features.propagation.core.division import Target
from spreadbus.features.propagation.core.estimator import request_list
from spreadbus.features.propagation.core.interpreter import (
    is_workload,
    replicas_of,
    request_of,
)
from spreadbus.features.propagation.core.policy import defaulted_spec

JSON = dict[str, Any]

REBALANCER_GROUP: Final = "apps.karmada.io"
REBALANCER_KIND: Final = "WorkloadRebalancer"


class Resource(msgspec.Struct, frozen=True):
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str = ""

    def to_json(self) -> JSON:
        return {"apiVersion": self.api_version, "kind": self.kind,
                "namespace": self.namespace, "name": self.name}


class HeldBinding(msgspec.Struct, frozen=True):
    """A binding as the host holds it before this round."""

    cluster_scoped: bool
    namespace: str
    name: str
    resource: Resource
    replicas: int
    workload: bool
    request: Mapping[str, int]
    placement: Mapping[str, Any]
    failover: Mapping[str, Any] | None
    template: Mapping[str, Any] | None
    clusters: tuple[Target, ...]
    annotations: Mapping[str, Any]
    reschedule_triggered_at: datetime | None
    last_scheduled_time: datetime | None
    observed_affinity: str
    eviction_tasks: tuple[Mapping[str, Any], ...]
    deleting: bool = False
    observed_current: bool = False
    """``status.schedulerObservedGeneration`` equals ``metadata.generation``."""
    health: Mapping[str, str] = {}
    """cluster -> the health ``status.aggregatedStatus`` reports for its copy."""
    claim_labels: Mapping[str, str | None] = {}
    claim_annotations: Mapping[str, str | None] = {}
    """The claim of the policy that takes the template (:mod:`.claim`); every key ``None``
    when none does."""
    preserve: bool | None = None
    """The policy's ``preserveResourcesOnDeletion`` (without a policy: the stored binding's)."""

    @property
    def key(self) -> str:
        return self.name if self.cluster_scoped else f"{self.namespace}/{self.name}"


def _targets(value: object) -> tuple[Target, ...]:
    out = []
    for entry in value if isinstance(value, list) else ():
        entry_map = as_map(entry)
        out.append(Target(as_str(entry_map.get("name")), as_int(entry_map.get("replicas")) or 0))
    return tuple(out)


def _stored(objects: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], Mapping[str, Any]]:
    found: dict[tuple[str, str], Mapping[str, Any]] = {}
    for obj in objects:
        if is_member_object(obj):
            continue
        metadata = as_map(obj.get("metadata"))
        if is_kind(obj, WORK_GROUP, RESOURCE_BINDING):
            key = (as_str(metadata.get("namespace")) or "default", as_str(metadata.get("name")))
        elif is_kind(obj, WORK_GROUP, CLUSTER_RESOURCE_BINDING):
            key = ("", as_str(metadata.get("name")))
        else:
            continue
        found.setdefault(key, obj)
    return found


def _triggers(objects: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], datetime]:
    """(namespace, binding name) -> the latest creation time of a rebalancer still to deliver
    its trigger to that binding."""
    found: dict[tuple[str, str], datetime] = {}
    for obj in objects:
        if is_member_object(obj) or not is_kind(obj, REBALANCER_GROUP, REBALANCER_KIND):
            continue
        created = parse_time(as_map(obj.get("metadata")).get("creationTimestamp"))
        if created is None:
            continue
        done = set()
        observed = as_map(obj.get("status")).get("observedWorkloads")
        for entry in observed if isinstance(observed, list) else ():
            entry_map = as_map(entry)
            if as_str(entry_map.get("result")):
                done.add(_ref(as_map(entry_map.get("workload"))))
        workloads = as_map(obj.get("spec")).get("workloads")
        for workload in workloads if isinstance(workloads, list) else ():
            ref = _ref(as_map(workload))
            if ref in done:
                continue
            key = (ref[2], binding_name(ref[1], ref[3]))
            if key not in found or found[key] < created:
                found[key] = created
    return found


def _health(status: Mapping[str, Any]) -> dict[str, str]:
    items = status.get("aggregatedStatus")
    out: dict[str, str] = {}
    for item in items if isinstance(items, list) else ():
        item_map = as_map(item)
        out.setdefault(as_str(item_map.get("clusterName")), as_str(item_map.get("health")))
    return out


def _ref(workload: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (as_str(workload.get("apiVersion")), as_str(workload.get("kind")),
            as_str(workload.get("namespace")), as_str(workload.get("name")))


def _policy_spec(policy: Mapping[str, Any]) -> JSON:
    namespace = (as_str(as_map(policy.get("metadata")).get("namespace")) or "default"
                 if as_str(policy.get("kind")) == "PropagationPolicy" else "")
    return defaulted_spec(as_map(policy.get("spec")), namespace)


def held_bindings(objects: Sequence[Mapping[str, Any]]) -> list[HeldBinding]:
    """Every binding of the host, by key."""
    host = [o for o in objects if not is_member_object(o)]
    stored = _stored(host)
    triggers = _triggers(host)
    policies = policies_of(host)
    sources: dict[tuple[str, str], tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]] = {}
    for obj in host:
        if group_of(as_str(obj.get("apiVersion"))).endswith("karmada.io"):
            continue
        policy = matching_policy(obj, policies)
        if policy is None:
            continue
        metadata = as_map(obj.get("metadata"))
        key = (template_namespace(obj), binding_name(as_str(obj.get("kind")),
                                                     as_str(metadata.get("name"))))
        sources.setdefault(key, (obj, policy))
    for key in stored:
        sources.setdefault(key, (None, None))
    out = []
    for key in sorted(sources):
        template, policy = sources[key]
        out.append(_held(key, template, policy, stored.get(key), triggers.get(key)))
    return sorted(out, key=lambda b: b.key)


def _held(key: tuple[str, str], template: Mapping[str, Any] | None,
          policy: Mapping[str, Any] | None, stored: Mapping[str, Any] | None,
          trigger: datetime | None) -> HeldBinding:
    namespace, name = key
    spec = as_map((stored or {}).get("spec"))
    status = as_map((stored or {}).get("status"))
    stored_resource = as_map(spec.get("resource"))
    if template is not None:
        metadata = as_map(template.get("metadata"))
        resource = Resource(as_str(template.get("apiVersion")), as_str(template.get("kind")),
                            namespace, as_str(metadata.get("name")),
                            as_str(metadata.get("uid")) or as_str(stored_resource.get("uid")))
        replicas = replicas_of(template)
        request = request_of(template)
        workload = is_workload(template)
    else:
        resource = Resource(as_str(stored_resource.get("apiVersion")),
                            as_str(stored_resource.get("kind")), namespace,
                            as_str(stored_resource.get("name")),
                            as_str(stored_resource.get("uid")))
        replicas = max(as_int(spec.get("replicas")) or 0, 0)
        requirements = spec.get("replicaRequirements")
        request = request_list(as_map(as_map(requirements).get("resourceRequest")))
        workload = replicas > 0 or requirements is not None
    source = _policy_spec(policy) if policy is not None else spec
    placement = dict(as_map(source.get("placement")))
    failover = source.get("failover")
    stored_trigger = parse_time(spec.get("rescheduleTriggeredAt"))
    if trigger is not None and (stored_trigger is None or stored_trigger < trigger):
        stored_trigger = trigger
    tasks = spec.get("gracefulEvictionTasks")
    labels, annotations = claim_of(policy)
    preserve = preserves(policy) if policy is not None else (
        spec.get("preserveResourcesOnDeletion")
        if isinstance(spec.get("preserveResourcesOnDeletion"), bool) else None)
    return HeldBinding(
        cluster_scoped=not namespace, namespace=namespace, name=name, resource=resource,
        replicas=replicas, workload=workload, request=request, placement=placement,
        failover=failover if isinstance(failover, Mapping) else None, template=template,
        clusters=_targets(spec.get("clusters")),
        annotations=dict(as_map(as_map((stored or {}).get("metadata")).get("annotations"))),
        reschedule_triggered_at=stored_trigger,
        last_scheduled_time=parse_time(status.get("lastScheduledTime")),
        observed_affinity=as_str(status.get("schedulerObservedAffinityName")),
        eviction_tasks=tuple(as_map(t) for t in tasks) if isinstance(tasks, list) else (),
        deleting=bool(as_map((stored or {}).get("metadata")).get("deletionTimestamp")),
        observed_current=_observed_current(stored), health=_health(status),
        claim_labels=labels, claim_annotations=annotations, preserve=preserve)


def _observed_current(stored: Mapping[str, Any] | None) -> bool:
    if stored is None:
        return False
    observed = as_int(as_map(stored.get("status")).get("schedulerObservedGeneration"))
    generation = as_int(as_map(stored.get("metadata")).get("generation"))
    return observed is not None and observed == generation
