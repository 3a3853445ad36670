"""The WorkloadRebalancer answers of ``spreadbus validate`` and ``spreadbus plan``, offline.

``plan``: ``"workloadRebalancers": {"<name>": {"status", "delete", "requeueAt"?}}`` for every
WorkloadRebalancer in the input, after one reconcile at ``--now``. An entry is ``Successful``
when the named object is in the input and a placement governs it (it is a UnitedDeployment, or a
WorkloadSpread of the input targets it), or when Karmada would hold a binding for it (one of
the input, or one a propagation policy of the input makes for a template of the input, found by
Karmada's binding name: :mod:`kubesemantics.karmada_binding`), else
``Failed``/``ReferencedBindingNotFound``. Offline
there is no governing feature to deliver the request to, so a governed entry succeeds in this
one pass; the planner marks it once the governing object carries the request. ``delete`` and
``requeueAt`` read the TTL from the ``finishTime`` of this very plan. Without any
WorkloadRebalancer in the input the key is left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from kubesemantics.group_version import api_group
from kubesemantics.karmada_binding import binding_exists, binding_name
from kubesemantics.lenient_json import as_map, as_str
from spreadbus.clusterregistry.registry import host_objects
from spreadbus.engine.feature import OfflinePlan, OfflineValidation
from spreadbus.features.workloadrebalancer.core.model import (
    WorkloadRef,
    format_time,
    from_object,
    is_workloadrebalancer,
)
from spreadbus.features.workloadrebalancer.core.placement import (
    KRUISE_GROUP,
    WORKLOAD_SPREAD,
    governing,
)
from spreadbus.features.workloadrebalancer.core.status import Placement, sync
from spreadbus.features.workloadrebalancer.core.validation import validate_workloadrebalancer

JSON = dict[str, Any]


def validate_offline(obj: JSON, *, old: JSON | None,
                     context: Sequence[JSON]) -> OfflineValidation:
    return OfflineValidation(errors=validate_workloadrebalancer(obj))


def _named(objects: Sequence[JSON], ref: WorkloadRef) -> JSON | None:
    group = api_group(ref.api_version)
    for obj in objects:
        metadata = as_map(obj.get("metadata"))
        if (obj.get("kind") == ref.kind and as_str(metadata.get("name")) == ref.name
                and api_group(as_str(obj.get("apiVersion"))) == group
                and (as_str(metadata.get("namespace")) or "default") == ref.namespace):
            return obj
    return None


def _is_spread(obj: Mapping[str, Any]) -> bool:
    return (obj.get("kind") == WORKLOAD_SPREAD
            and api_group(as_str(obj.get("apiVersion"))) == KRUISE_GROUP)


def offline_plan(objects: Sequence[JSON], now: datetime) -> OfflinePlan:
    objects = host_objects(objects)  # a member's workloads are not the host's
    spreads = [o for o in objects if _is_spread(o)]
    rebalancers = sorted((from_object(o) for o in objects if is_workloadrebalancer(o)),
                         key=lambda wr: wr.name)

    def resolve(ref: WorkloadRef) -> Placement | None:
        placement = governing(ref, _named(objects, ref), spreads, lambda _: True)
        if placement is None and binding_exists(objects, ref.kind, ref.name, ref.namespace):
            return Placement(kind="ResourceBinding" if ref.namespace else
                             "ClusterResourceBinding", namespace=ref.namespace,
                             name=binding_name(ref.kind, ref.name), delivered=True)
        return placement

    answer: dict[str, Any] = {}
    lines: list[str] = []
    for wr in rebalancers:
        outcome = sync(wr, resolve, now)
        entry: dict[str, Any] = {"status": outcome.status.to_json(), "delete": outcome.delete}
        if outcome.requeue_at is not None:
            entry["requeueAt"] = format_time(outcome.requeue_at)
        answer[wr.name] = entry
        lines.append(f"WorkloadRebalancer {wr.name}")
        for observed in outcome.status.observed_workloads:
            result = observed.result or "pending"
            reason = f" ({observed.reason})" if observed.reason else ""
            lines.append(f"  {observed.workload.describe()}: {result}{reason}")
        if outcome.delete:
            lines.append("  delete: TTL expired")
        elif outcome.requeue_at is not None:
            lines.append(f"  delete at {format_time(outcome.requeue_at)}")
    return OfflinePlan(answer={"workloadRebalancers": answer} if rebalancers else {},
                       lines=lines)
