"""What the host's binding should hold after a round, as Karmada's detector and scheduler write it.

Pure: the binding as held, the round (:mod:`.schedule`) and the time in, JSON out.

- :func:`new_binding`: the detector's binding for a template a policy took, named as Karmada
  names it, marked with the policy's claim, controlled by the template (so deleting the
  template deletes it) and holding the finalizer that keeps it until its member copies are
  gone (Karmada's binding controller holds ``karmada.io/binding-controller`` for the same
  reason; with ``preserveResourcesOnDeletion`` the copies stay and only the finalizer goes).
- :func:`spec_patch`: the template's replicas, the policy's placement, ``failover`` and
  ``preserveResourcesOnDeletion`` and its claim (:mod:`..core.claim`; the detector), then
  the round's ``spec.clusters`` and the applied-placement annotation on success (the
  scheduler), the digest of the template's content its copies must have, the graceful
  eviction tasks (the taint manager, the application failover and graceful eviction
  controllers) and the application failover's timers.
- :func:`status_patch`: once the spec holds, ``schedulerObservedGeneration`` (the generation
  this spec has), the ``Scheduled`` condition, ``lastScheduledTime`` when the round that led to
  it succeeded (:data:`SCHEDULED_AT`), the observed affinity term, ``aggregatedStatus`` and
  ``FullyApplied``. Written
  only when it differs, so a round that changes nothing writes nothing; ``lastScheduledTime`` is
  stamped once per generation, never on a round that only repeats the schedule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from kubesemantics.karmada_binding import CLUSTER_RESOURCE_BINDING, RESOURCE_BINDING, WORK_GROUP
from kubesemantics.lenient_json import as_int, as_map, as_str
from kubesemantics.timestamps import format_time
from spreadbus.features.propagation.core.bindings import HeldBinding
from spreadbus.features.propagation.core.division import Target
from spreadbus.features.propagation.core.member_copy import (
    TEMPLATE_DIGEST_ANNOTATION,
    template_digest,
)
from spreadbus.features.propagation.core.policy import APPLIED_PLACEMENT, placement_text
from spreadbus.features.propagation.planning.application_failover import UNHEALTHY_SINCE
from spreadbus.features.propagation.planning.schedule import SUCCESS_MESSAGE, Round

JSON = dict[str, Any]

FINALIZER: Final = "karmada.io/binding-controller"
SCHEDULED_AT: Final = "propagation.spreadbus.io/scheduled-at"
"""On a binding: when the scheduler wrote its ``spec.clusters``. The spec and the status are
written apart (two subresources), so the status written next carries this time as
``lastScheduledTime``."""
SCHEDULED_AFFINITY: Final = "propagation.spreadbus.io/scheduled-affinity"
"""On a binding: the ``clusterAffinities`` term the round that wrote its ``spec.clusters``
scheduled with, which the status written next carries as ``schedulerObservedAffinityName``
(the rounds in between do not schedule, so only the spec remembers it)."""
API_VERSION: Final = f"{WORK_GROUP}/v1alpha2"


def kind_of(held: HeldBinding) -> str:
    return CLUSTER_RESOURCE_BINDING if held.cluster_scoped else RESOURCE_BINDING


def _resource(held: HeldBinding) -> JSON:
    out: JSON = {"apiVersion": held.resource.api_version, "kind": held.resource.kind}
    if held.resource.namespace:
        out["namespace"] = held.resource.namespace
    out["name"] = held.resource.name
    if held.resource.uid:
        out["uid"] = held.resource.uid
    return out


def _detector(held: HeldBinding) -> JSON:
    spec: JSON = {"resource": _resource(held), "placement": dict(held.placement)}
    spec["replicas"] = held.replicas if held.workload else None
    if held.failover is not None:
        spec["failover"] = dict(held.failover)
    spec["preserveResourcesOnDeletion"] = held.preserve
    return spec


def new_binding(held: HeldBinding) -> JSON:
    template = as_map(held.template)
    metadata = as_map(template.get("metadata"))
    owner = {"apiVersion": as_str(template.get("apiVersion")), "kind": held.resource.kind,
             "name": held.resource.name, "uid": as_str(metadata.get("uid")),
             "controller": True, "blockOwnerDeletion": True}
    meta: JSON = {"name": held.name, "finalizers": [FINALIZER], "ownerReferences": [owner],
                  "annotations": {TEMPLATE_DIGEST_ANNOTATION: template_digest(
                      template, held.name, held.namespace)}}
    labels = {k: v for k, v in held.claim_labels.items() if v is not None}
    if labels:
        meta["labels"] = labels
    meta["annotations"].update(
        (k, v) for k, v in held.claim_annotations.items() if v is not None)
    if held.namespace:
        meta["namespace"] = held.namespace
    spec = {k: v for k, v in _detector(held).items() if v is not None}
    return {"apiVersion": API_VERSION, "kind": kind_of(held), "metadata": meta, "spec": spec}


def with_schedule_time(patch: JSON, now: datetime, affinity: str = "") -> JSON:
    """The spec patch of a successful round, stamped when it is written and with the term it
    scheduled with."""
    annotations = patch.setdefault("metadata", {}).setdefault("annotations", {})
    annotations[SCHEDULED_AT] = format_time(now)
    annotations[SCHEDULED_AFFINITY] = affinity or None
    return patch


def spec_patch(held: HeldBinding, evicted: Sequence[Target], round_: Round,
               tasks: Sequence[Mapping[str, Any]], unhealthy_since: str | None = None) -> JSON:
    """``unhealthy_since``: the application failover timers' annotation (None: no timer)."""
    spec = _detector(held)
    clusters = round_.clusters if round_.scheduled else tuple(evicted)
    spec["clusters"] = [{"name": t.name, "replicas": t.replicas} for t in clusters]
    spec["gracefulEvictionTasks"] = [dict(t) for t in tasks] or None
    annotations: JSON = {}
    if held.template is not None:
        annotations[TEMPLATE_DIGEST_ANNOTATION] = template_digest(held.template, held.name,
                                                                  held.namespace)
    if round_.succeeded:
        annotations[APPLIED_PLACEMENT] = placement_text(held.placement)
    annotations[UNHEALTHY_SINCE] = unhealthy_since
    annotations.update(held.claim_annotations)
    patch: JSON = {"spec": spec, "metadata": {"annotations": annotations}}
    if held.claim_labels:
        patch["metadata"]["labels"] = dict(held.claim_labels)
    return patch


def _condition(kind: str, status: bool, reason: str, message: str,
               old: Sequence[Any], now: datetime) -> JSON:
    text = "True" if status else "False"
    previous = next((as_map(c) for c in old if as_map(c).get("type") == kind), None)
    since = (as_str(previous.get("lastTransitionTime"))
             if previous is not None and previous.get("status") == text else "") or format_time(now)
    return {"type": kind, "status": text, "reason": reason, "message": message,
            "lastTransitionTime": since}


def status_patch(stored: Mapping[str, Any], round_: Round, aggregated: Sequence[JSON],
                 now: datetime) -> JSON | None:
    """The status to write on ``stored`` (whose spec holds this round's), or None."""
    metadata = as_map(stored.get("metadata"))
    generation = as_int(metadata.get("generation")) or 0
    old = as_map(stored.get("status"))
    old_conditions = old.get("conditions")
    conditions_in = old_conditions if isinstance(old_conditions, list) else []
    observed = as_int(old.get("schedulerObservedGeneration"))
    status: JSON = {"schedulerObservedGeneration": generation}
    conditions: list[JSON] = []
    annotations = as_map(metadata.get("annotations"))
    scheduled_at = as_str(annotations.get(SCHEDULED_AT))
    fresh_spec = (observed != generation and bool(scheduled_at)
                  and scheduled_at > as_str(old.get("lastScheduledTime")))
    # The spec at this generation is a successful round's, not yet in the status.
    if fresh_spec and not round_.scheduled:
        conditions.append(_condition("Scheduled", True, "Success", SUCCESS_MESSAGE,
                                     conditions_in, now))
    elif round_.scheduled:
        message = SUCCESS_MESSAGE if round_.succeeded else (round_.error or "")
        conditions.append(_condition("Scheduled", round_.succeeded, round_.reason, message,
                                     conditions_in, now))
    else:
        kept = next((as_map(c) for c in conditions_in if as_map(c).get("type") == "Scheduled"),
                    None)
        if kept is not None:
            conditions.append(dict(kept))
    targets = [as_str(as_map(t).get("name")) for t in as_map(stored.get("spec")).get(
        "clusters") or [] if isinstance(t, Mapping)]
    applied = {as_str(i.get("clusterName")) for i in aggregated if i.get("applied")}
    if targets:
        full = all(t in applied for t in targets)
        conditions.append(_condition(
            "FullyApplied", full, "FullyAppliedSuccess" if full else "FullyAppliedFailed",
            "All works have been successfully applied" if full
            else "Failed to apply all works, see status.aggregatedStatus for details",
            conditions_in, now))
    status["conditions"] = conditions
    status["aggregatedStatus"] = list(aggregated) or None
    affinity = (as_str(annotations.get(SCHEDULED_AFFINITY)) if fresh_spec and not round_.scheduled
                else round_.observed_affinity)
    status["schedulerObservedAffinityName"] = affinity or None
    if fresh_spec:
        status["lastScheduledTime"] = scheduled_at
    elif round_.succeeded and observed != generation:
        status["lastScheduledTime"] = format_time(now)  # it ran and found the spec as it wants it
    if _holds(old, status):
        return None
    return {"status": status}


def _holds(old: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    for key, value in status.items():
        if value is None:
            if key in old:
                return False
        elif old.get(key) != value:
            return False
    return True
